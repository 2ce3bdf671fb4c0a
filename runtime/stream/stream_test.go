package stream

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

// TestCheck: each bad flag value is refused with the flag's name.
func TestCheck(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "seed")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want string // "" for a good Config
	}{
		{"good", func(*Config) {}, ""},
		{"two servers", func(c *Config) { c.URL = "nats://a:4222, tls://b:4222" }, ""},
		{"no URL", func(c *Config) { c.URL = "" }, "--nats: no server URL"},
		{"scheme", func(c *Config) { c.URL = "http://a:4222" }, `--nats: parse URL "http://a:4222": scheme "http"`},
		{"no host", func(c *Config) { c.URL = "nats://" }, "--nats: parse URL \"nats://\": no host"},
		{"unparsable", func(c *Config) { c.URL = "nats://a:b:c" }, "--nats: parse URL"},
		{"wildcard subject", func(c *Config) { c.Subject = "a.>" }, "--nats-subject: \"a.>\" is not a subject prefix"},
		{"empty token", func(c *Config) { c.Subject = "a..b" }, "--nats-subject"},
		{"dotted stream", func(c *Config) { c.Stream = "A.B" }, "--nats-stream: \"A.B\" is not a stream name"},
		{"missing creds", func(c *Config) { c.Creds = filepath.Join(dir, "none") }, "--nats-creds: read file: stat "},
		{"nkey", func(c *Config) { c.NKey = file }, ""},
		{"cert without key", func(c *Config) { c.Cert = file }, "--nats-tls-cert: --nats-tls-cert and --nats-tls-key go together"},
		{"negative spool", func(c *Config) { c.SpoolMax = -1 }, "--nats-spool-max: -1 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Config{URL: "nats://127.0.0.1:4222"}
			c.Defaults()
			tc.edit(&c)
			err := c.Check()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.want)):
				t.Errorf("error %v, want it to start %q", err, tc.want)
			}
		})
	}
}

// TestArgs: the helper's flags, parsed as gotrace-nats parses them, give
// back the Config gotrace had.
func TestArgs(t *testing.T) {
	want := Config{URL: "nats://a:1", Subject: "s.t", Stream: "S", Host: "h", Creds: "/c", NKey: "/n",
		CA: "/ca", Cert: "/cert", Key: "/key", SpoolDir: "/spool", SpoolMax: 77, Drain: 3 * time.Second}
	var got Config
	fs := pflag.NewFlagSet("helper", pflag.ContinueOnError)
	AddFlags(fs, &got, true)
	fs.StringVar(&got.Version, "nats-version", "", "")
	if err := fs.Parse(want.Args()); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("parsed %+v\nwant %+v", got, want)
	}
}

// TestSubjectToken: names become one token of a subject.
func TestSubjectToken(t *testing.T) {
	for in, want := range map[string]string{
		"node1": "node1", "a.b": "a_b", "x y": "x_y", "*": "_", ">": "_", "": "_", "ünï": "ünï",
	} {
		if got := SubjectToken(in); got != want {
			t.Errorf("SubjectToken(%q) = %q, want %q", in, got, want)
		}
	}
}
