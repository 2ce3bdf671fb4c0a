// Package webserver is the network side of gotrace --metrics, run in a
// process of its own (cmd/gotrace-metrics) so that gotrace links no HTTP
// server, crypto/tls or YAML parser, whose initialisers would run at
// every gotrace start (issue 24). It listens, serves /metrics over HTTP
// or, with a web configuration file (--web.config.file), over TLS and
// with basic auth through the Prometheus exporter-toolkit, and asks
// gotrace for each scrape over the link of runtime/metrics.
package webserver

import (
	"compress/gzip"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/prometheus/exporter-toolkit/web"

	"github.com/gotrace/gotrace/runtime/metrics"
)

// Scraper answers a scrape with the maps in the format the Accept header
// prefers.
type Scraper interface {
	Scrape(accept string) (contentType string, body []byte, err error)
}

// Server is a metrics server listening on its address.
type Server struct {
	ln        net.Listener
	webConfig string
	srv       *http.Server
	log       *slog.Logger
}

// Listen checks the web configuration file webConfig (exporter-toolkit's
// format; "" serves plain HTTP to anyone) and listens on addr. Its errors
// are *metrics.Refusal.
func Listen(addr, webConfig string, warnings io.Writer) (*Server, error) {
	if webConfig != "" {
		if err := web.Validate(webConfig); err != nil {
			return nil, &metrics.Refusal{Reason: metrics.ErrWebConfig, Err: err}
		}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, &metrics.Refusal{Reason: metrics.ErrListen, Err: err}
	}
	return &Server{
		ln:        ln,
		webConfig: webConfig,
		srv: &http.Server{
			ReadHeaderTimeout: 10 * time.Second,
			// Failed handshakes and bad requests are the client's to
			// report (Prometheus shows them on its targets page); a
			// scanner would otherwise fill the trace's stderr.
			ErrorLog: log.New(io.Discard, "", 0),
		},
		log: slog.New(slog.NewTextHandler(&prefixWriter{w: warnings, prefix: "WARNING: --metrics: "},
			&slog.HandlerOptions{Level: slog.LevelWarn, ReplaceAttr: dropTimeAndLevel})),
	}, nil
}

// dropTimeAndLevel keeps a warning's message and attributes: the prefix
// already says what it is.
func dropTimeAndLevel(groups []string, a slog.Attr) slog.Attr {
	if len(groups) == 0 && (a.Key == slog.TimeKey || a.Key == slog.LevelKey) {
		return slog.Attr{}
	}
	return a
}

// prefixWriter starts each write, one log record, with prefix.
type prefixWriter struct {
	w      io.Writer
	prefix string
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	if _, err := io.WriteString(p.w, p.prefix+string(b)); err != nil {
		return 0, err
	}
	return len(b), nil
}

// Addr is the address the server listens on (with the port chosen, for
// ":0").
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Serve serves sc's scrapes at /metrics until Close. exporter-toolkit
// reads the web configuration file again at each request (the users and
// passwords) and at each TLS handshake (the certificate, key and TLS
// settings), so that a changed password or a renewed certificate takes
// effect without a restart; whether TLS is on at all is decided here, at
// start.
func (s *Server) Serve(sc Scraper) error {
	mux := http.NewServeMux()
	mux.Handle("/metrics", handler{sc})
	s.srv.Handler = mux
	systemd := false
	err := web.Serve(s.ln, s.srv, &web.FlagConfig{WebConfigFile: &s.webConfig, WebSystemdSocket: &systemd}, s.log)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("serve metrics: %w", err)
	}
	return nil
}

// Close stops the server.
func (s *Server) Close() error { return s.srv.Close() }

// handler serves a Scraper's maps at each request.
type handler struct{ sc Scraper }

func (h handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	contentType, body, err := h.sc.Scrape(r.Header.Get("Accept"))
	if err != nil {
		http.Error(w, "gotrace is gone: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", contentType)
	w.Header().Add("Vary", "Accept-Encoding")
	if r.Method == http.MethodHead {
		return
	}
	var out io.Writer = w
	if acceptsGzip(r.Header.Get("Accept-Encoding")) {
		w.Header().Set("Content-Encoding", "gzip")
		gz := gzip.NewWriter(w)
		defer gz.Close()
		out = gz
	}
	// A client that goes away mid-scrape is no error of the trace's.
	_, _ = out.Write(body)
}

// acceptsGzip reports whether an Accept-Encoding header allows gzip.
func acceptsGzip(acceptEncoding string) bool {
	for e := range strings.SplitSeq(acceptEncoding, ",") {
		coding, params, _ := strings.Cut(e, ";")
		if strings.TrimSpace(coding) == "gzip" && strings.ReplaceAll(strings.TrimSpace(params), " ", "") != "q=0" {
			return true
		}
	}
	return false
}

// LinkFD is the descriptor on which gotrace-metrics finds its end of the
// link to gotrace; its standard input is a pipe that gotrace holds open
// for as long as it runs.
const LinkFD = 3

// Main is gotrace-metrics: gotrace starts it with --listen ADDR and
// --web.config.file FILE, its end of the link as descriptor LinkFD and a
// pipe as standard input. It says on the link whether it serves, then
// serves until gotrace closes the pipe (or dies: the kernel closes it
// then too).
func Main(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("gotrace-metrics", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("listen", "", "serve /metrics on `ADDR`")
	webConfig := fs.String("web.config.file", "", "the TLS and basic auth settings, in exporter-toolkit's web configuration `FILE`")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	conn := os.NewFile(LinkFD, "gotrace metrics link")
	if fi, err := conn.Stat(); err != nil || fi.Mode()&os.ModeSocket == 0 {
		fmt.Fprintf(stderr, "gotrace-metrics: no link to gotrace on descriptor %d: gotrace --metrics starts it\n", LinkFD)
		return 2
	}
	link := metrics.NewServerLink(conn)
	go func() {
		// gotrace ends or dies: nothing is left to serve.
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}()
	srv, err := Listen(*addr, *webConfig, stderr)
	if err != nil {
		var r *metrics.Refusal
		if errors.As(err, &r) {
			err = link.Refuse(r)
		}
		if err != nil {
			fmt.Fprintf(stderr, "gotrace-metrics: %v\n", err)
		}
		return 1
	}
	if err := link.Ready(srv.Addr().String()); err != nil {
		fmt.Fprintf(stderr, "gotrace-metrics: %v\n", err)
		return 1
	}
	if err := srv.Serve(link); err != nil {
		fmt.Fprintf(stderr, "WARNING: --metrics: %v; the trace runs without serving metrics\n", err)
		return 1
	}
	return 0
}
