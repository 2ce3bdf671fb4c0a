// Package natspub is the NATS side of gotrace --nats, the helper program
// gotrace-nats (cmd/gotrace-nats) runs it: it reads a run's capture (the
// -w format, runtime/capture), prints each record as -f json prints it
// (runtime.Replay) and publishes each object as one JetStream message, on
// a subject that names the host, the script and the kind of record, with
// headers that say which run and which place in it the message holds
// (docs/streams.md). It owns the connection (TLS, credentials, NKeys), the
// stream, the acknowledged publishing and the spool: the records the
// server has not taken yet, kept on disk in the capture format up to a
// bound, so that a server that goes away and comes back loses nothing and
// a full spool is counted, not silent.
package natspub

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/gotrace/gotrace/runtime/capture"
	"github.com/gotrace/gotrace/runtime/stream"
)

// window is how many messages may wait for their acknowledgement: past
// it, publishing waits for the oldest.
const window = 1024

// ackTimeout is how long an acknowledgement may take before the message
// is sent again (the server deduplicates by Nats-Msg-Id).
const ackTimeout = 5 * time.Second

// pending is a message sent and not yet acknowledged; fut is nil when it
// could not even be sent.
type pending struct {
	msg *nats.Msg
	fut jetstream.PubAckFuture
}

// publisher sends one run's messages in order and keeps each until the
// server acknowledges it, sending again from the first that failed once
// the connection is back.
type publisher struct {
	cfg *stream.Config
	nc  *nats.Conn
	js  jetstream.JetStream
	// watch hears of each connection made or closed.
	watch *connWatch
	// streamReady is set once the stream is known to exist.
	streamReady bool
	// subject is cfg.Subject.HOST.SCRIPT., to which the kind is added.
	subject string
	header  nats.Header
	run     string
	seq     uint64
	window  []pending
	// Published counts the messages acknowledged.
	published uint64
}

// newPublisher connects (waiting for the server with wait, else warning
// that it does not answer) and returns a publisher for the script h
// describes.
func newPublisher(cfg *stream.Config, h *capture.Header, wait bool) (*publisher, error) {
	p := &publisher{cfg: cfg, watch: newConnWatch()}
	nc, err := connect(cfg, wait, p.watch)
	if err != nil {
		return nil, err
	}
	p.nc = nc
	p.js, err = jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(2*window), jetstream.WithPublishAsyncTimeout(ackTimeout))
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("start JetStream client: %w", err)
	}
	p.setScript(h)
	return p, nil
}

// setScript fills in the subject and the headers for the script of h.
func (p *publisher) setScript(h *capture.Header) {
	name := strings.TrimSuffix(filepath.Base(h.File), ".bt")
	sum := sha256.Sum256([]byte(h.Source))
	var id [8]byte
	rand.Read(id[:])
	p.run = hex.EncodeToString(id[:])
	p.subject = p.cfg.Subject + "." + stream.SubjectToken(p.cfg.Host) + "." + stream.SubjectToken(name) + "."
	p.header = nats.Header{
		stream.HeaderHost:    {p.cfg.Host},
		stream.HeaderScript:  {name},
		stream.HeaderHash:    {hex.EncodeToString(sum[:])},
		stream.HeaderVersion: {p.cfg.Version},
		stream.HeaderRun:     {p.run},
	}
}

// close ends the connection.
func (p *publisher) close() {
	p.nc.Close()
}

// kind returns the "type" of a JSON line as output.Writer prints it.
func kind(line []byte) string {
	const start = `{"type": "`
	if !bytes.HasPrefix(line, []byte(start)) {
		return "other"
	}
	rest := line[len(start):]
	end := bytes.IndexByte(rest, '"')
	if end < 0 {
		return "other"
	}
	return stream.SubjectToken(string(rest[:end]))
}

// publish sends one JSON line as the next message of the run. It returns
// once the message is sent, or once the oldest of a full window is
// acknowledged; an error means the messages cannot be sent at all before
// ctx ends.
func (p *publisher) publish(ctx context.Context, line []byte) error {
	if !p.nc.IsConnected() {
		// Nothing more is taken from the spool while the server is
		// away: the window is sent again once it is back.
		if err := p.resend(ctx); err != nil {
			return err
		}
	}
	p.seq++
	h := nats.Header{}
	for k, v := range p.header {
		h[k] = v
	}
	seq := strconv.FormatUint(p.seq, 10)
	h.Set(stream.HeaderSeq, seq)
	h.Set(jetstream.MsgIDHeader, p.run+"."+seq)
	msg := &nats.Msg{Subject: p.subject + kind(line), Data: bytes.Clone(line), Header: h}
	p.window = append(p.window, pending{msg: msg, fut: p.send(ctx, msg)})
	for p.window[len(p.window)-1].fut == nil {
		// Not sent: the connection went, or the stream could not be
		// made yet. The window goes again, in order, once they are.
		if err := p.resend(ctx); err != nil {
			return err
		}
	}
	for len(p.window) >= window {
		if err := p.settle(ctx); err != nil {
			return err
		}
	}
	return nil
}

// send publishes msg, returning nil when it could not be sent now (the
// connection is down): settle sends it again.
func (p *publisher) send(ctx context.Context, msg *nats.Msg) jetstream.PubAckFuture {
	if !p.streamReady {
		if !p.nc.IsConnected() || p.ensureStream(ctx) != nil {
			return nil
		}
	}
	fut, err := p.js.PublishMsgAsync(msg)
	if err != nil {
		return nil
	}
	return fut
}

// ensureStream creates the stream if it is missing, once per connection
// that succeeds.
func (p *publisher) ensureStream(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, ackTimeout)
	defer cancel()
	if err := ensureStream(ctx, p.js, p.cfg); err != nil {
		return err
	}
	p.streamReady = true
	return nil
}

// settle waits for the oldest message's acknowledgement and drops it from
// the window. A failure sends the whole window again, in order, once the
// server is back.
func (p *publisher) settle(ctx context.Context) error {
	first := &p.window[0]
	if first.fut != nil {
		select {
		case <-first.fut.Ok():
			p.window = p.window[1:]
			p.published++
			return nil
		case <-first.fut.Err():
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	return p.resend(ctx)
}

// waitConnected returns once the connection is up, or with ctx's error.
func (p *publisher) waitConnected(ctx context.Context) error {
	for {
		changed := p.watch.next()
		if p.nc.IsConnected() {
			return nil
		}
		if p.nc.IsClosed() {
			return errors.New("publish to NATS: the connection is closed")
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

// resend waits for the connection and sends every message of the window
// again.
func (p *publisher) resend(ctx context.Context) error {
	if err := p.waitConnected(ctx); err != nil {
		return err
	}
	// A restarted server may have lost its streams with its store.
	p.streamReady = false
	if err := p.ensureStream(ctx); err != nil {
		if apiErr, ok := errors.AsType[*jetstream.APIError](err); ok {
			return fmt.Errorf("publish to NATS: %w", apiErr)
		}
		// The connection went again: wait for the next one.
		return nil
	}
	for i := range p.window {
		p.window[i].fut = p.send(ctx, p.window[i].msg)
	}
	return nil
}

// drain waits until every message sent is acknowledged or ctx ends.
func (p *publisher) drain(ctx context.Context) error {
	for len(p.window) > 0 {
		if err := p.settle(ctx); err != nil {
			return err
		}
	}
	return nil
}
