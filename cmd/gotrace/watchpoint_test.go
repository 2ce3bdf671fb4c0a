package main

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gotrace/gotrace/internal/capability"
	"github.com/gotrace/gotrace/internal/fixture"
	"github.com/gotrace/gotrace/internal/testenv"
	"github.com/gotrace/gotrace/usdt"
)

// buildWatchTarget builds testdata/watchpoint/watch.c without PIE into a
// temporary directory and returns its path and the addresses of its
// counter variable and bump function.
func buildWatchTarget(t *testing.T) (bin string, counter, bump uint64) {
	t.Helper()
	gcc := testenv.RequireTool(t, "gcc")
	bin = filepath.Join(t.TempDir(), "watch")
	if out, err := exec.Command(gcc, "-O2", "-no-pie", "-o", bin, "testdata/watchpoint/watch.c", "-lpthread").CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	f, err := usdt.OpenFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sym, ok := f.ObjectSymbol("counter")
	fns, err := f.FunctionSymbols()
	if !ok || err != nil {
		t.Fatalf("%s: no counter symbol, or functions: %v", bin, err)
	}
	for _, fn := range fns {
		if fn.Name == "bump" {
			bump = fn.Value
		}
	}
	if bump == 0 {
		t.Fatalf("%s has no bump function", bin)
	}
	return bin, sym.Value, bump
}

// TestWatchpointCommand runs write and execute watchpoints on a -c
// command under bpftrace 0.17 and gotrace: the same lines, hit for hit.
// The command's counter is written three times by bump; before that, the
// kernel's zeroing of the rest of the counter's page during exec fires the
// write watchpoint eight times (the first reads see what the page held), as
// the event is attached before the command execs. On a machine that does
// not deliver hardware breakpoints both tools attach and print no hit:
// gotrace warns why, and the test skips showing what each printed.
func TestWatchpointCommand(t *testing.T) {
	testenv.RequireRoot(t)
	bpftrace := testenv.RequireBpftrace(t)
	gotrace := buildGotrace(t)
	bin, counter, bump := buildWatchTarget(t)
	script := fmt.Sprintf(`watchpoint:%#[1]x:8:w { printf("w %%d\n", *(int64*)%#[1]x); }
w:%#[2]x:8:x { printf("x\n"); }
END { printf("end\n"); }`, counter, bump)
	args := []string{"-c", bin, "-e", script}
	want := runTool(bpftrace, t.TempDir(), args)
	got := runTool(gotrace, t.TempDir(), args)
	for _, r := range []toolResult{want, got} {
		if r.Err != nil || r.Code != 0 {
			t.Fatalf("run: %v, exit %d\nstdout:\n%s\nstderr:\n%s", r.Err, r.Code, r.Stdout, r.Stderr)
		}
	}
	var s fixture.Script
	if msg := lineDiff("stdout", s.CompareLines(want.Stdout), s.CompareLines(got.Stdout)); msg != "" {
		t.Errorf("gotrace differs from bpftrace:\n%s", msg)
	}
	warning := fmt.Sprintf("WARNING: watchpoint:%#x:8:w: the probe will not fire: hardware breakpoints attach on this machine but are not delivered", counter)
	if bp := capability.Of(capability.Breakpoints); !bp.Available {
		if !strings.Contains(got.Stderr, warning) {
			t.Errorf("gotrace's stderr:\n%s\nwant the warning %q", got.Stderr, warning)
		}
		quiet := runTool(gotrace, t.TempDir(), append([]string{"--no-warnings"}, args...))
		if quiet.Err != nil || quiet.Code != 0 || strings.Contains(quiet.Stderr, "WARNING") {
			t.Errorf("with --no-warnings: %v, exit %d, stderr:\n%s\nwant no warning", quiet.Err, quiet.Code, quiet.Stderr)
		}
		hits := func(out string) int { return strings.Count(out, "\nw ") + strings.Count(out, "\nx\n") }
		testenv.RequireCapability(t, capability.Breakpoints,
			fmt.Sprintf("bpftrace 0.17 printed %d hits (%q), gotrace %d (%q) and warned", hits(want.Stdout), want.Stdout, hits(got.Stdout), got.Stdout))
	}
	if strings.Contains(got.Stderr, "WARNING") {
		t.Errorf("gotrace warned where breakpoints are delivered:\n%s", got.Stderr)
	}
	tail := "x\nw 1\nx\nw 2\nx\nw 3\nend\n"
	if !strings.HasPrefix(got.Stdout, "Attaching 3 probes...\n") || !strings.Contains(got.Stdout, tail) {
		t.Errorf("gotrace printed\n%s\nwant the header and then, after exec's writes,\n%s", got.Stdout, tail)
	}
}

