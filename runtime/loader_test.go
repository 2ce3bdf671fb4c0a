package runtime

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gotrace/gotrace/internal/testenv"
)

// dlopenSources are a library with a semaphore-guarded probe lib:hit and a
// program that fires lib:start, then loads the library named by its first
// argument with dlopen and fires lib:hit as often as its second says.
var dlopenSources = map[string]string{
	"lib.c": `#define _SDT_HAS_SEMAPHORES 1
#include <sys/sdt.h>
unsigned short lib_hit_semaphore __attribute__((section(".probes")));
void fire(int n)
{
	for (int i = 0; i < n; i++)
		if (lib_hit_semaphore)
			STAP_PROBE1(lib, hit, i);
}
`,
	"main.c": `#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/sdt.h>
int main(int argc, char **argv)
{
	STAP_PROBE(lib, start);
	void *h = dlopen(argv[1], RTLD_NOW);
	if (h == NULL) {
		fprintf(stderr, "%s\n", dlerror());
		return 1;
	}
	void (*fire)(int) = (void (*)(int))dlsym(h, "fire");
	fire(atoi(argv[2]));
	return 0;
}
`,
}

// buildDlopen builds the programs of dlopenSources into a temporary
// directory and returns the paths of the program and the library.
func buildDlopen(t *testing.T) (loader, lib string) {
	t.Helper()
	dir := t.TempDir()
	lib = buildC(t, dir, "libprobe.so", dlopenSources["lib.c"], "-shared", "-fPIC")
	loader = buildC(t, dir, "loader", dlopenSources["main.c"], "-ldl")
	return loader, lib
}

// buildC compiles the C source src with gcc -O2 and flags into dir/name
// and returns its path.
func buildC(t *testing.T, dir, name, src string, flags ...string) string {
	t.Helper()
	testenv.RequireTool(t, "gcc")
	file := filepath.Join(dir, name+".c")
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, name)
	args := append([]string{"-O2", "-o", out, file}, flags...)
	if b, err := exec.Command("gcc", args...).CombinedOutput(); err != nil {
		testenv.Unavailable(t, "gcc %v: %v\n%s", args, err, b)
	}
	return out
}

// TestRunCommandLoadsLibraryLater traces, without a path, a probe of a
// library the -c command loads with dlopen, next to one of the command
// itself: the loader program stops the command when the dynamic loader
// has mapped the library, the runtime attaches to its probes, and every
// hit is counted. "Attaching N probes..." counts an attach point that
// waits for the library as one probe, and gotrace's own sites (the
// family's tracepoints, the loader's uprobe: plan.Plan.Own) as none.
func TestRunCommandLoadsLibraryLater(t *testing.T) {
	testenv.RequireRoot(t)
	loader, lib := buildDlopen(t)
	for _, tt := range []struct {
		name, src string
		want      []string
	}{
		{"library only", `usdt::lib:hit { @ = count(); @sum = sum(arg0); }`,
			[]string{"Attaching 1 probe...", "@: 50", "@sum: 1225"}},
		{"executable and library", `usdt::lib:* { @[probe] = count(); }`, []string{
			"Attaching 1 probe...", "@[usdt:" + loader + ":lib:start]: 1", "@[usdt:" + lib + ":lib:hit]: 50"}},
		{"with and without the path", `usdt:` + lib + `:lib:hit { @path = count(); } usdt::lib:hit { @nopath = count(); }`,
			[]string{"Attaching 2 probes...", "@path: 50", "@nopath: 50"}},
		// The library's programs join maps made at start, which are laid
		// out for what they do: records, loops, exit().
		{"printf in the library", `usdt::lib:hit /arg0 < 3/ { printf("hit %d\n", arg0); }`,
			[]string{"hit 0", "hit 1", "hit 2"}},
		{"loop in the library", `usdt::lib:hit { $i = 0; while ($i < 2) { $i++; } @loops = sum($i); }`,
			[]string{"@loops: 100"}},
		{"exit in the library", `usdt::lib:hit /arg0 == 3/ { printf("last %d\n", arg0); exit(); }`,
			[]string{"last 3"}},
		{"records at start, none in the library", `usdt::lib:start { printf("start\n"); } usdt::lib:hit { @ = count(); }`,
			[]string{"start", "@: 50"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			out, stderr, err := runScript(t, ctx, tt.src, Options{Command: loader + " " + lib + " 50"})
			if err != nil {
				t.Fatalf("%v\n%s", err, stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w+"\n") {
					t.Errorf("output has no line %q:\n%s", w, out)
				}
			}
			checkNoBPFFiles(t)
		})
	}
	// A probe name that neither the command nor its libraries have.
	_, stderr, err := runScript(t, context.Background(), `usdt::lib:hti { @ = count(); }`, Options{Command: loader + " " + lib + " 5", Quiet: true})
	if err != nil || !strings.Contains(stderr, "WARNING: usdt probe lib:hti was not found in the objects the command loaded\n") {
		t.Errorf("err %v, stderr %q: want a warning", err, stderr)
	}
}

// TestOwnSiteFails runs a -c trace whose command names a dynamic loader
// without _dl_debug_state (a shared object of its own as its
// interpreter): the plan watches its library loads for a usdt probe
// without a path, and attaching gotrace's own uprobe there fails after
// the family's tracepoints were attached in the same pass. The run ends
// with the error, every link and program closed (runScript checks) and
// the command, which never left its gate, ended.
func TestOwnSiteFails(t *testing.T) {
	testenv.RequireRoot(t)
	dir := t.TempDir()
	interp := buildC(t, dir, "fakeld.so", "int not_the_loader(void) { return 0; }\n", "-shared", "-fPIC")
	cmd := buildC(t, dir, "held", "int main(void) { return 0; }\n", "-Wl,--dynamic-linker="+interp)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_, stderr, err := runScript(t, ctx, `usdt::lib:hit { @ = count(); }`, Options{Command: cmd, Quiet: true})
	if err == nil || !strings.Contains(err.Error(), "watch the loads of "+cmd) || !strings.Contains(err.Error(), "_dl_debug_state") {
		t.Fatalf("err %v, stderr %q: want the loader's uprobe refused", err, stderr)
	}
	// Held at its gate, the command has not run its own file yet: it is
	// found as a child of this process.
	procs, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range procs {
		stat, err := os.ReadFile(filepath.Join("/proc", p.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: the comm may hold spaces.
		fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(fields) > 1 && fields[1] == strconv.Itoa(os.Getpid()) {
			t.Errorf("process %s, a child of the test, is still there: %s", p.Name(), bytes.TrimSpace(stat))
		}
	}
}
