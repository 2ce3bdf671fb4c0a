package runtime

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gotrace/gotrace/internal/testenv"
)

// shortLivedLibrary is a shared library with one function a uprobe
// fires in; shortLivedMain calls it once through run_once and exits at
// once, long before a periodic read of /proc/PID/maps could see it.
const (
	shortLivedLibrary = `__attribute__((noinline)) int short_hit(int n) { return n * 3 + 1; }
`
	shortLivedMain = `int short_hit(int n);
__attribute__((noinline)) int run_once(int n) { return short_hit(n) + 1; }
int main(void) { return run_once(1) == 5 ? 0 : 1; }
`
)

// buildShortLived builds shortLivedMain, linked against shortLivedLibrary
// (found through its rpath), into a temporary directory, and returns the
// program and the library.
func buildShortLived(t *testing.T) (bin, lib string) {
	t.Helper()
	cc := testenv.RequireTool(t, "cc")
	dir := t.TempDir()
	lib, bin = filepath.Join(dir, "libshortlived.so"), filepath.Join(dir, "shortlived")
	for name, text := range map[string]string{"lib.c": shortLivedLibrary, "main.c": shortLivedMain} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{
		{"-O0", "-shared", "-fPIC", "-o", lib, filepath.Join(dir, "lib.c")},
		{"-O0", "-o", bin, filepath.Join(dir, "main.c"), "-L" + dir, "-lshortlived", "-Wl,-rpath," + dir},
	} {
		if out, err := exec.Command(cc, args...).CombinedOutput(); err != nil {
			t.Fatalf("cc %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	return bin, lib
}

// TestRunShortLivedStackNames traces a -c program that exits right after
// its probes fire, with stacks and symbols only in map keys: the maps,
// printed after it exited, name frames of both the program and its
// library, from the mappings the kernel's records told while it ran.
func TestRunShortLivedStackNames(t *testing.T) {
	testenv.RequireRoot(t)
	bin, lib := buildShortLived(t)
	src := "uprobe:" + lib + `:short_hit { @stack[ustack] = count(); @lib[usym(reg("ip"))] = count(); }
uprobe:` + bin + `:run_once { @exe[usym(reg("ip"))] = count(); }`
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	out, stderr, err := runScript(t, ctx, src, Options{Command: bin, Quiet: true})
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, stderr)
	}
	for _, want := range []string{
		"@exe[run_once]: 1\n",
		"@lib[short_hit]: 1\n",
		// The library's frame, then the program's.
		"@stack[\n    short_hit+0\n    run_once+",
		"\n    main+",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output has no %q:\n%s", want, out)
		}
	}
	if strings.Contains(stderr, "WARNING") {
		t.Errorf("stderr warns:\n%s", stderr)
	}
}

// TestRunReusedPIDStacks traces the short-lived program system-wide, runs
// it, and gives its pid to a run of the same program from another path
// (a link: the uprobe fires in both) through ns_last_pid: the map,
// printed after both exited, names every frame of both stacks, the first
// process's through its own mappings, not those of the process that had
// its pid last (whose code ASLR put elsewhere).
func TestRunReusedPIDStacks(t *testing.T) {
	testenv.RequireRoot(t)
	bin, lib := buildShortLived(t)
	other := filepath.Join(filepath.Dir(bin), "other")
	if err := os.Link(bin, other); err != nil {
		t.Fatalf("link %s: %v", other, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	attached := make(chan struct{})
	type result struct {
		out, stderr string
		err         error
	}
	done := make(chan result, 1)
	go func() {
		out, stderr, err := runScript(t, ctx, "uprobe:"+lib+":short_hit { @[ustack] = count(); }",
			Options{Quiet: true, Attached: func() { close(attached) }})
		done <- result{out, stderr, err}
	}()
	select {
	case <-attached:
	case r := <-done:
		t.Fatalf("the trace ended before it attached: %v\n%s", r.err, r.stderr)
	case <-ctx.Done():
		t.Fatal("the trace did not attach in 120 s")
	}
	first := exec.Command(bin)
	if err := first.Run(); err != nil {
		cancel()
		t.Fatalf("run %s: %v", bin, err)
	}
	testenv.TakePID(t, first.Process.Pid, func() int {
		cmd := exec.Command(other)
		if err := cmd.Run(); err != nil {
			t.Errorf("run %s: %v", other, err)
		}
		return cmd.Process.Pid
	})
	// The end of the trace, as Ctrl-C ends it: the maps print.
	cancel()
	r := <-done
	if r.err != nil && ctx.Err() == nil {
		t.Fatalf("Run: %v\n%s", r.err, r.stderr)
	}
	stacks := strings.Count(r.out, "@[")
	if stacks < 2 || strings.Contains(r.out, "0x") || strings.Count(r.out, "short_hit+0") != stacks {
		t.Errorf("want every frame of at least 2 stacks named, got:\n%s\n%s", r.out, r.stderr)
	}
}