// TestWatchpointProcessThreads watches a -p process whose writes come from
// a second thread: gotrace watches every thread the process has, where
// bpftrace 0.17 watches only the main thread and never fires here. An
// address the process does not map is refused first, on any machine.
func TestWatchpointProcessThreads(t *testing.T) {
	testenv.RequireRoot(t)
	gotrace := buildGotrace(t)
	bin, counter, _ := buildWatchTarget(t)
	target := exec.Command(bin, "thread")
	if err := target.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		target.Process.Kill()
		target.Wait()
	})
	// An address the process does not map is refused before anything is
	// loaded; bpftrace 0.17 attaches a watchpoint that never fires.
	r := runTool(gotrace, t.TempDir(), []string{"-p", fmt.Sprint(target.Process.Pid), "-e", "w:0x1000:8:w { }"})
	want := fmt.Sprintf("stdin:1:1-13: ERROR: address 0x1000 is not mapped in process %d\n", target.Process.Pid)
	if r.Code != 1 || r.Stdout != "" || !strings.HasPrefix(r.Stderr, want) {
		t.Errorf("unmapped address: exit %d, stdout %q, stderr %q; want exit 1 and %q", r.Code, r.Stdout, r.Stderr, want)
	}

	testenv.RequireCapability(t, capability.Breakpoints)
	script := fmt.Sprintf(`watchpoint:%#x:8:w { printf("write by %%s\n", comm); exit(); }`, counter)
	r = runTool(gotrace, t.TempDir(), []string{"-p", fmt.Sprint(target.Process.Pid), "-e", script})
	if r.Err != nil || r.Code != 0 {
		t.Fatalf("run: %v, exit %d\nstdout:\n%s\nstderr:\n%s", r.Err, r.Code, r.Stdout, r.Stderr)
	}
	if want := "Attaching 1 probe...\nwrite by watch\n\n\n"; r.Stdout != want {
		t.Errorf("stdout %q, want %q", r.Stdout, want)
	}
}

// TestWatchpointUnmappedCommand refuses a watchpoint outside the segments
// of a non-PIE -c command before the command runs.
func TestWatchpointUnmappedCommand(t *testing.T) {
	gotrace := buildGotrace(t)
	bin, _, _ := buildWatchTarget(t)
	r := runTool(gotrace, t.TempDir(), []string{"-c", bin, "-e", "w:0x1000:8:w { }"})
	want := fmt.Sprintf("stdin:1:1-13: ERROR: address 0x1000 is not in a segment of %s, which the command maps at fixed addresses\n", bin)
	if r.Code != 1 || r.Stdout != "" || !strings.HasPrefix(r.Stderr, want) {
		t.Errorf("exit %d, stdout %q, stderr %q; want exit 1 and %q", r.Code, r.Stdout, r.Stderr, want)
	}
}

// TestWatchpointCommandThreads watches a -c command whose writes come from
// a thread it starts after the trace began: the thread inherits the
// watchpoint (bpftrace 0.17 watches only the main thread and never fires).
func TestWatchpointCommandThreads(t *testing.T) {
	testenv.RequireRoot(t)
	testenv.RequireCapability(t, capability.Breakpoints)
	gotrace := buildGotrace(t)
	bin, counter, _ := buildWatchTarget(t)
	script := fmt.Sprintf(`watchpoint:%#x:8:w /tid != pid/ { printf("write by another thread of %%s\n", comm); exit(); }`, counter)
	r := runTool(gotrace, t.TempDir(), []string{"-c", bin + " thread", "-e", script})
	if r.Err != nil || r.Code != 0 {
		t.Fatalf("run: %v, exit %d\nstdout:\n%s\nstderr:\n%s", r.Err, r.Code, r.Stdout, r.Stderr)
	}
	if want := "Attaching 1 probe...\nwrite by another thread of watch\n\n\n"; r.Stdout != want {
		t.Errorf("stdout %q, want %q", r.Stdout, want)
	}
}
