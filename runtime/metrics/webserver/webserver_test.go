package webserver

import (
	"bytes"
	"compress/gzip"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gotrace/gotrace/codegen/layout"
	"github.com/gotrace/gotrace/internal/testcert"
	"github.com/gotrace/gotrace/runtime/metrics"
	"github.com/gotrace/gotrace/runtime/output"
)

// serve starts a server with the web configuration file webConfig that
// gets its scrapes over a link from a collector of one count map, and
// returns its address.
func serve(t *testing.T, webConfig string) string {
	t.Helper()
	var warnings bytes.Buffer
	srv, err := Listen("127.0.0.1:0", webConfig, &warnings)
	if err != nil {
		t.Fatal(err)
	}
	ours, theirs := net.Pipe()
	c := metrics.NewCollector(metrics.Config{})
	c.SetSource(func() ([]*output.Map, error) {
		return []*output.Map{{Name: "@msgs", Kind: layout.MapCount, Entries: []output.Entry{
			{Key: []output.Value{{Kind: output.ValueString, Str: "ping"}}, Value: output.Uint(12)},
		}}}, nil
	})
	go metrics.NewLink(ours).Serve(c)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(metrics.NewServerLink(theirs)) }()
	t.Cleanup(func() {
		srv.Close()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
		ours.Close()
		theirs.Close()
		if warnings.Len() > 0 {
			t.Logf("warnings:\n%s", warnings.String())
		}
	})
	return srv.Addr().String()
}

// get requests url with the headers given and returns the status and the
// body (gunzipped when it came so).
func get(t *testing.T, client *http.Client, url string, header http.Header) (*http.Response, string, error) {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header = header
	resp, err := client.Do(req)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	var body io.Reader = resp.Body
	if resp.Header.Get("Content-Encoding") == "gzip" {
		if body, err = gzip.NewReader(resp.Body); err != nil {
			t.Fatal(err)
		}
	}
	b, err := io.ReadAll(body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b), nil
}

// TestServeFormats serves each format, plain and gzipped, over plain
// HTTP (no web configuration file), and only at /metrics.
func TestServeFormats(t *testing.T) {
	addr := serve(t, "")
	for _, tc := range []struct {
		accept, encoding string
		wantType         string
		wantLine         string
	}{
		{"", "", "text/plain; version=0.0.4; charset=utf-8", "gotrace_msgs_total{key=\"ping\"} 12\n"},
		{"application/openmetrics-text;version=1.0.0", "", "application/openmetrics-text; version=1.0.0; charset=utf-8", "gotrace_msgs_total{key=\"ping\"} 12.0\n# EOF\n"},
		{"application/openmetrics-text;version=1.0.0", "gzip", "application/openmetrics-text; version=1.0.0; charset=utf-8", "# TYPE gotrace_msgs counter\n"},
		{"", "gzip", "text/plain; version=0.0.4; charset=utf-8", "# TYPE gotrace_msgs_total counter\n"},
	} {
		// Accept-Encoding set by hand: the transport then leaves the
		// body compressed.
		header := http.Header{"Accept": {tc.accept}}
		if tc.encoding != "" {
			header.Set("Accept-Encoding", tc.encoding)
		}
		resp, body, err := get(t, http.DefaultClient, "http://"+addr+"/metrics", header)
		if err != nil {
			t.Fatal(err)
		}
		if got := resp.Header.Get("Content-Type"); got != tc.wantType {
			t.Errorf("Accept %q: Content-Type %q, want %q", tc.accept, got, tc.wantType)
		}
		if tc.encoding == "gzip" && resp.Header.Get("Content-Encoding") != "gzip" {
			t.Errorf("Accept-Encoding gzip: Content-Encoding %q", resp.Header.Get("Content-Encoding"))
		}
		if !strings.Contains(body, tc.wantLine) {
			t.Errorf("Accept %q, encoding %q: no %q in\n%s", tc.accept, tc.encoding, tc.wantLine, body)
		}
	}
	for path, want := range map[string]int{"/": http.StatusNotFound, "/metrics/x": http.StatusNotFound} {
		resp, _, err := get(t, http.DefaultClient, "http://"+addr+path, nil)
		if err != nil || resp.StatusCode != want {
			t.Errorf("GET %s: %v %v, want %d", path, resp, err, want)
		}
	}
}

