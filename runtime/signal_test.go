package runtime

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gotrace/gotrace/internal/testenv"
	"github.com/gotrace/gotrace/lang"
)

// waitOutput waits until out holds want, or fails t after 10 s.
func waitOutput(t *testing.T, out *syncBuffer, want string, done <-chan error) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if out.String() == want {
			return
		}
		select {
		case err := <-done:
			t.Fatalf("Run ended (%v) with output %q, want %q", err, out, want)
		default:
		}
	}
	t.Fatalf("output %q, want %q", out, want)
}

// TestRunSIGUSR1 sends SIGUSR1 to the test process while Run traces: each
// prints every map, without the two newlines of the exit and without
// clearing them, and the trace goes on, as with bpftrace 0.17.
func TestRunSIGUSR1(t *testing.T) {
	testenv.RequireRoot(t)
	p, info := compileScript(t, `BEGIN { @a = 1; @c["x"] = count(); @s = stats(3); }`)
	out, errOut := newSyncBuffer(""), newSyncBuffer("")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- Run(ctx, p, info, Options{Out: out, Err: errOut}) }()
	want := "Attaching 1 probe...\n"
	waitOutput(t, out, want, done)
	maps := "@a: 1\n@c[x]: 1\n@s: count 1, average 3, total 3\n\n"
	for range 2 {
		if err := syscall.Kill(syscall.Getpid(), syscall.SIGUSR1); err != nil {
			t.Fatal(err)
		}
		want += maps
		waitOutput(t, out, want, done)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v\n%s", err, errOut)
	}
	checkNoBPFFiles(t)
	if want += "\n\n" + maps; out.String() != want {
		t.Errorf("output %q, want %q", out, want)
	}
}

// TestRunQuit ends Run with ErrQuit, as SIGQUIT does: no END, no maps,
// everything detached and the -c command stopped.
func TestRunQuit(t *testing.T) {
	testenv.RequireRoot(t)
	p, info := checkScript(t, `BEGIN { printf("go\n"); @a = 1; } END { printf("end\n"); }`, lang.Config{Child: true})
	out, errOut := newSyncBuffer(""), newSyncBuffer("")
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- Run(ctx, p, info, Options{Out: out, Err: errOut, Command: "sleep 60"}) }()
	waitOutput(t, out, "Attaching 2 probes...\ngo\n", done)
	cancel(ErrQuit)
	select {
	case err := <-done:
		if !errors.Is(err, ErrQuit) {
			t.Fatalf("Run: %v, want ErrQuit\n%s", err, errOut)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run still running 10 s after ErrQuit")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Run took %v: the command was not stopped", d)
	}
	checkNoBPFFiles(t)
	if got := out.String(); got != "Attaching 2 probes...\ngo\n" {
		t.Errorf("output %q: want no END and no maps", got)
	}
}

// TestRunStdout puts the two newlines before the maps at exit on Stdout
// when the trace goes to a file (-o), as bpftrace 0.17 does: the JSON file
// holds one object per line and nothing else.
func TestRunStdout(t *testing.T) {
	testenv.RequireRoot(t)
	for _, format := range []string{"text", "json"} {
		var stdout bytes.Buffer
		p, info := compileScript(t, `BEGIN { printf("hello\n"); exit(); } END { @x = 1; }`)
		out := newSyncBuffer("")
		if err := Run(context.Background(), p, info, Options{Out: out, Stdout: &stdout, Format: format}); err != nil {
			t.Fatal(err)
		}
		if stdout.String() != "\n\n" {
			t.Errorf("%s: stdout %q, want two newlines", format, stdout.String())
		}
		want := "Attaching 2 probes...\nhello\n@x: 1\n"
		if format == "json" {
			want = `{"type": "attached_probes", "data": {"probes": 2}}` + "\n" +
				`{"type": "printf", "data": "hello\n"}` + "\n" +
				`{"type": "map", "data": {"@x": 1}}` + "\n"
		}
		if out.String() != want {
			t.Errorf("%s: output %q, want %q", format, out, want)
		}
	}
}

// lineWriter records each Write.
type lineWriter struct {
	mu     sync.Mutex
	writes []string
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writes = append(w.writes, string(p))
	return len(p), nil
}

// TestRunLineBuffered writes each printf line on its own (-B line), where
// the tracer otherwise holds what it reads from a ring buffer in one go.
func TestRunLineBuffered(t *testing.T) {
	testenv.RequireRoot(t)
	p, info := compileScript(t, `BEGIN { printf("a\n"); printf("b\n"); printf("c\n"); exit(); }`)
	var w lineWriter
	if err := Run(context.Background(), p, info, Options{Out: &w, LineBuffered: true}); err != nil {
		t.Fatal(err)
	}
	want := []string{"Attaching 1 probe...\n", "a\n", "b\n", "c\n", "\n\n"}
	if strings.Join(w.writes, "|") != strings.Join(want, "|") {
		t.Errorf("writes %q, want %q", w.writes, want)
	}
}
