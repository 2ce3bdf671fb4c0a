package symbols

import (
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/gotrace/gotrace/internal/testenv"
	"github.com/gotrace/gotrace/usdt"
)

// echoSource is a C program that echoes its standard input, as the test
// binary's echo does, from a function of its own: its frames have a name
// in its symbol table.
const echoSource = `#include <unistd.h>
__attribute__((noinline)) int echo_loop(void) {
	char b[256];
	ssize_t n;
	while ((n = read(0, b, sizeof b)) > 0)
		if (write(1, b, n) != n)
			return 1;
	return 0;
}
int main(void) { return echo_loop(); }
`

// buildEcho compiles echoSource into a temporary directory and returns
// the program's path.
func buildEcho(t *testing.T) string {
	t.Helper()
	gcc := testenv.RequireTool(t, "gcc")
	dir := t.TempDir()
	src, bin := filepath.Join(dir, "echo.c"), filepath.Join(dir, "echo")
	if err := os.WriteFile(src, []byte(echoSource), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(gcc, "-O1", "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	return bin
}

// TestCacheBound runs many short-lived processes, each from a path of
// its own, under a bound of its libraries and three of their files'
// symbol tables: the bytes kept stay within it, and the frames of a live
// process and of the process that exited last are still named.
func TestCacheBound(t *testing.T) {
	echo := buildEcho(t)
	live, livePID := startEchoAt(t, echo, "")
	liveAddr := symbolAddress(t, echo, livePID, "echo_loop")
	s := New(0, nil, &usdt.Files{})
	if !s.Capture(livePID) {
		t.Fatalf("Capture(%d) of a running process failed", livePID)
	}
	s.mu.Lock()
	all, own := s.cache.bytes, s.cache.entries[echo].bytes
	s.mu.Unlock()
	limit := all + 3*own
	s.SetCacheLimit(limit)
	dir := t.TempDir()
	var lastPID int
	var lastAddr uint64
	for i := range 20 {
		path := filepath.Join(dir, fmt.Sprintf("short%02d", i))
		if err := os.Link(echo, path); err != nil {
			t.Fatalf("link %s: %v", path, err)
		}
		e, pid := startEchoAt(t, path, "")
		if !s.Capture(pid) {
			t.Fatalf("Capture(%d) of a running process failed", pid)
		}
		lastPID, lastAddr = pid, symbolAddress(t, path, pid, "echo_loop")
		stopEcho(t, e)
		if n := s.CacheBytes(); n > limit {
			t.Fatalf("after %d processes the symbol cache holds %d bytes, above its bound %d", i+1, n, limit)
		}
	}
	s.mu.Lock()
	kept := len(s.cache.entries)
	s.mu.Unlock()
	if kept > 3+len(ProcessMappings(livePID)) {
		t.Errorf("%d files kept after 20 short-lived processes", kept)
	}
	for _, tc := range []struct {
		what string
		pid  int
		addr uint64
	}{{"the live process", livePID, liveAddr}, {"the process that exited last", lastPID, lastAddr}} {
		sym, _, ok := s.UserFrames(tc.pid)(tc.addr)
		if !ok || sym != "echo_loop+0" {
			t.Errorf("%s (%d): frame %#x named %q, %v; want echo_loop+0", tc.what, tc.pid, tc.addr, sym, ok)
		}
	}
	stopEcho(t, live)
}

// symbolAddress returns where running process pid has the code of
// function name of its file path: the symbol's file offset in the
// mapping that holds it.
func symbolAddress(t *testing.T, path string, pid int, name string) uint64 {
	t.Helper()
	f, err := usdt.OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	funcs, err := f.PlainFunctions()
	if err != nil {
		t.Fatalf("read the functions of %s: %v", path, err)
	}
	i := slices.IndexFunc(funcs, func(sym elf.Symbol) bool { return sym.Name == name })
	if i < 0 {
		t.Fatalf("no function %s in %s", name, path)
	}
	for _, p := range f.Loads() {
		if v := funcs[i].Value; v >= p.Vaddr && v < p.Vaddr+p.Filesz {
			off := v - p.Vaddr + p.Off
			for _, m := range ProcessMappings(pid) {
				if m.Path == path && off >= m.Offset && off < m.Offset+(m.End-m.Start) {
					return m.Start + off - m.Offset
				}
			}
		}
	}
	t.Fatalf("process %d maps no part of %s holding %s", pid, path, name)
	return 0
}
