package runtime

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/ringbuf"

	"github.com/gotrace/gotrace/internal/pollfd"
)

// ring reads one ring buffer, waiting for records in Go's network poller
// rather than in a system call of its own.
//
// cilium/ebpf's reader waits in epoll_wait on a descriptor of its own: a
// blocked system call, which keeps a thread and, until sysmon takes it
// back (an idle sysmon looks every 10 ms), the P it ran on. With two
// readers and as many Ps as CPUs (2 on this project's VMs), both Ps were
// held and the goroutine exit() woke waited for sysmon; a third P was
// added for the trace, at the price of stopping the world twice. Here the
// reader's own poller is only asked with a deadline in the past, and the
// wait is on a duplicate of the map's descriptor registered with Go's
// poller: a waiting reader holds neither a P nor a thread, and a record
// (or a flush, or the close) makes its goroutine runnable like a socket's.
//
// ring offers the part of ringbuf.Reader that the tracer uses, with the
// same errors: ReadInto returns os.ErrDeadlineExceeded at the deadline,
// ringbuf.ErrFlushed once after Flush when the ring has been emptied, and
// os.ErrClosed after Close.
type ring struct {
	rd *ringbuf.Reader
	// file is a non-blocking duplicate of the map's descriptor, in Go's
	// poller; conn waits on it.
	file *os.File
	conn syscall.RawConn
	// deadline ends a wait (zero: none). Only the reading goroutine sets
	// it.
	deadline time.Time
	// flush is set by Flush and taken by the reader once the ring is
	// empty; flushing is the reader's own note that it took one and must
	// still report it.
	flush    atomic.Bool
	flushing bool
	// closed is set by Close, before the descriptor goes, so that the
	// reader's wait can tell the close from another error.
	closed atomic.Bool
	// reading is held by ReadInto while it reads or waits, and by Close
	// before the ring is unmapped (rd.Close): the wait asks how much the
	// ring holds (AvailableBytes), which reads the mapped ring without
	// cilium/ebpf's lock, and must not read it while it is unmapped.
	// Close wakes a waiting reader first, by closing file.
	reading sync.Mutex
}

// pastDeadline is a deadline that has passed: the reader's own poller is
// only ever asked whether a record is there, never waited in.
var pastDeadline = time.Unix(0, 1)

// openRings opens the readers of the events and control ring buffers;
// events is nil when no program writes a printf-like record
// (codegen.Spec.EventsMap): the loop then has no events reader.
func (l *eventLoop) openRings(events, control *ebpf.Map) error {
	for _, r := range []struct {
		m    *ebpf.Map
		name string
		into **ring
	}{{events, "events", &l.events}, {control, "control", &l.control}} {
		if r.m == nil {
			continue
		}
		rd, err := openRing(r.m)
		if err != nil {
			return fmt.Errorf("open %s ring buffer: %w", r.name, err)
		}
		*r.into = rd
	}
	return nil
}

// openRing opens a reader of the ring buffer m.
func openRing(m *ebpf.Map) (*ring, error) {
	rd, err := ringbuf.NewReader(m)
	if err != nil {
		return nil, err
	}
	rd.SetDeadline(pastDeadline)
	file, err := pollfd.Dup(m.FD(), "ring buffer "+m.String())
	if err != nil {
		rd.Close()
		return nil, err
	}
	conn, err := file.SyscallConn()
	if err != nil {
		file.Close()
		rd.Close()
		return nil, fmt.Errorf("wait on ring buffer: %w", err)
	}
	return &ring{rd: rd, file: file, conn: conn}, nil
}

// SetDeadline sets when ReadInto stops waiting for a record.
func (r *ring) SetDeadline(t time.Time) { r.deadline = t }

// ReadInto reads the next record into rec, waiting for one until the
// deadline.
func (r *ring) ReadInto(rec *ringbuf.Record) error {
	r.reading.Lock()
	defer r.reading.Unlock()
	for {
		err := r.rd.ReadInto(rec)
		if err == nil {
			return nil
		}
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			return err
		}
		// The ring is empty.
		if r.flushing {
			r.flushing = false
			return ringbuf.ErrFlushed
		}
		if r.flush.Swap(false) {
			// A record written before Flush but after the look above is
			// still to be read: look once more before reporting it.
			r.flushing = true
			continue
		}
		if err := r.file.SetReadDeadline(r.deadline); err != nil {
			if r.closed.Load() {
				return fmt.Errorf("ring buffer: %w", os.ErrClosed)
			}
			return fmt.Errorf("wait on ring buffer: %w", err)
		}
		err = r.conn.Read(func(uintptr) bool {
			return r.flush.Load() || r.rd.AvailableBytes() > 0
		})
		switch {
		case err == nil:
		case r.closed.Load():
			return fmt.Errorf("ring buffer: %w", os.ErrClosed)
		case errors.Is(err, os.ErrDeadlineExceeded):
			if r.flush.Load() {
				// Flush's wake-up, not the reader's deadline.
				continue
			}
			return err
		default:
			return fmt.Errorf("wait on ring buffer: %w", err)
		}
	}
}

// Flush makes ReadInto return ringbuf.ErrFlushed once it has read every
// record the ring held when Flush was called.
func (r *ring) Flush() error {
	r.flush.Store(true)
	// Wakes a reader waiting in the poller; one that is not waiting sees
	// the flag before it waits, and sets its own deadline again after.
	return r.file.SetReadDeadline(pastDeadline)
}

// Close ends the reader: a ReadInto waiting returns os.ErrClosed.
func (r *ring) Close() error {
	r.closed.Store(true)
	err := r.file.Close()
	r.reading.Lock()
	defer r.reading.Unlock()
	if cerr := r.rd.Close(); err == nil {
		err = cerr
	}
	return err
}
