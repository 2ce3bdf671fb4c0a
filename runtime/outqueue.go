package runtime

import (
	"io"
	"sync"
)

// outQueueDepth is how many filled buffers (of up to outHold bytes each)
// wait for the writer before Write blocks: 4 MiB, about 170 ms of the
// 155-byte printf burst at its full rate.
const outQueueDepth = 64

// outQueue writes the tracer's held output on a goroutine of its own, so
// that the events reader only decodes and formats: a write of the -o file
// took up to 23 ms on a loaded machine, long enough for the ring buffer to
// fill behind the reader. Buffers are written in the order they were
// queued. After a failed write (EPIPE on a closed standard output) the
// rest is dropped, Write and Sync return the error, and stop is called
// once, to end the trace without waiting for the next record.
type outQueue struct {
	w      io.Writer
	filled chan queued
	free   chan []byte
	done   chan struct{}
	stop   func()

	mu  sync.Mutex
	err error
}

// queued is a buffer to write, or, with synced set, a request to close
// synced once everything queued before it is written.
type queued struct {
	buf    []byte
	synced chan struct{}
}

// newOutQueue starts the goroutine that writes to w. Close ends it.
func newOutQueue(w io.Writer, stop func()) *outQueue {
	q := &outQueue{
		w:      w,
		filled: make(chan queued, outQueueDepth),
		free:   make(chan []byte, outQueueDepth),
		done:   make(chan struct{}),
		stop:   stop,
	}
	go q.write()
	return q
}

// write is the writer goroutine.
func (q *outQueue) write() {
	defer close(q.done)
	for item := range q.filled {
		if item.synced != nil {
			close(item.synced)
			continue
		}
		if q.Err() == nil {
			if _, err := q.w.Write(item.buf); err != nil {
				q.mu.Lock()
				q.err = err
				q.mu.Unlock()
				q.stop()
			}
		}
		select {
		case q.free <- item.buf:
		default:
		}
	}
}

// Err returns the error of the first write that failed, if any.
func (q *outQueue) Err() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.err
}

// Write queues a copy of p. It blocks while outQueueDepth buffers wait.
func (q *outQueue) Write(p []byte) (int, error) {
	if err := q.Err(); err != nil {
		return 0, err
	}
	var buf []byte
	select {
	case buf = <-q.free:
	default:
	}
	q.filled <- queued{buf: append(buf[:0], p...)}
	return len(p), nil
}

// Sync waits until everything queued so far is written, and returns the
// error of a failed write.
func (q *outQueue) Sync() error {
	synced := make(chan struct{})
	q.filled <- queued{synced: synced}
	<-synced
	return q.Err()
}

// Close writes what is queued and ends the writer goroutine.
func (q *outQueue) Close() error {
	close(q.filled)
	<-q.done
	return q.Err()
}
