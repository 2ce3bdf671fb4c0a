package metrics

import (
	"errors"
	"net"
	"strings"
	"testing"

	"github.com/gotrace/gotrace/runtime/output"
)

// linkPair returns both ends of a link over an in-memory connection.
func linkPair(t *testing.T) (*Link, *ServerLink) {
	t.Helper()
	a, b := net.Pipe()
	t.Cleanup(func() { a.Close(); b.Close() })
	return NewLink(a), NewServerLink(b)
}

// TestLinkScrape serves scrapes over the link in the format each Accept
// header asks for, then ends when the server's end closes.
func TestLinkScrape(t *testing.T) {
	ours, theirs := linkPair(t)
	c := NewCollector(Config{})
	c.SetSource(func() ([]*output.Map, error) { return mapsByKind["count"], nil })
	go func() { theirs.Ready("127.0.0.1:9435") }()
	if addr, err := ours.Status(); err != nil || addr != "127.0.0.1:9435" {
		t.Fatalf("Status() = %q, %v", addr, err)
	}
	served := make(chan error, 1)
	go func() { served <- ours.Serve(c) }()
	for _, tc := range []struct{ accept, wantType, wantLine string }{
		{"", textFormat.contentType, "gotrace_msgs_total{key=\"ping\"} 12\n"},
		{"application/openmetrics-text;version=1.0.0", openMetricsFormat.contentType, "# EOF\n"},
		// A header cut across lines cannot break the link's framing.
		{"text/plain\r\nX: y", textFormat.contentType, "# TYPE gotrace_msgs_total counter\n"},
	} {
		contentType, body, err := theirs.Scrape(tc.accept)
		if err != nil {
			t.Fatalf("Scrape(%q): %v", tc.accept, err)
		}
		if contentType != tc.wantType || !strings.Contains(string(body), tc.wantLine) {
			t.Errorf("Scrape(%q) = %q,\n%s\nwant %q with %q", tc.accept, contentType, body, tc.wantType, tc.wantLine)
		}
	}
	theirs.w.(net.Conn).Close()
	if err := <-served; err != nil {
		t.Errorf("Serve after the server closed: %v", err)
	}
}

// TestLinkRefusal carries each reason a server gives for not serving.
func TestLinkRefusal(t *testing.T) {
	for _, reason := range []error{ErrListen, ErrWebConfig} {
		ours, theirs := linkPair(t)
		go func() {
			theirs.Refuse(&Refusal{Reason: reason, Err: errors.New("line 3: field x not found\nin type web.Config")})
		}()
		_, err := ours.Status()
		if !errors.Is(err, reason) || err.Error() != "line 3: field x not found in type web.Config" {
			t.Errorf("Status() = %v, want %v with the message on one line", err, reason)
		}
	}
}

// TestLinkBroken: a server that sends what the link does not carry, or
// goes away, is an error, never a hang or a silent empty scrape.
func TestLinkBroken(t *testing.T) {
	ours, theirs := linkPair(t)
	go func() { theirs.status("hello") }()
	if _, err := ours.Status(); err == nil || !strings.Contains(err.Error(), `unexpected "hello"`) {
		t.Errorf("Status() of a bad line: %v", err)
	}
	go func() { theirs.status(strings.Repeat("x", maxLinkLine+1)) }()
	if _, err := ours.Status(); err == nil || !strings.Contains(err.Error(), "longer than") {
		t.Errorf("Status() of a long line: %v", err)
	}
	ours2, theirs2 := linkPair(t)
	ours2.w.(net.Conn).Close()
	if _, _, err := theirs2.Scrape(""); err == nil {
		t.Error("Scrape on a closed link succeeded")
	}
}
