package vmtest

import (
	"debug/elf"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gotrace/gotrace/internal/fixture"
	"github.com/gotrace/gotrace/internal/regtest"
	"github.com/gotrace/gotrace/internal/testenv"
)

// hostBpftrace is the host's bpftrace, Debian 12's 0.17 for amd64, which
// the x86-64 guest runs with its shared libraries (HostProgram).
const hostBpftrace = "/usr/bin/bpftrace"

// stderrMark separates a compared case's standard output from its
// standard error in what the guest prints.
const stderrMark = "@@vmtest-stderr"

// A comparison says how the outputs of one case under bpftrace and gotrace
// are compared: the rules of a script header (testdata/scripts/README.md:
// sort, mask, drop), the known differences, and whether bpftrace 0.17
// refuses the script.
type comparison struct {
	header string
	diffs  []knownDiff
	// refused matches bpftrace 0.17's error for a script it cannot run;
	// gotrace's run is then checked by the case's wanted lines alone.
	refused *regexp.Regexp
	// notRun says why bpftrace 0.17 does not run the case at all (it
	// would never fire, and so never exit); gotrace's run is checked by
	// the case's wanted lines alone.
	notRun string
}

// A knownDiff is a known way bpftrace 0.17's output differs from
// gotrace's: what re matches in bpftrace's normalised output (a (?m)
// regexp) is replaced by repl before the comparison, and it must match, so
// that the test says when the difference is gone. docs/compat.md lists
// each by name, and which tool is right.
type knownDiff struct {
	name string
	re   *regexp.Regexp
	repl string
}

// userString is bpftrace 0.17 reading str() of a kprobe argument or a
// kfunc's char * parameter, which point into user memory, as kernel
// memory: on x86-64, whose kernel refuses such a read, the string is
// empty. gotrace prints the file name.
func userString(re, repl string) knownDiff {
	return knownDiff{name: "str() of a user pointer is empty", re: regexp.MustCompile(re), repl: repl}
}

// tracerSelf drops the lines of a system-wide tool that the tracers cause
// themselves, by comm: bpftrace's and gotrace's forked child looking up
// the -c command before it execs (gotrace's first runs itself again
// through a file descriptor, so its comm is that number) and the tracer at
// work. FIELDS is a regexp of the columns before COMM.
func tracerSelf(fields string) string {
	return "// drop: ^" + fields + " +(bpftrace|gotrace|[0-9]+) "
}

// comparisons are the rules for the cases of kernelCases and of the
// watchpoint cases by name; a case not listed compares exactly. The
// workload's own line (cat printing the marker file) comes whenever cat
// runs, before or after the tracer's lines, and is dropped everywhere.
var comparisons = map[string]comparison{
	"kprobe": {diffs: []knownDiff{userString(`(?m)^open -100  1$`, "open -100 "+marker+" 1")}},
	"kfunc": {diffs: []knownDiff{
		userString(`(?m)^open -100 $`, "open -100 "+marker),
		userString(`(?m)^ret  3$`, "ret "+marker+" 3"),
	}},
	"kretprobe": {diffs: []knownDiff{{
		name: "func in a kretprobe is the caller",
		re:   regexp.MustCompile(`(?m)^__x64_sys_openat returned`),
		repl: "do_sys_openat2 returned",
	}}},
	"kfunc-wildcard": {refused: regexp.MustCompile(`ERROR: The func builtin can not be used with 'kfunc' probes`)},
	"list-kfunc": {diffs: []knownDiff{{
		name: "kfunc listed with its module",
		re:   regexp.MustCompile(`(?m)^(k(?:ret)?func):vmlinux:`),
		repl: "$1:",
	}, {
		name: "kfunc -lv lists retval",
		re:   regexp.MustCompile(`(?m)^(kfunc:do_sys_openat2\n(?:    .*\n)*?)    long int retval\n`),
		repl: "$1",
	}}},
	// Counts of every VFS call on the machine while the tracer runs:
	// the functions are compared, not the counts. bpftrace attaches its
	// 72 probes one by one, and the first count its stat calls while it
	// attaches the rest.
	"vfscount": {header: "// sort: lines\n// mask: : [0-9]+$\n// drop: ^@\\[vfs_(fstatat|getattr_nosec|statx)\\]"},
	"vfsstat":  {header: "// mask: ^[0-9:]+$\n// mask: : [0-9]+$"},
	// TIME (ms since start) and PID differ by run; so does the pid cat
	// looks up in /proc.
	"dcsnoop":  {header: tracerSelf("[0-9]+ +[0-9]+") + "\n// mask: ^[0-9]+ +[0-9]+ \n// mask: R [0-9]+$\n// sort: lines"},
	"capable":  {header: tracerSelf("[0-9:]+ +[0-9]+ +[0-9]+") + "\n// mask: ^[0-9:]+ +[0-9]+ +[0-9]+ "},
	"list-vfs": {header: "// sort: lines"},
	// bpftrace 0.17 watches only the -c or -p process's main thread,
	// and the writes here are another thread's.
	"watchpoint-threads": {notRun: "0.17 watches the main thread only"},
	"watchpoint-pid":     {notRun: "0.17 watches the main thread only"},
}

