package natspub

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/gotrace/gotrace/runtime/stream"
)

// connectOptions are nats.go's options for c: credentials and TLS from
// its files, and reconnecting for ever, since the spool waits for the
// server; watch hears of each connection made or closed.
func connectOptions(c *stream.Config, retry bool, watch *connWatch) ([]nats.Option, error) {
	opts := []nats.Option{
		nats.ConnectHandler(watch.changed),
		nats.ReconnectHandler(watch.changed),
		nats.ClosedHandler(watch.changed),
		nats.DisconnectErrHandler(func(*nats.Conn, error) {}),
		nats.Name("gotrace " + c.Version),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250 * time.Millisecond),
		nats.RetryOnFailedConnect(retry),
		// Errors of the connection are reported where they matter (a
		// publish that is not acknowledged); nats.go's default
		// handler would print them a second time.
		nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}),
	}
	if c.Creds != "" {
		opts = append(opts, nats.UserCredentials(c.Creds))
	}
	if c.NKey != "" {
		opt, err := nats.NkeyOptionFromSeed(c.NKey)
		if err != nil {
			return nil, &stream.FlagError{Flag: "--nats-nkey", Err: fmt.Errorf("read NKey seed: %w", err)}
		}
		opts = append(opts, opt)
	}
	if c.CA != "" {
		opts = append(opts, nats.RootCAs(c.CA))
	}
	if c.Cert != "" {
		opts = append(opts, nats.ClientCert(c.Cert, c.Key))
	}
	return opts, nil
}

// unreachable says whether err is a server that did not answer, which the
// spool waits out, rather than one that refused gotrace (credentials,
// TLS), which ends the trace before it starts.
func unreachable(err error) bool {
	return errors.Is(err, nats.ErrNoServers) || errors.Is(err, nats.ErrTimeout) ||
		errors.Is(err, context.DeadlineExceeded)
}

// connect opens the connection. A server that refuses gotrace is an error
// naming the flag to look at; one that does not answer is an error too
// with wait, else a warning, and the connection keeps trying while the
// spool fills. watch hears of each connection made or closed.
func connect(c *stream.Config, wait bool, watch *connWatch) (*nats.Conn, error) {
	opts, err := connectOptions(c, false, watch)
	if err != nil {
		return nil, err
	}
	nc, err := nats.Connect(c.URL, opts...)
	if err == nil {
		return nc, nil
	}
	if !unreachable(err) || wait {
		return nil, connectError(c, err)
	}
	fmt.Fprintf(c.Err, "WARNING: --nats %s: the server does not answer (%v): records wait in the spool (--nats-spool) until it does\n", c.URL, err)
	opts, _ = connectOptions(c, true, watch)
	nc, err = nats.Connect(c.URL, opts...)
	if err != nil {
		return nil, connectError(c, err)
	}
	return nc, nil
}

// connectError names the flag behind a refused connection.
func connectError(c *stream.Config, err error) error {
	msg := err.Error()
	switch {
	case errors.Is(err, nats.ErrAuthorization) || strings.Contains(msg, "uthorization") || strings.Contains(msg, "authentication"):
		flag := "--nats-creds"
		if c.Creds == "" && c.NKey != "" {
			flag = "--nats-nkey"
		} else if c.Creds == "" {
			flag = "--nats (no credentials given: --nats-creds or --nats-nkey)"
		}
		return &stream.FlagError{Flag: flag, Err: fmt.Errorf("the server refused the credentials: %w", err)}
	case strings.Contains(msg, "tls") || strings.Contains(msg, "x509") || strings.Contains(msg, "certificate"):
		return &stream.FlagError{Flag: "--nats-tls-ca", Err: fmt.Errorf("TLS with the server failed: %w", err)}
	}
	return &stream.FlagError{Flag: "--nats", Err: fmt.Errorf("connect to %s: %w", c.URL, err)}
}

// connWatch wakes every goroutine that waits for the connection when it
// is made or closed: the sender of the spool and the publisher both may.
type connWatch struct {
	mu sync.Mutex
	ch chan struct{}
}

// newConnWatch returns a connWatch with no one waiting.
func newConnWatch() *connWatch {
	return &connWatch{ch: make(chan struct{})}
}

// changed wakes the waiters; nats.go calls it.
func (w *connWatch) changed(*nats.Conn) {
	w.mu.Lock()
	defer w.mu.Unlock()
	close(w.ch)
	w.ch = make(chan struct{})
}

// next returns the channel closed at the next change: a waiter takes it
// before it looks at the connection, so that no change is missed between.
func (w *connWatch) next() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.ch
}

// ensureStream makes sure the stream exists: it is looked up by name and,
// when the server has none, created with the subject filter Subject.>
// (file storage, limits by the server's defaults).
func ensureStream(ctx context.Context, js jetstream.JetStream, c *stream.Config) error {
	_, err := js.Stream(ctx, c.Stream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		_, err = js.CreateStream(ctx, jetstream.StreamConfig{
			Name:     c.Stream,
			Subjects: []string{c.Subject + ".>"},
			Storage:  jetstream.FileStorage,
		})
		if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			// Another gotrace made it first.
			_, err = js.Stream(ctx, c.Stream)
		}
		if err != nil {
			return fmt.Errorf("create stream %s for %s.>: %w", c.Stream, c.Subject, err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("look up stream %s: %w", c.Stream, err)
	}
	return nil
}
