package metrics

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The server speaks just enough HTTP/1.1 for a scraper: one request per
// connection (answered with Connection: close), GET or HEAD of /metrics.
// It does not use net/http, whose initialisers and those of the TLS and
// certificate packages it links (about 40 of them) cost every gotrace
// start about 1.5 ms and 1 MiB, though only --metrics serves anything
// (issue 24).

// Limits on a request, so that a client cannot hold a connection or
// memory: the time to send its request and to take the answer, and the
// size of its request line and headers.
const (
	requestTimeout  = 10 * time.Second
	responseTimeout = time.Minute
	maxRequestBytes = 64 << 10
)

// Server serves /metrics on an address.
type Server struct {
	ln net.Listener
	c  *Collector

	mu     sync.Mutex
	conns  map[net.Conn]bool
	closed bool
	wg     sync.WaitGroup
}

// ErrServe wraps the errors of starting the metrics server.
var ErrServe = errors.New("serve metrics")

// Serve listens on addr (host:port, :port) and serves c at /metrics, in
// the OpenMetrics format to scrapers that ask for it and Prometheus' text
// format otherwise.
func Serve(addr string, c *Collector) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%w on %s: %v", ErrServe, addr, err)
	}
	s := &Server{ln: ln, c: c, conns: map[net.Conn]bool{}}
	s.wg.Add(1)
	go s.acceptLoop()
	return s, nil
}

// Addr is the address the server listens on (with the port chosen, for
// ":0").
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Close stops the server: it stops listening, drops the connections being
// served and waits until their goroutines are done.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	err := s.ln.Close()
	for conn := range s.conns {
		conn.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	return err
}

func (s *Server) acceptLoop() {
	defer s.wg.Done()
	for {
		conn, err := s.ln.Accept()
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil {
			// Out of file descriptors, say: the scraper retries.
			time.Sleep(100 * time.Millisecond)
			continue
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			conn.Close()
			return
		}
		s.conns[conn] = true
		s.wg.Add(1)
		s.mu.Unlock()
		go func() {
			defer s.wg.Done()
			s.serveConn(conn)
			s.mu.Lock()
			delete(s.conns, conn)
			s.mu.Unlock()
			conn.Close()
		}()
	}
}

// request is what the server reads of an HTTP request.
type request struct {
	method, path           string
	accept, acceptEncoding string
}

// serveConn answers the one request of conn.
func (s *Server) serveConn(conn net.Conn) {
	conn.SetReadDeadline(time.Now().Add(requestTimeout))
	req, err := readRequest(bufio.NewReader(io.LimitReader(conn, maxRequestBytes)))
	conn.SetWriteDeadline(time.Now().Add(responseTimeout))
	switch {
	case err != nil:
		writeResponse(conn, "400 Bad Request", nil, []byte(err.Error()+"\n"), true)
	case req.path != "/metrics":
		writeResponse(conn, "404 Not Found", nil, []byte("gotrace serves /metrics only\n"), true)
	case req.method != "GET" && req.method != "HEAD":
		writeResponse(conn, "405 Method Not Allowed", []string{"Allow: GET, HEAD"}, []byte("method not allowed\n"), true)
	default:
		ft := negotiate(req.accept)
		headers := []string{"Content-Type: " + ft.contentType, "Vary: Accept-Encoding"}
		var body bytes.Buffer
		var out io.Writer = &body
		var gz *gzip.Writer
		if acceptsGzip(req.acceptEncoding) {
			headers = append(headers, "Content-Encoding: gzip")
			gz = gzip.NewWriter(&body)
			out = gz
		}
		if req.method == "GET" {
			_ = ft.write(out, s.c.collect()) // a bytes.Buffer takes everything
		}
		if gz != nil {
			gz.Close()
		}
		writeResponse(conn, "200 OK", headers, body.Bytes(), req.method == "GET")
	}
}

// readRequest reads a request line and headers, keeping what the server
// needs; the server reads no request body.
func readRequest(r *bufio.Reader) (request, error) {
	var req request
	line, err := readLine(r)
	if err != nil {
		return req, err
	}
	method, rest, ok1 := strings.Cut(line, " ")
	target, proto, ok2 := strings.Cut(rest, " ")
	if !ok1 || !ok2 || !strings.HasPrefix(proto, "HTTP/1.") || !strings.HasPrefix(target, "/") {
		return req, fmt.Errorf("malformed request line %q", line)
	}
	req.method = method
	req.path, _, _ = strings.Cut(target, "?")
	for {
		line, err := readLine(r)
		if err != nil {
			return req, err
		}
		if line == "" {
			return req, nil
		}
		name, value, ok := strings.Cut(line, ":")
		if !ok {
			return req, fmt.Errorf("malformed header line %q", line)
		}
		switch strings.ToLower(strings.TrimSpace(name)) {
		case "accept":
			req.accept = strings.TrimSpace(value)
		case "accept-encoding":
			req.acceptEncoding = strings.TrimSpace(value)
		}
	}
}

// readLine reads one line of the request without its CRLF (or LF).
func readLine(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return "", fmt.Errorf("read request: %w", err)
	}
	return strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r"), nil
}

// writeResponse writes a whole response; withBody false (HEAD) leaves the
// body out but keeps its length.
func writeResponse(w io.Writer, status string, headers []string, body []byte, withBody bool) {
	var b bytes.Buffer
	b.WriteString("HTTP/1.1 " + status + "\r\n")
	if !strings.HasPrefix(status, "200") {
		b.WriteString("Content-Type: text/plain; charset=utf-8\r\n")
	}
	for _, h := range headers {
		b.WriteString(h + "\r\n")
	}
	b.WriteString("Content-Length: " + strconv.Itoa(len(body)) + "\r\nConnection: close\r\n\r\n")
	if withBody {
		b.Write(body)
	}
	// A client gone mid-answer is no error of the trace's.
	_, _ = w.Write(b.Bytes())
}