// TestKernelProbesBpftrace runs the kernel probe cases and bpftrace's
// tools in the emulated x86-64 under bpftrace 0.17, carried in from the
// host with its libraries, and under gotrace, and compares their outputs
// line for line, normalised as comparisons says. With the whole suite it
// also runs the watchpoint fixture, whose hardware breakpoints qemu's TCG
// delivers where this machine's CPU does not.
func TestKernelProbesBpftrace(t *testing.T) {
	if !All() {
		t.Skip("the whole VM suite only (GOTRACE_VMTEST=all): bpftrace's libraries make a 200 MiB initramfs")
	}
	Require(t, AMD64)
	bt, err := HostProgram(hostBpftrace)
	if err != nil {
		testenv.Unavailable(t, "bpftrace for the guest: %v", err)
	}
	cs := append(append([]vmCase{}, kernelCases...), watchCases(t)...)
	files := append([]Entry{Gotrace(t, AMD64.Name)}, bt...)
	files = append(files, caseFiles(t, cs)...)
	var cases []Case
	for _, c := range cs {
		tracers := []string{"bpftrace", "gotrace"}
		if comparisons[c.Name].notRun != "" {
			tracers = tracers[1:]
		}
		for _, tracer := range tracers {
			cases = append(cases, Case{
				Name: c.Name + "." + tracer,
				Script: "export PATH=/bin:/usr/bin\n" +
					"{\n" + withTracer(c.Script, tracer) + "\n} 2>/tmp/stderr\nrc=$?\n" +
					"echo " + stderrMark + "\ncat /tmp/stderr\nexit $rc\n",
			})
		}
	}
	b := Start(t, Guest{Arch: AMD64, Files: files, Cases: cases, Memory: 2048, Console: verboseConsole()})
	for _, c := range cs {
		t.Run(c.Name, func(t *testing.T) {
			got := b.Result(t, c.Name+".gotrace")
			gotOut, gotErr, _ := strings.Cut(got.Output, stderrMark+"\n")
			c.check(t, Result{Output: gotOut + gotErr, Exit: got.Exit})
			cmp := comparisons[c.Name]
			if cmp.notRun != "" {
				if t.Failed() {
					t.Logf("script:\n%s\n--- gotrace's stdout\n%s--- its stderr\n%s", c.Script, gotOut, gotErr)
				}
				return
			}
			want := b.Result(t, c.Name+".bpftrace")
			wantOut, wantErr, _ := strings.Cut(want.Output, stderrMark+"\n")
			if cmp.refused != nil {
				if want.Exit == 0 || !cmp.refused.MatchString(wantErr) {
					t.Errorf("bpftrace 0.17 ran the script (exit %d), want its error %v", want.Exit, cmp.refused)
				}
			} else {
				compareOutputs(t, c.Name, cmp, want, got)
			}
			if t.Failed() {
				t.Logf("script:\n%s\n--- bpftrace's stdout\n%s--- its stderr\n%s--- gotrace's stdout\n%s--- its stderr\n%s", c.Script, wantOut, wantErr, gotOut, gotErr)
			}
		})
	}
}

