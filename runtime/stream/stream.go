// Package stream is gotrace's side of publishing a trace on NATS
// JetStream (gotrace --nats, docs/streams.md): the configuration and its
// flags, their checks, and the helper program gotrace-nats that publishes.
// gotrace runs the helper and writes the run's capture (the -w format,
// runtime/capture) to it; the helper (cmd/gotrace-nats, with package
// natspub) holds the NATS client, whose packages' initialisers would
// otherwise run at every start of gotrace (issue 24). This package links
// nothing of NATS. The bus is on the reader's side only: the BPF programs
// are the same with or without it.
package stream

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/gotrace/gotrace/internal/companion"
	"github.com/spf13/pflag"
)

// The headers of every message (docs/streams.md). HeaderSeq counts a
// run's messages from 1 with no gap, so that a subscriber that sees 7
// after 5 knows it missed one; HeaderRun tells two runs of the same script
// apart.
const (
	HeaderHost    = "Gotrace-Host"
	HeaderScript  = "Gotrace-Script"
	HeaderHash    = "Gotrace-Script-Hash"
	HeaderVersion = "Gotrace-Version"
	HeaderRun     = "Gotrace-Run"
	HeaderSeq     = "Gotrace-Seq"
)

// Config is how to reach the server and what to call things on it; the
// command line fills it in (--nats and the flags after it).
type Config struct {
	// URL is the server (--nats): nats://host:port, tls://host:port, or
	// a comma-separated list of them.
	URL string
	// Subject is the subjects' first token (--nats-subject): messages go
	// to Subject.HOST.SCRIPT.KIND.
	Subject string
	// Stream is the JetStream stream that holds the subjects
	// (--nats-stream). When the server has none of that name, one is
	// created with the subject filter Subject.>.
	Stream string
	// Creds is a credentials file (JWT and NKey seed, --nats-creds).
	Creds string
	// NKey is a file holding an NKey seed (--nats-nkey).
	NKey string
	// CA, Cert and Key are PEM files: the authorities the server's
	// certificate is checked against, and the client's certificate and
	// key (--nats-tls-ca, --nats-tls-cert, --nats-tls-key).
	CA, Cert, Key string
	// Host is the host name in subjects and headers (--nats-host; by
	// default the machine's).
	Host string
	// Version is gotrace's version, sent in a header.
	Version string
	// SpoolDir is where the records the server has not taken wait
	// (--nats-spool; by default the temporary directory).
	SpoolDir string
	// SpoolMax bounds the bytes waiting in the spool (--nats-spool-max);
	// records past it are dropped and counted.
	SpoolMax int64
	// Drain bounds how long the end of a trace waits for the server to
	// take what is left; what it has not taken then stays in the spool
	// file, which gotrace replay --nats sends later.
	Drain time.Duration
	// Err receives warnings: the server unreachable, records dropped.
	Err io.Writer
}

// Defaults of the Config fields the command line leaves empty.
const (
	DefaultSubject  = "gotrace"
	DefaultStream   = "GOTRACE"
	DefaultSpoolMax = 256 << 20
	DefaultDrain    = 30 * time.Second
)

// FlagError is a bad value of a flag: the command line prints it with the
// flag's name.
type FlagError struct {
	Flag string
	Err  error
}

// Error names the flag.
func (e *FlagError) Error() string { return fmt.Sprintf("%s: %v", e.Flag, e.Err) }

// Unwrap returns the cause.
func (e *FlagError) Unwrap() error { return e.Err }

