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
// in the map printed after it exited, live and in a replay of a -w
// capture; and the three hits of one chain are one key of @[ustack]
// counted 3, aggregated in the kernel.
func TestRunCxxStackEhFrame(t *testing.T) {
	testenv.RequireRoot(t)
	bin := buildCxxChain(t, "-fomit-frame-pointer")
	const hits = 3
	for _, capture := range []bool{false, true} {
		t.Run(fmt.Sprintf("capture=%v", capture), func(t *testing.T) {
			out := traceEhChain(t, bin, hits, capture)
			live, maps, ok := strings.Cut(out, "\n\n\n")
			if !ok {
				t.Fatalf("output %q has no maps after the stacks", out)
			}
			stacks := strings.Split(strings.TrimSuffix(live, "|"), "|\n")
			if len(stacks) != hits {
				t.Errorf("%d stacks printed, want %d:\n%s", len(stacks), hits, live)
			}
			for _, stack := range stacks {
				// len(ustack) counts the frames the walk stored.
				var n int
				head, frames, _ := strings.Cut(stack, "\n")
				if _, err := fmt.Sscanf(head, "%d frames", &n); err != nil {
					t.Fatalf("stack %q does not start with len(ustack): %v", stack, err)
				}
				names := stackFunctions(t, frames, "        ")
				if n != len(names) {
					t.Errorf("len(ustack) = %d, but the stack printed has %d frames", n, len(names))
				}
				checkEhChain(t, "while running", names)
			}
			key, ok := strings.CutPrefix(maps, "@[\n")
			if key, ok = strings.CutSuffix(key, fmt.Sprintf("]: %d\n", hits)); !ok || strings.Contains(key, "@[") {
				t.Fatalf("maps %q: want one stack counted %d times", maps, hits)
			}
			checkEhChain(t, "after exit", stackFunctions(t, key, "    "))
		})
	}
}

// traceEhChain runs cxxchain at bin under -c with stack_unwind=eh_frame,
// printing its ustack at each of hits runs of its chain and counting them
// in @[ustack], and returns what the trace printed (with capture, what
// the replay of its -w capture printed).
func traceEhChain(t *testing.T, bin string, hits int, capture bool) string {
	t.Helper()
	fifo, release := cxxChainFIFO(t)
	command := fmt.Sprintf("%s %s %d", bin, fifo, hits)
	src := fmt.Sprintf(`usdt:%s:cxxchain:bottom { printf("%%d frames%%s|\n", len(ustack), ustack); @[ustack] = count(); }`, bin)
	eh := settings.Values{StackUnwind: settings.UnwindEhFrame}
	p, info := checkScript(t, src, lang.Config{Values: eh, Child: true, Host: NewHost(0, command)})
	out := newWatchedBuffer(func(s string) bool { return strings.Count(s, "|\n") == hits })
	// The program waits for a byte before each run of its chain: they
	// are sent once the walk has its mappings (the trace says so under
	// -v), which it learns from the kernel's records after the command
	// executed.
	errOut := newWatchedBuffer(func(s string) bool {
		for _, line := range strings.Split(s, "\n") {
			if strings.HasPrefix(line, "unwind: process ") && strings.Contains(line, " maps cxxchain") && strings.Contains(line, "libc.so") {
				return true
			}
		}
		return false
	})
	opts := Options{Values: eh, Command: command, Quiet: true, Verbose: true, Out: out, Err: errOut}
	// A capture holds the stacks' names as the trace read them, each
	// stack's in its own record: the last frame's name in it hits times
	// says the records were handled. (Once was taken for all of them, and
	// the program was let go while the others waited to be read.)
	captured := newWatchedBuffer(func(s string) bool { return strings.Count(s, "__libc_start_call_main") >= hits })
	handled := out
	if capture {
		opts.Capture, handled = captured, captured
	}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- Run(ctx, p, info, opts) }()
	errOut.await(t, "mappings of cxxchain with libc", done)
	if err := writeFIFO(fifo, strings.Repeat("g", hits)); err != nil {
		t.Fatalf("let cxxchain run: %v", err)
	}
	handled.await(t, "the stacks handled", done, errOut)
	release()
	awaitRunEnd(t, done, out, errOut)
	if !capture {
		return out.String()
	}
	replay, err := replayed([]byte(captured.String()), "text")
	if err != nil {
		t.Fatalf("replay: %v", err)
	}
	return replay
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
