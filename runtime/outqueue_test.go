package runtime

import (
	"bytes"
	"errors"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
)

// failingWriter keeps what it is given until its limit, then fails.
type failingWriter struct {
	bytes.Buffer
	limit int
}

func (w *failingWriter) Write(p []byte) (int, error) {
	if w.Len()+len(p) > w.limit {
		return 0, syscall.EPIPE
	}
	return w.Buffer.Write(p)
}

func TestOutQueue(t *testing.T) {
	tests := []struct {
		name   string
		limit  int
		writes int
		want   error
	}{
		{"everything written in order", 1 << 30, 10 * outQueueDepth, nil},
		{"a failed write ends it", 100, 10 * outQueueDepth, syscall.EPIPE},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := &failingWriter{limit: tt.limit}
			var stops atomic.Int32
			q := newOutQueue(w, func() { stops.Add(1) })
			var want strings.Builder
			buf := []byte{}
			for i := range tt.writes {
				buf = append(buf[:0], strings.Repeat("x", i%7)...)
				buf = append(buf, '\n')
				want.Write(buf)
				// The queue copies: the caller reuses its buffer.
				if _, err := q.Write(buf); err != nil {
					break
				}
			}
			err := q.Sync()
			if !errors.Is(err, tt.want) {
				t.Fatalf("Sync: %v, want %v", err, tt.want)
			}
			if err := q.Close(); !errors.Is(err, tt.want) {
				t.Fatalf("Close: %v, want %v", err, tt.want)
			}
			if tt.want == nil {
				if w.String() != want.String() {
					t.Errorf("wrote %d bytes, not the %d queued in order", w.Len(), want.Len())
				}
				if stops.Load() != 0 {
					t.Errorf("stop called %d times without an error", stops.Load())
				}
				return
			}
			if !strings.HasPrefix(want.String(), w.String()) || w.Len() > tt.limit {
				t.Errorf("wrote %q, not a prefix of what was queued", w.String())
			}
			if stops.Load() != 1 {
				t.Errorf("stop called %d times, want once", stops.Load())
			}
		})
	}
}