// AddFlags declares the flags that fill in c on fs; live adds the
// spool's, which only a running trace has.
func AddFlags(fs *pflag.FlagSet, c *Config, live bool) {
	fs.StringVar(&c.URL, "nats", "", "publish every record as -f json prints it to NATS JetStream at `URL` (nats://HOST:4222), printing nothing of it; see docs/streams.md")
	fs.StringVar(&c.Subject, "nats-subject", DefaultSubject, "first token of the subjects: messages go to `PREFIX`.HOST.SCRIPT.KIND")
	fs.StringVar(&c.Stream, "nats-stream", DefaultStream, "the JetStream stream that holds PREFIX.>: `NAME`, created with that subject filter when the server has none")
	fs.StringVar(&c.Host, "nats-host", "", "the host `NAME` in subjects and headers (default the machine's host name)")
	fs.StringVar(&c.Creds, "nats-creds", "", "connect with the credentials (JWT and NKey seed) of `FILE`")
	fs.StringVar(&c.NKey, "nats-nkey", "", "connect with the NKey seed in `FILE`")
	fs.StringVar(&c.CA, "nats-tls-ca", "", "check the server's certificate against the PEM authorities in `FILE`")
	fs.StringVar(&c.Cert, "nats-tls-cert", "", "present the PEM client certificate in `FILE` (with --nats-tls-key)")
	fs.StringVar(&c.Key, "nats-tls-key", "", "the PEM key of --nats-tls-cert, in `FILE`")
	fs.DurationVar(&c.Drain, "nats-drain", DefaultDrain, "at the end, wait up to `DURATION` for the server to take what is left")
	if live {
		fs.StringVar(&c.SpoolDir, "nats-spool", "", "keep the records the server has not taken in a capture file in `DIR` (default the temporary directory)")
		fs.Int64Var(&c.SpoolMax, "nats-spool-max", DefaultSpoolMax, "drop, and count, the records that would take the spool past `BYTES` (0: the default)")
	}
}

// Args returns the flags that give gotrace-nats the configuration c.
func (c *Config) Args() []string {
	var args []string
	for _, f := range []struct{ flag, value string }{
		{"nats", c.URL}, {"nats-subject", c.Subject}, {"nats-stream", c.Stream}, {"nats-host", c.Host},
		{"nats-creds", c.Creds}, {"nats-nkey", c.NKey},
		{"nats-tls-ca", c.CA}, {"nats-tls-cert", c.Cert}, {"nats-tls-key", c.Key},
		{"nats-spool", c.SpoolDir}, {"nats-version", c.Version},
	} {
		if f.value != "" {
			args = append(args, "--"+f.flag+"="+f.value)
		}
	}
	return append(args, "--nats-drain="+c.Drain.String(), "--nats-spool-max="+strconv.FormatInt(c.SpoolMax, 10))
}

// The helper's modes (its --nats-mode).
const (
	// ModeLive publishes a running trace: a server that does not answer
	// is waited for, the records spooled meanwhile.
	ModeLive = "live"
	// ModeReplay publishes a finished capture (gotrace replay --nats):
	// the server must answer.
	ModeReplay = "replay"
)

// HelperName is the program that publishes; HelperEnv, when set, is its
// path (tests).
const (
	HelperName = "gotrace-nats"
	HelperEnv  = "GOTRACE_NATS"
)

// The lines the helper writes on its standard output for gotrace: ready
// once it is connected or waits for the server, then done, or an error
// (a line that starts with StatusError) instead of either.
const (
	StatusReady = "ready"
	StatusDone  = "done"
	StatusError = "error: "
)

// Helper is a running gotrace-nats: the capture written to it is
// published.
type Helper struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	status *bufio.Reader
}

// StartHelper checks c, starts gotrace-nats in mode and returns once it is
// connected, or has warned on errOut that the server does not answer; a
// refusal (a bad flag, the server refusing the credentials) is its error.
func StartHelper(c Config, mode string, errOut io.Writer) (*Helper, error) {
	c.Defaults()
	if err := c.Check(); err != nil {
		return nil, err
	}
	path, err := companion.Path(HelperName, HelperEnv)
	if err != nil {
		return nil, &FlagError{"--nats", err}
	}
	cmd := exec.Command(path, append(c.Args(), "--nats-mode="+mode)...)
	cmd.Stderr = errOut
	h := &Helper{cmd: cmd}
	if h.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, fmt.Errorf("start %s: %w", HelperName, err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", HelperName, err)
	}
	h.status = bufio.NewReader(out)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", HelperName, err)
	}
	if err := h.wait(StatusReady); err != nil {
		h.stdin.Close()
		cmd.Wait()
		return nil, err
	}
	return h, nil
}

// wait reads the helper's next status line: nil when it is want.
func (h *Helper) wait(want string) error {
	line, err := h.status.ReadString('\n')
	line = strings.TrimSuffix(line, "\n")
	switch {
	case line == want:
		return nil
	case strings.HasPrefix(line, StatusError):
		return errors.New(strings.TrimPrefix(line, StatusError))
	case err != nil:
		return fmt.Errorf("%s ended without a word: %w", HelperName, err)
	}
	return fmt.Errorf("%s said %q, want %q", HelperName, line, want)
}

