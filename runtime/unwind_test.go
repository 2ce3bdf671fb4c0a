package runtime

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gotrace/gotrace/internal/settings"
	"github.com/gotrace/gotrace/internal/testenv"
	"github.com/gotrace/gotrace/lang"
)

// ehChainFrames are the functions of cxxchain's stack at its probe as the
// eh_frame walk finds them: every caller, reach too (a frame-pointer walk
// misses it, see cxxChainFrames), down to main and the C library's start.
var ehChainFrames = slices.Concat(cxxChainFrames[:1], []string{"chain::detail::reach(int)"}, cxxChainFrames[1:], []string{"__libc_start_call_main"})

// watchedBuffer is an output that closes seen when its text first
// satisfies seen's condition.
type watchedBuffer struct {
	mu   sync.Mutex
	buf  strings.Builder
	cond func(string) bool
	seen chan struct{}
}

func newWatchedBuffer(cond func(string) bool) *watchedBuffer {
	return &watchedBuffer{cond: cond, seen: make(chan struct{})}
}

func (b *watchedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n, err := b.buf.Write(p)
	if b.cond != nil && b.cond(b.buf.String()) {
		close(b.seen)
		b.cond = nil
	}
	return n, err
}

func (b *watchedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// await waits for b's condition, failing t with what it is after timeout,
// or when done says the trace ended first.
func (b *watchedBuffer) await(t *testing.T, what string, done <-chan error, others ...fmt.Stringer) {
	t.Helper()
	select {
	case <-b.seen:
	case err := <-done:
		t.Fatalf("the trace ended (%v) before %s:\n%s%v", err, what, b, others)
	case <-time.After(60 * time.Second):
		t.Fatalf("no %s in 60 s:\n%s%v", what, b, others)
	}
}

// TestRunCxxStackEhFrame traces cxxchain built without frame pointers
// under stack_unwind=eh_frame: each ustack reaches every frame of the
// chain, main and the C library's start, named while the program runs and
// in the map printed after it exited; and the three hits of one chain are
// one key of @[ustack] counted 3, aggregated in the kernel.
func TestRunCxxStackEhFrame(t *testing.T) {
	testenv.RequireRoot(t)
	bin := buildCxxChain(t, "-fomit-frame-pointer")
	fifo, release := cxxChainFIFO(t)
	const hits = 3
	command := fmt.Sprintf("%s %s %d", bin, fifo, hits)
	src := fmt.Sprintf(`usdt:%s:cxxchain:bottom { printf("%%s|\n", ustack); @[ustack] = count(); }`, bin)
	eh := settings.Values{StackUnwind: settings.UnwindEhFrame}
	p, info := checkScript(t, src, lang.Config{Values: eh, Child: true, Host: NewHost(0, command)})
	out := newWatchedBuffer(func(s string) bool { return strings.Count(s, "|\n") == hits })
	// The program waits for a byte before each run of its chain: the
	// first is sent once the walk has its mappings (the trace says so
	// under -v), which it learns from the kernel's records after the
	// command executed.
	errOut := newWatchedBuffer(func(s string) bool {
		for _, line := range strings.Split(s, "\n") {
			if strings.HasPrefix(line, "unwind: process ") && strings.Contains(line, " maps cxxchain") && strings.Contains(line, "libc.so") {
				return true
			}
		}
		return false
	})
	opts := Options{Values: eh, Command: command, Quiet: true, Verbose: true, Out: out, Err: errOut}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- Run(ctx, p, info, opts) }()
	errOut.await(t, "mappings of cxxchain with libc", done)
	if err := writeFIFO(fifo, strings.Repeat("g", hits)); err != nil {
		t.Fatalf("let cxxchain run: %v", err)
	}
	out.await(t, fmt.Sprintf("%d stacks printed", hits), done, errOut)
	release()
	awaitRunEnd(t, done, out, errOut)
	live, maps, ok := strings.Cut(out.String(), "\n\n\n")
	if !ok {
		t.Fatalf("output %q has no maps after the stacks", out)
	}
	for _, stack := range strings.Split(strings.TrimSuffix(live, "|"), "|\n") {
		checkEhChain(t, "while running", stackFunctions(t, stack, "        "))
	}
	key, ok := strings.CutPrefix(maps, "@[\n")
	if key, ok = strings.CutSuffix(key, fmt.Sprintf("]: %d\n", hits)); !ok || strings.Contains(key, "@[") {
		t.Fatalf("maps %q: want one stack counted %d times", maps, hits)
	}
	checkEhChain(t, "after exit", stackFunctions(t, key, "    "))
}

// awaitRunEnd waits for Run to end with no error once the traced program
// was let go, failing t with out and errOut otherwise.
func awaitRunEnd(t *testing.T, done <-chan error, out, errOut fmt.Stringer) {
	t.Helper()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v\n%s", err, errOut)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("the trace did not end in 60 s after the program was let go:\n%s%s", out, errOut)
	}
}

// writeFIFO writes text to the FIFO a program holds open.
func writeFIFO(fifo, text string) error {
	f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("open fifo: %w", err)
	}
	defer f.Close()
	if _, err := f.WriteString(text); err != nil {
		return fmt.Errorf("write fifo: %w", err)
	}
	return nil
}

// checkEhChain checks that the functions of a stack walked with eh_frame
// rules start with ehChainFrames.
func checkEhChain(t *testing.T, when string, got []string) {
	t.Helper()
	if len(got) < len(ehChainFrames) || strings.Join(got[:len(ehChainFrames)], "\n") != strings.Join(ehChainFrames, "\n") {
		t.Errorf("ustack %s names\n%s\nwant it to start with\n%s", when, strings.Join(got, "\n"), strings.Join(ehChainFrames, "\n"))
	}
}
