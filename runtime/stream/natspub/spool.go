package natspub

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/gotrace/gotrace/runtime"
	"github.com/gotrace/gotrace/runtime/capture"
	"github.com/gotrace/gotrace/runtime/output"
	"github.com/gotrace/gotrace/runtime/stream"
)

// truncateAt is how large the spool file grows, all of it sent, before it
// is emptied: a trace that the server keeps up with costs no more disk.
const truncateAt = 4 << 20

// readChunk is how much of the spool the sender reads at once.
const readChunk = 256 << 10

// Trace publishes a live trace. It is the io.Writer a run's capture is
// written to (runtime.Options.Capture): it cuts the capture into records
// and appends them to the spool file, never waiting for the network, while
// a goroutine of its own reads the spool, prints each record as -f json
// prints it (runtime.Replay) and publishes the lines. A record that would
// take the spool past Config.SpoolMax is dropped with the records that
// belong to it (its inputs, a map print's entries) and counted: a warning
// when dropping starts, and a Lost record in its place once there is room
// again, which subscribers receive as lost_events.
type Trace struct {
	cfg  *stream.Config
	pub  *publisher
	file *os.File
	path string

	mu   sync.Mutex
	cond *sync.Cond
	// in holds the capture's bytes not yet cut into records, out the
	// records of one Write to append at once.
	in, out []byte
	// headerLen is the size of the capture's header at the spool's start;
	// written and sent are offsets in the spool: what it holds, what the
	// sender has read.
	headerLen     int64
	written, sent int64
	// clock is the capture's Clock record, written again after the spool
	// is emptied so that the spool file alone still prints strftime().
	clock []byte
	// dropping is set while the records of a dropped record are skipped.
	dropping bool
	// dropped counts the records dropped in all, unreported those of the
	// current episode of a full spool.
	dropped, unreported uint64
	closed              bool
	// ctx ends the sender at the drain deadline; done is closed when the
	// sender has returned, with sendErr.
	ctx     context.Context
	cancel  context.CancelFunc
	done    chan struct{}
	sendErr error
}

// Start connects to the server cfg names and returns the Trace to write
// the run's capture to. A server that does not answer is an error with
// wait (a capture published after the fact), else a warning: the records
// wait in the spool.
func Start(cfg stream.Config, wait bool) (*Trace, error) {
	cfg.Defaults()
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	f, err := os.CreateTemp(cfg.SpoolDir, "gotrace-nats-*.cap")
	if err != nil {
		return nil, &stream.FlagError{Flag: "--nats-spool", Err: fmt.Errorf("create spool file: %w", err)}
	}
	t := &Trace{cfg: &cfg, file: f, path: f.Name(), done: make(chan struct{})}
	t.cond = sync.NewCond(&t.mu)
	t.ctx, t.cancel = context.WithCancel(context.Background())
	// The connection is made before the trace starts, so that refused
	// credentials end it before anything is attached; the script is
	// known once the capture's header arrives.
	t.pub, err = newPublisher(t.cfg, &capture.Header{}, wait)
	if err != nil {
		f.Close()
		os.Remove(t.path)
		return nil, err
	}
	go t.send()
	return t, nil
}

// Write takes the next bytes of the capture.
func (t *Trace) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.in = append(t.in, b...)
	if t.headerLen == 0 {
		n, ok := capture.HeaderLen(t.in)
		if !ok || len(t.in) < n {
			return len(b), nil
		}
		rd, err := capture.NewReader(bytes.NewReader(t.in[:n]))
		if err != nil {
			return 0, fmt.Errorf("read capture header: %w", err)
		}
		t.pub.setScript(&rd.Header)
		t.out = append(t.out, t.in[:n]...)
		t.in = t.in[n:]
		t.headerLen = int64(n)
	}
	used := 0
	for {
		k, n, ok := capture.RecordLen(t.in[used:])
		if !ok || len(t.in)-used < n {
			break
		}
		t.take(k, t.in[used:used+n])
		used += n
	}
	t.in = append(t.in[:0], t.in[used:]...)
	if len(t.out) == 0 {
		return len(b), nil
	}
	if _, err := t.file.WriteAt(t.out, t.written); err != nil {
		return 0, fmt.Errorf("write spool %s: %w", t.path, err)
	}
	t.written += int64(len(t.out))
	t.out = t.out[:0]
	t.cond.Broadcast()
	return len(b), nil
}

// take appends record rec of kind k to t.out, or drops it. The caller
// holds t.mu.
func (t *Trace) take(k capture.Kind, rec []byte) {
	switch k {
	case capture.Input, capture.Entries:
		// They belong to the record before them.
		if !t.dropping {
			t.out = append(t.out, rec...)
		}
		return
	case capture.Clock:
		t.clock = bytes.Clone(rec)
	}
	// The records waiting: the header does not count.
	waiting := t.written + int64(len(t.out)) - max(t.sent, t.headerLen)
	if k != capture.End && waiting+int64(len(rec)) > t.cfg.SpoolMax {
		if t.unreported == 0 {
			fmt.Fprintf(t.cfg.Err, "WARNING: --nats-spool-max: the spool holds %d bytes that the server has not taken: records are dropped, and counted, until it takes them\n", waiting)
		}
		t.dropping = true
		t.dropped++
		t.unreported++
		return
	}
	t.dropping = false
	if t.unreported > 0 {
		// Where the records were dropped, subscribers get lost_events.
		fmt.Fprintf(t.cfg.Err, "WARNING: --nats-spool-max: %d records dropped: the spool was full\n", t.unreported)
		t.out = capture.AppendRecord(t.out, capture.Lost, binary.LittleEndian.AppendUint64(nil, t.unreported))
		t.unreported = 0
	}
	t.out = append(t.out, rec...)
}