// TestListenRefusals: an address that cannot be listened on and a web
// configuration file exporter-toolkit refuses are refusals that say which
// and why.
func TestListenRefusals(t *testing.T) {
	dir := t.TempDir()
	certs := testcert.Write(t, dir, "server")
	inUse, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer inUse.Close()
	write := func(name, text string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	for _, tc := range []struct {
		name, addr, webConfig string
		reason                error
		want                  string
	}{
		{"address in use", inUse.Addr().String(), "", metrics.ErrListen, "address already in use"},
		{"no such file", "127.0.0.1:0", filepath.Join(dir, "missing.yml"), metrics.ErrWebConfig, "no such file or directory"},
		{"unknown field", "127.0.0.1:0", write("field.yml", "tls_server_config:\n  cert_file: x\n  nope: 1\n"), metrics.ErrWebConfig, "line 3: field nope not found"},
		{"not YAML", "127.0.0.1:0", write("syntax.yml", "basic_auth_users: [\n"), metrics.ErrWebConfig, "yaml:"},
		{"key missing", "127.0.0.1:0", write("nokey.yml", "tls_server_config:\n  cert_file: "+certs.Cert+"\n"), metrics.ErrWebConfig, "missing one of key or key_file"},
		{"certificate missing", "127.0.0.1:0", write("nocert.yml", "tls_server_config:\n  cert_file: /nonexistent.pem\n  key_file: "+certs.Key+"\n"), metrics.ErrWebConfig, "/nonexistent.pem"},
		{"password not hashed", "127.0.0.1:0", write("plain.yml", "basic_auth_users:\n  prom: secret\n"), metrics.ErrWebConfig, "hash"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, err := Listen(tc.addr, tc.webConfig, io.Discard)
			if err == nil {
				srv.Close()
				t.Fatal("Listen succeeded")
			}
			if !errors.Is(err, tc.reason) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Listen: %v, want %v saying %q", err, tc.reason, tc.want)
			}
		})
	}
}

// TestTLSBasicAuth serves over TLS with a password and refuses a scrape
// without it, with a wrong one, over plain HTTP, and from a client that
// does not trust the certificate. The configuration file is read again at
// each request and each handshake: a new password and a renewed
// certificate take effect without a restart.
func TestTLSBasicAuth(t *testing.T) {
	dir := t.TempDir()
	certs := testcert.Write(t, dir, "first")
	webConfig := filepath.Join(dir, "web.yml")
	testcert.WriteWebConfig(t, webConfig, &certs, map[string]string{"prom": "old secret"})
	addr := serve(t, webConfig)
	url := "https://" + addr + "/metrics"
	client := func(f testcert.Files) *http.Client {
		// A new connection, so a new handshake, for every request.
		return &http.Client{Transport: &http.Transport{DisableKeepAlives: true, TLSClientConfig: &tls.Config{RootCAs: f.Pool(t)}}}
	}
	status := func(c *http.Client, user, password string) int {
		t.Helper()
		header := http.Header{}
		if user != "" {
			req, _ := http.NewRequest("GET", url, nil)
			req.SetBasicAuth(user, password)
			header = req.Header
		}
		resp, body, err := get(t, c, url, header)
		if err != nil {
			t.Fatalf("GET %s as %q: %v", url, user, err)
		}
		if resp.StatusCode == http.StatusOK && !strings.Contains(body, "gotrace_msgs_total") {
			t.Errorf("GET as %q: 200 without the metrics:\n%s", user, body)
		}
		return resp.StatusCode
	}
	first := client(certs)
	for _, tc := range []struct {
		user, password string
		want           int
	}{
		{"prom", "old secret", http.StatusOK},
		{"", "", http.StatusUnauthorized},
		{"prom", "wrong", http.StatusUnauthorized},
		{"other", "old secret", http.StatusUnauthorized},
	} {
		if got := status(first, tc.user, tc.password); got != tc.want {
			t.Errorf("user %q password %q: status %d, want %d", tc.user, tc.password, got, tc.want)
		}
	}
	resp, body, err := get(t, http.DefaultClient, "http://"+addr+"/metrics", nil)
	if err != nil || resp.StatusCode != http.StatusBadRequest || strings.Contains(body, "gotrace_") {
		t.Errorf("plain HTTP to the TLS server: %v %v\n%s", resp, err, body)
	}
	var unknown x509.UnknownAuthorityError
	if _, _, err := get(t, &http.Client{}, url, nil); !errors.As(err, &unknown) {
		t.Errorf("a client that does not trust the certificate: %v, want an unknown authority", err)
	}

	testcert.WriteWebConfig(t, webConfig, &certs, map[string]string{"prom": "new secret"})
	if got := status(first, "prom", "old secret"); got != http.StatusUnauthorized {
		t.Errorf("the old password after the file changed: status %d, want 401", got)
	}
	if got := status(first, "prom", "new secret"); got != http.StatusOK {
		t.Errorf("the new password after the file changed: status %d, want 200", got)
	}

	renewed := testcert.Write(t, dir, "second")
	testcert.WriteWebConfig(t, webConfig, &renewed, map[string]string{"prom": "new secret"})
	if _, _, err := get(t, first, url, nil); !errors.As(err, &unknown) {
		t.Errorf("the first authority after the certificate changed: %v, want an unknown authority", err)
	}
	if got := status(client(renewed), "prom", "new secret"); got != http.StatusOK {
		t.Errorf("the renewed certificate: status %d, want 200", got)
	}
}