// compareOutputs fails t when the standard outputs of bpftrace's run and
// gotrace's differ, normalised as cmp says, or their exit statuses do.
func compareOutputs(t *testing.T, name string, cmp comparison, want, got Result) {
	t.Helper()
	// The drop comes first: a header ends at its first line that is not
	// one.
	s, err := fixture.ParseHeader(name, "// drop: ^gotrace-vm-marker-text$\n"+cmp.header+"\n")
	if err != nil {
		t.Fatal(err)
	}
	wantOut, _, _ := strings.Cut(want.Output, stderrMark+"\n")
	gotOut, _, _ := strings.Cut(got.Output, stderrMark+"\n")
	w, g := s.Normalize(wantOut), s.Normalize(gotOut)
	for _, d := range cmp.diffs {
		if !d.re.MatchString(w) {
			t.Errorf("bpftrace's output no longer shows the known difference %q (%v): remove it", d.name, d.re)
		}
		w = d.re.ReplaceAllString(w, d.repl)
	}
	if w != g || want.Exit != got.Exit {
		t.Errorf("gotrace (exit %d) and bpftrace 0.17 (exit %d) differ, normalised:\n--- bpftrace\n%s\n--- gotrace\n%s", got.Exit, want.Exit, w, g)
	}
}

// watchCases are the watchpoint cases: the fixture of cmd/gotrace's
// watchpoint tests, built here without PIE, with the scripts of
// TestWatchpointCommand, TestWatchpointCommandThreads and
// TestWatchpointProcessThreads on its counter and bump.
func watchCases(t *testing.T) []vmCase {
	t.Helper()
	root, err := regtest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	gcc := testenv.RequireTool(t, "gcc")
	bin := filepath.Join(t.TempDir(), "watch")
	if out, err := exec.Command(gcc, "-O2", "-no-pie", "-o", bin, filepath.Join(root, "cmd", "gotrace", "testdata", "watchpoint", "watch.c"), "-lpthread").CombinedOutput(); err != nil {
		t.Fatalf("build the watchpoint fixture: %v\n%s", err, out)
	}
	counter, bump := symbolValue(t, bin, "counter"), symbolValue(t, bin, "bump")
	files := map[string]string{"/work/watch": bin}
	return []vmCase{
		{
			Case: Case{Name: "watchpoint", Script: fmt.Sprintf(`$tracer -c /work/watch -e 'watchpoint:%#[1]x:8:w { printf("w %%d\n", *(int64*)%#[1]x); }
w:%#[2]x:8:x { printf("x\n"); }
END { printf("end\n"); }'`, counter, bump)},
			files: files,
		},
		{
			// The writes come from a thread the command starts after
			// the trace began, which inherits the watchpoint.
			Case:  Case{Name: "watchpoint-threads", Script: fmt.Sprintf(`$tracer -c '/work/watch thread' -e 'watchpoint:%#x:8:w /tid != pid/ { printf("write by another thread of %%s\n", comm); exit(); }'`, counter)},
			want:  []string{`write by another thread of watch`},
			files: files,
		},
		{
			// A -p process whose second thread writes: every thread
			// of the process is watched.
			Case:  Case{Name: "watchpoint-pid", Script: fmt.Sprintf(`/work/watch thread & pid=$!; $tracer -p $pid -e 'watchpoint:%#x:8:w { printf("write by %%s\n", comm); exit(); }'; rc=$?; kill $pid; exit $rc`, counter)},
			want:  []string{`write by watch`},
			files: files,
		},
	}
}

// symbolValue is the value of the symbol name in the ELF file at path.
func symbolValue(t *testing.T, path, name string) uint64 {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		t.Fatalf("read %s's symbols: %v", path, err)
	}
	for _, s := range syms {
		if s.Name == name {
			return s.Value
		}
	}
	t.Fatalf("%s has no symbol %s", path, name)
	return 0
}