// Write gives the helper the next bytes of the capture.
func (h *Helper) Write(b []byte) (int, error) {
	n, err := h.stdin.Write(b)
	if err != nil {
		return n, fmt.Errorf("write to %s: %w", HelperName, err)
	}
	return n, nil
}

// Close ends the capture and waits until the helper has published it, or
// has said why not.
func (h *Helper) Close() error {
	h.stdin.Close()
	err := h.wait(StatusDone)
	if werr := h.cmd.Wait(); err == nil && werr != nil {
		err = fmt.Errorf("%s: %w", HelperName, werr)
	}
	return err
}

// Check refuses a Config that cannot work before anything connects: a URL
// that is not one, a file that cannot be read.
func (c *Config) Check() error {
	if c.URL == "" {
		return &FlagError{"--nats", errors.New("no server URL")}
	}
	for _, u := range strings.Split(c.URL, ",") {
		p, err := url.Parse(strings.TrimSpace(u))
		if err == nil && p.Host == "" {
			err = errors.New("no host: want nats://HOST:PORT")
		}
		if err == nil && !validScheme(p.Scheme) {
			err = fmt.Errorf("scheme %q: want nats, tls, ws or wss", p.Scheme)
		}
		if err != nil {
			return &FlagError{"--nats", fmt.Errorf("parse URL %q: %w", u, err)}
		}
	}
	if !validToken(c.Subject, true) {
		return &FlagError{"--nats-subject", fmt.Errorf("%q is not a subject prefix: tokens of letters, digits, '-' and '_' separated by dots", c.Subject)}
	}
	if !validToken(c.Stream, false) {
		return &FlagError{"--nats-stream", fmt.Errorf("%q is not a stream name: letters, digits, '-' and '_'", c.Stream)}
	}
	for _, f := range []struct{ flag, path string }{
		{"--nats-creds", c.Creds}, {"--nats-nkey", c.NKey},
		{"--nats-tls-ca", c.CA}, {"--nats-tls-cert", c.Cert}, {"--nats-tls-key", c.Key},
	} {
		if f.path == "" {
			continue
		}
		if _, err := os.Stat(f.path); err != nil {
			return &FlagError{f.flag, fmt.Errorf("read file: %w", err)}
		}
	}
	if (c.Cert == "") != (c.Key == "") {
		return &FlagError{"--nats-tls-cert", errors.New("--nats-tls-cert and --nats-tls-key go together")}
	}
	if c.SpoolMax < 0 {
		return &FlagError{"--nats-spool-max", fmt.Errorf("%d bytes: want a positive number", c.SpoolMax)}
	}
	return nil
}

// validScheme says whether nats.go connects with scheme.
func validScheme(scheme string) bool {
	switch scheme {
	case "nats", "tls", "ws", "wss":
		return true
	}
	return false
}

// validToken says whether s is a stream name or, with dots, a subject
// prefix that holds no wildcard and no blank.
func validToken(s string, dots bool) bool {
	if s == "" {
		return false
	}
	for _, tok := range strings.Split(s, ".") {
		if tok == "" || !dots && tok != s {
			return false
		}
		for _, r := range tok {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
				return false
			}
		}
	}
	return true
}

// SubjectToken makes s one token of a subject: the dots, blanks and
// wildcards a host or script name may hold become '_'.
func SubjectToken(s string) string {
	if s == "" {
		return "_"
	}
	return strings.Map(func(r rune) rune {
		if r <= ' ' || r == '.' || r == '*' || r == '>' || r == 0x7f {
			return '_'
		}
		return r
	}, s)
}

// Defaults fills in the fields the command line left empty.
func (c *Config) Defaults() {
	if c.Subject == "" {
		c.Subject = DefaultSubject
	}
	if c.Stream == "" {
		c.Stream = DefaultStream
	}
	if c.Host == "" {
		c.Host, _ = os.Hostname()
	}
	if c.SpoolDir == "" {
		c.SpoolDir = os.TempDir()
	}
	if c.Drain == 0 {
		c.Drain = DefaultDrain
	}
	if c.SpoolMax == 0 {
		c.SpoolMax = DefaultSpoolMax
	}
	if c.Err == nil {
		c.Err = io.Discard
	}
}
