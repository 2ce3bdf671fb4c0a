// Package testcert makes TLS certificates and web configuration files for
// tests of --metrics: a certificate authority of its own and a server
// certificate it signs for the loopback addresses, written as PEM files
// into a test's directory, and exporter-toolkit configuration files that
// use them.
package testcert

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
)

// Files are the PEM files of one certificate authority and the server
// certificate it signed.
type Files struct {
	CA, Cert, Key string
}

// Write makes a new certificate authority named name and a server
// certificate it signs for localhost, 127.0.0.1 and ::1, and writes them
// into dir as name-ca.pem, name-cert.pem and name-key.pem.
func Write(t testing.TB, dir, name string) Files {
	t.Helper()
	caKey := newKey(t)
	caTemplate := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name + " test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		KeyUsage:              x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
	}
	caDER, ca := sign(t, caTemplate, caTemplate, &caKey.PublicKey, caKey)
	key := newKey(t)
	der, _ := sign(t, &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "localhost"},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}, ca, &key.PublicKey, caKey)
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatalf("marshal server key: %v", err)
	}
	f := Files{
		CA:   filepath.Join(dir, name+"-ca.pem"),
		Cert: filepath.Join(dir, name+"-cert.pem"),
		Key:  filepath.Join(dir, name+"-key.pem"),
	}
	writePEM(t, f.CA, "CERTIFICATE", caDER)
	writePEM(t, f.Cert, "CERTIFICATE", der)
	writePEM(t, f.Key, "PRIVATE KEY", keyDER)
	return f
}

// Pool returns a pool holding the certificate authority of f.
func (f Files) Pool(t testing.TB) *x509.CertPool {
	t.Helper()
	b, err := os.ReadFile(f.CA)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		t.Fatalf("no certificate in %s", f.CA)
	}
	return pool
}

// sign makes the certificate template for pub, signed by parent's key
// priv, and returns it as DER and parsed.
func sign(t testing.TB, template, parent *x509.Certificate, pub *ecdsa.PublicKey, priv *ecdsa.PrivateKey) ([]byte, *x509.Certificate) {
	t.Helper()
	der, err := x509.CreateCertificate(rand.Reader, template, parent, pub, priv)
	if err != nil {
		t.Fatalf("create certificate %s: %v", template.Subject.CommonName, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatalf("parse certificate %s: %v", template.Subject.CommonName, err)
	}
	return der, cert
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatalf("generate key: %v", err)
	}
	return key
}

func writePEM(t testing.TB, path, kind string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// WriteWebConfig writes a Prometheus web configuration file (the format
// of exporter-toolkit's --web.config.file) to path: TLS with the
// certificate and key of tls when it is not nil, and basic auth for
// users (name to password, stored bcrypt-hashed) when there are any.
func WriteWebConfig(t testing.TB, path string, tls *Files, users map[string]string) {
	t.Helper()
	var b strings.Builder
	if tls != nil {
		fmt.Fprintf(&b, "tls_server_config:\n  cert_file: %s\n  key_file: %s\n", tls.Cert, tls.Key)
	}
	if len(users) > 0 {
		b.WriteString("basic_auth_users:\n")
		for name, password := range users {
			// The lowest cost: the hash is checked at each scrape.
			hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.MinCost)
			if err != nil {
				t.Fatalf("hash password: %v", err)
			}
			fmt.Fprintf(&b, "  %s: %s\n", name, hash)
		}
	}
	// Written aside and renamed, so that a server reading it at each
	// request never sees half a file.
	tmp := path + ".new"
	if err := os.WriteFile(tmp, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}
