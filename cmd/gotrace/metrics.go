package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/pflag"
	"golang.org/x/sys/unix"

	"github.com/gotrace/gotrace/internal/companion"
	"github.com/gotrace/gotrace/runtime/metrics"
)

// metricFlags are the flags of --metrics: where to serve the maps and how
// to name them.
type metricFlags struct {
	addr      string
	names     []string
	labels    []string
	maxSeries int
	webConfig string
}

func (m *metricFlags) add(fs *pflag.FlagSet) {
	fs.StringVar(&m.addr, "metrics", "", "serve the maps at http://`ADDR`/metrics for Prometheus while the script runs (:9435, 127.0.0.1:9435); see docs/metrics.md")
	fs.Var((*stringList)(&m.names), "metric-name", "name the metric of a map: `@MAP=NAME` serves @MAP as gotrace_NAME")
	fs.Var((*stringList)(&m.labels), "metric-labels", "name the labels of a map's key elements: `@MAP=L1,L2,...` (default key, or key0, key1, ...)")
	fs.IntVar(&m.maxSeries, "metrics-max-series", metrics.DefaultMaxSeries, "serve at most `N` series of one map per scrape; gotrace_series_dropped counts the rest")
	fs.StringVar(&m.webConfig, "web.config.file", "", "serve --metrics over TLS and/or with basic auth as the Prometheus web configuration `FILE` says (exporter-toolkit's format, read again at each scrape); see docs/metrics.md")
}

// config builds the collector's configuration from the flags.
func (m *metricFlags) config() (metrics.Config, error) {
	cfg := metrics.Config{Names: map[string]string{}, Labels: map[string][]string{}, MaxSeries: m.maxSeries}
	if m.maxSeries <= 0 {
		return cfg, fmt.Errorf("--metrics-max-series %d: want a positive number", m.maxSeries)
	}
	for _, s := range m.names {
		name, value, err := mapSetting("--metric-name", s)
		if err != nil {
			return cfg, err
		}
		cfg.Names[name] = value
	}
	for _, s := range m.labels {
		name, value, err := mapSetting("--metric-labels", s)
		if err != nil {
			return cfg, err
		}
		cfg.Labels[name] = strings.Split(value, ",")
	}
	return cfg, cfg.Validate()
}

// mapSetting splits a flag's @MAP=VALUE.
func mapSetting(flag, s string) (name, value string, err error) {
	name, value, ok := strings.Cut(s, "=")
	if !ok || !strings.HasPrefix(name, "@") || value == "" {
		return "", "", fmt.Errorf("%s %q: want @MAP=VALUE", flag, s)
	}
	return name, value, nil
}

// metricsServerEnv names the metrics server's program, overriding the
// search beside gotrace and on PATH (tests run gotrace from elsewhere).
const metricsServerEnv = "GOTRACE_METRICS_SERVER"

// metricsServerTimeout bounds how long gotrace waits for the metrics
// server to say whether it serves: it only reads a file and listens.
const metricsServerTimeout = 30 * time.Second

