package metrics

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
)

// The link between gotrace, which holds the maps, and its metrics server
// process (cmd/gotrace-metrics), which holds the network: an HTTP server,
// crypto/tls and the web configuration's YAML would otherwise initialise
// at every gotrace start (issue 24). They talk over a Unix socket pair,
// in lines:
//
//	server to gotrace, once, at start: "serving ADDR", or
//	  "listen MESSAGE" or "config MESSAGE" when it cannot serve;
//	server to gotrace, per scrape: "scrape ACCEPT" (the Accept header);
//	gotrace to server: "LENGTH CONTENT-TYPE", then LENGTH bytes of body.

// maxLinkLine bounds a line of the link: an Accept header longer than this
// is not one a scraper sends.
const maxLinkLine = 64 << 10

// maxBody bounds a scrape's body as the server reads it, so that a broken
// link cannot make it allocate without end.
const maxBody = 1 << 30

// The reasons a metrics server gives for not serving.
var (
	// ErrListen: the address cannot be listened on.
	ErrListen = errors.New("listen")
	// ErrWebConfig: the web configuration file is not valid.
	ErrWebConfig = errors.New("web configuration")
)

// Refusal is why a metrics server does not serve: its Reason is ErrListen
// or ErrWebConfig, Err what went wrong, which is all its text says.
type Refusal struct {
	Reason error
	Err    error
}

func (r *Refusal) Error() string   { return r.Err.Error() }
func (r *Refusal) Unwrap() []error { return []error{r.Reason, r.Err} }

// statusWords are the first words of the server's status line for each
// reason it cannot serve.
var statusWords = map[string]error{"listen": ErrListen, "config": ErrWebConfig}

// readLine reads one line of the link without its newline.
func readLine(r *bufio.Reader) (string, error) {
	line, err := r.ReadSlice('\n')
	switch {
	case errors.Is(err, bufio.ErrBufferFull):
		return "", fmt.Errorf("read metrics link: a line longer than %d bytes", maxLinkLine)
	case err == io.EOF && len(line) == 0:
		return "", io.EOF
	case err != nil:
		return "", fmt.Errorf("read metrics link: %w", err)
	}
	return strings.TrimSuffix(string(line), "\n"), nil
}

// oneLine makes s fit on one line of the link.
func oneLine(s string) string {
	return strings.NewReplacer("\r", " ", "\n", " ").Replace(s)
}

// Link is gotrace's end of the link to its metrics server.
type Link struct {
	r *bufio.Reader
	w io.Writer
}

// NewLink returns gotrace's end of the link on conn.
func NewLink(conn io.ReadWriter) *Link {
	return &Link{r: bufio.NewReaderSize(conn, maxLinkLine), w: conn}
}

// Status reads the server's status line: the address it serves on, or
// why it cannot serve, a *Refusal.
func (l *Link) Status() (addr string, err error) {
	line, err := readLine(l.r)
	if err != nil {
		return "", fmt.Errorf("read metrics server status: %w", err)
	}
	word, rest, _ := strings.Cut(line, " ")
	if word == "serving" {
		return rest, nil
	}
	if reason, ok := statusWords[word]; ok {
		return "", &Refusal{Reason: reason, Err: errors.New(rest)}
	}
	return "", fmt.Errorf("read metrics server status: unexpected %q", line)
}

// Serve answers the server's scrapes with c's maps until the link closes,
// which is no error.
func (l *Link) Serve(c *Collector) error {
	for {
		line, err := readLine(l.r)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		accept, ok := strings.CutPrefix(line, "scrape ")
		if !ok && line != "scrape" {
			return fmt.Errorf("read metrics link: unexpected %q", line)
		}
		contentType, body := c.Scrape(accept)
		if _, err := fmt.Fprintf(l.w, "%d %s\n%s", len(body), contentType, body); err != nil {
			return fmt.Errorf("answer scrape: %w", err)
		}
	}
}

// ServerLink is the metrics server's end of the link. Its scrapes take
// turns: one at a time is on the link.
type ServerLink struct {
	mu sync.Mutex
	r  *bufio.Reader
	w  io.Writer
}

// NewServerLink returns the server's end of the link on conn.
func NewServerLink(conn io.ReadWriter) *ServerLink {
	return &ServerLink{r: bufio.NewReaderSize(conn, maxLinkLine), w: conn}
}

// Ready tells gotrace that the server serves on addr.
func (l *ServerLink) Ready(addr string) error {
	return l.status("serving " + addr)
}

// Refuse tells gotrace why the server cannot serve.
func (l *ServerLink) Refuse(r *Refusal) error {
	for word, reason := range statusWords {
		if reason == r.Reason {
			return l.status(word + " " + oneLine(r.Err.Error()))
		}
	}
	return fmt.Errorf("refuse to serve: unknown reason %v", r.Reason)
}

func (l *ServerLink) status(line string) error {
	if _, err := io.WriteString(l.w, line+"\n"); err != nil {
		return fmt.Errorf("write metrics server status: %w", err)
	}
	return nil
}

// Scrape asks gotrace for the maps in the format accept (an Accept header)
// prefers, and returns the body and its content type.
func (l *ServerLink) Scrape(accept string) (contentType string, body []byte, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, err := io.WriteString(l.w, "scrape "+oneLine(accept)+"\n"); err != nil {
		return "", nil, fmt.Errorf("ask gotrace for a scrape: %w", err)
	}
	line, err := readLine(l.r)
	if err == io.EOF {
		return "", nil, fmt.Errorf("read scrape: %w", io.ErrUnexpectedEOF)
	}
	if err != nil {
		return "", nil, err
	}
	size, contentType, _ := strings.Cut(line, " ")
	n, err := strconv.Atoi(size)
	if err != nil || n < 0 || n > maxBody {
		return "", nil, fmt.Errorf("read scrape: bad header %q", line)
	}
	body = make([]byte, n)
	if _, err := io.ReadFull(l.r, body); err != nil {
		return "", nil, fmt.Errorf("read scrape: %w", err)
	}
	return contentType, body, nil
}