// send reads the spool and publishes what it holds, until the capture's
// end is sent or the drain deadline passes.
func (t *Trace) send() {
	defer close(t.done)
	pr, pw := io.Pipe()
	replayed := make(chan error, 1)
	go func() {
		err := t.pub.replay(t.ctx, pr)
		if err != nil && t.ctx.Err() == nil {
			// Said at once: the records now wait in the spool.
			fmt.Fprintf(t.cfg.Err, "ERROR: --nats: publishing stopped: %v; records wait in the spool %s\n", err, t.path)
		}
		pr.CloseWithError(err)
		replayed <- err
	}()
	buf := make([]byte, readChunk)
	var err error
	for {
		// While the server is away the records stay in the spool,
		// where the bound counts them.
		if err = t.pub.waitConnected(t.ctx); err != nil {
			break
		}
		t.mu.Lock()
		for t.sent == t.written && !t.closed {
			t.cond.Wait()
		}
		if t.sent == t.written {
			t.mu.Unlock()
			break
		}
		from, n := t.sent, min(t.written-t.sent, int64(len(buf)))
		t.mu.Unlock()
		if _, err := t.file.ReadAt(buf[:n], from); err != nil {
			pw.CloseWithError(err)
			break
		}
		if _, err := pw.Write(buf[:n]); err != nil {
			break
		}
		t.mu.Lock()
		t.sent += n
		t.truncate()
		t.mu.Unlock()
	}
	pw.Close()
	if rerr := <-replayed; err == nil {
		err = rerr
	}
	if err == nil {
		err = t.pub.drain(t.ctx)
	}
	t.sendErr = err
}

// truncate empties the spool once everything in it is sent and it has
// grown past truncateAt, keeping the header and the Clock record. The
// caller holds t.mu.
func (t *Trace) truncate() {
	if t.sent != t.written || t.written < truncateAt {
		return
	}
	if err := t.file.Truncate(t.headerLen); err != nil {
		return
	}
	t.written = t.headerLen
	if t.clock != nil {
		if _, err := t.file.WriteAt(t.clock, t.written); err == nil {
			t.written += int64(len(t.clock))
		}
	}
	t.sent = t.written
}

// Close ends the trace: it waits, up to Config.Drain, for the server to
// take every record, then says how many were dropped and, when some are
// left, in which file they wait for gotrace replay --nats.
func (t *Trace) Close() error {
	t.mu.Lock()
	t.closed = true
	t.cond.Broadcast()
	t.mu.Unlock()
	select {
	case <-t.done:
	case <-time.After(t.cfg.Drain):
		t.cancel()
		<-t.done
	}
	t.cancel()
	t.pub.close()
	t.file.Close()
	if t.dropped > 0 {
		fmt.Fprintf(t.cfg.Err, "WARNING: --nats: %d records dropped in all: the spool (--nats-spool-max %d) was full\n", t.dropped, t.cfg.SpoolMax)
	}
	err := t.sendErr
	if err == nil || t.headerLen == 0 {
		// Delivered, or the run ended before its trace started.
		os.Remove(t.path)
		return nil
	}
	if errors.Is(err, context.Canceled) {
		err = fmt.Errorf("the server took no more in %s", t.cfg.Drain)
	}
	return fmt.Errorf("--nats: %d messages delivered; the rest wait in %s (gotrace replay --nats %s %s sends them): %w",
		t.pub.published, t.path, t.cfg.URL, t.path, err)
}

// Dropped returns how many records the full spool made the trace drop.
func (t *Trace) Dropped() uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.dropped
}

// replay prints the capture read from r as -f json and publishes each
// object, errorf() and warnf() messages as errorf and warnf objects.
func (p *publisher) replay(ctx context.Context, r io.Reader) error {
	lines := &lineWriter{ctx: ctx, pub: p}
	diags := output.NewWriter(lines, output.JSON)
	err := runtime.Replay(r, runtime.Options{
		Out: lines, Format: "json", LineBuffered: true,
		Diagnostic: func(warn bool, msg string) {
			kind := output.Message("errorf")
			if warn {
				kind = "warnf"
			}
			diags.Message(kind, msg)
		},
	})
	if lines.err != nil {
		return lines.err
	}
	if _, ok := errors.AsType[runtime.ExitStatus](err); ok {
		// The live run returned it already.
		return nil
	}
	if _, ok := errors.AsType[*capture.CorruptError](err); ok {
		return err
	}
	return nil
}

// lineWriter publishes each line written to it as a message; empty lines
// (the two newlines before the exit maps) are not messages.
type lineWriter struct {
	ctx context.Context
	pub *publisher
	buf []byte
	err error
}

// Write publishes the whole lines b completes.
func (w *lineWriter) Write(b []byte) (int, error) {
	if w.err != nil {
		return 0, w.err
	}
	w.buf = append(w.buf, b...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		line := w.buf[:i]
		if len(line) > 0 {
			if err := w.pub.publish(w.ctx, line); err != nil {
				w.err = err
				return 0, err
			}
		}
		w.buf = w.buf[i+1:]
	}
	w.buf = append(w.buf[:0:0], w.buf...)
	return len(b), nil
}