// start serves the metrics when --metrics is given and returns the
// collector for the runtime and a function that stops the server. The
// server is the gotrace-metrics program, which gotrace starts with its
// end of a socket pair: it listens and answers HTTP (and TLS and basic
// auth), and asks gotrace for the maps at each scrape, so that gotrace
// itself links no HTTP server (issue 24). A server that cannot listen (an
// address in use) is a warning: the trace runs and prints its maps at exit
// as usual. A web configuration file it refuses is an error: serving the
// maps without the protection the file asks for is not an option.
func (m *metricFlags) start(stderr io.Writer) (*metrics.Collector, func(), error) {
	if m.addr == "" {
		if m.webConfig != "" {
			return nil, nil, fmt.Errorf("--web.config.file %s: it configures --metrics, which is not given", m.webConfig)
		}
		return nil, func() {}, nil
	}
	cfg, err := m.config()
	if err != nil {
		return nil, nil, err
	}
	c := metrics.NewCollector(cfg)
	srv, err := startMetricsServer(m.addr, m.webConfig, stderr)
	switch {
	case errors.Is(err, metrics.ErrListen):
		fmt.Fprintf(stderr, "WARNING: --metrics: serve metrics on %s: %v; the trace runs without serving metrics\n", m.addr, err)
		return nil, func() {}, nil
	case errors.Is(err, metrics.ErrWebConfig):
		return nil, nil, fmt.Errorf("--web.config.file %s: %v", m.webConfig, err)
	case err != nil:
		return nil, nil, fmt.Errorf("--metrics: %w", err)
	}
	var stopping atomic.Bool
	served := make(chan struct{})
	go func() {
		defer close(served)
		err := srv.link.Serve(c)
		if stopping.Load() {
			return
		}
		// The server went away while the trace runs: say so once, the
		// trace goes on.
		if err == nil {
			err = errors.New("the metrics server gotrace-metrics exited")
		}
		fmt.Fprintf(stderr, "WARNING: --metrics: %v; the trace runs without serving metrics\n", err)
	}()
	return c, func() {
		stopping.Store(true)
		srv.stop()
		<-served
		srv.conn.Close()
	}, nil
}

// metricsServer is a running gotrace-metrics and gotrace's end of its
// link.
type metricsServer struct {
	cmd      *exec.Cmd
	conn     *os.File
	lifeline io.Closer
	link     *metrics.Link
}

// startMetricsServer starts gotrace-metrics on addr with the web
// configuration file webConfig and waits for it to say whether it serves.
// Its refusals are *metrics.Refusal, with the server's message.
func startMetricsServer(addr, webConfig string, stderr io.Writer) (*metricsServer, error) {
	path, err := companion.Path("gotrace-metrics", metricsServerEnv)
	if err != nil {
		return nil, err
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("create metrics link: %w", err)
	}
	// gotrace's end is non-blocking, so that its reads can have a
	// deadline; the server's is an ordinary blocking descriptor.
	if err := unix.SetNonblock(fds[0], true); err != nil {
		unix.Close(fds[0])
		unix.Close(fds[1])
		return nil, fmt.Errorf("create metrics link: %w", err)
	}
	conn := os.NewFile(uintptr(fds[0]), "metrics link")
	theirs := os.NewFile(uintptr(fds[1]), "metrics link")
	defer theirs.Close()
	cmd := exec.Command(path, "--listen", addr, "--web.config.file", webConfig)
	// Its name, whatever the file's: under tests the file is the test
	// binary, which runs gotrace-metrics when started so.
	cmd.Args[0] = "gotrace-metrics"
	cmd.ExtraFiles = []*os.File{theirs} // descriptor 3: webserver.LinkFD
	cmd.Stdout, cmd.Stderr = stderr, stderr
	// Its own process group: a terminal's ^C is for gotrace, which then
	// prints its maps, and stops the server itself.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	lifeline, err := cmd.StdinPipe()
	if err == nil {
		err = cmd.Start()
	}
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("start the metrics server %s (installed next to gotrace by make install and the package; go build ./cmd/gotrace-metrics): %w", path, err)
	}
	s := &metricsServer{cmd: cmd, conn: conn, lifeline: lifeline, link: metrics.NewLink(conn)}
	conn.SetReadDeadline(time.Now().Add(metricsServerTimeout))
	if _, err := s.link.Status(); err != nil {
		s.stop()
		conn.Close()
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return nil, fmt.Errorf("the metrics server %s did not say whether it serves in %v", path, metricsServerTimeout)
		}
		return nil, err
	}
	conn.SetReadDeadline(time.Time{})
	return s, nil
}

// stop ends the server and waits for it: its end of the link closes with
// it, which ends the link's Serve.
func (s *metricsServer) stop() {
	s.lifeline.Close()
	s.cmd.Process.Kill()
	s.cmd.Wait()
}
