package vmtest

import (
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// A vmCase is a case and what its output must show: each of want matches
// a line of the output (a regexp anchored at both ends).
type vmCase struct {
	Case
	want []string
	// exit is the status the case must end with.
	exit int
	// smoke puts the case in the smoke set that go test ./... runs;
	// the others run under GOTRACE_VMTEST=all (hack/vmtest.sh).
	smoke bool
	// files are host files the case needs, by guest path.
	files map[string]string
}

// tracerVar is the shell variable the cases' scripts name their tracer
// by: gotrace in runCases, bpftrace too in TestKernelProbesBpftrace,
// which runs the same scripts under both.
const tracerVar = "tracer"

// withTracer is a case's script run with tracer as $tracer.
func withTracer(script, tracer string) string {
	return tracerVar + "=" + tracer + "\n" + script
}

// The marker workload: the kernel functions are caught in the act of
// opening this file, by cat, which gotrace runs with -c once every probe
// is attached.
const (
	marker      = "/tmp/gotrace-vm-marker"
	catMarker   = `-c "cat ` + marker + `"`
	writeMarker = "echo gotrace-vm-marker-text >" + marker + "\n"
)

// kernelCases are the x86-64 guest's: the kernel probe kinds, which this
// machine's kernel cannot attach (no kprobes, fentry refused).
var kernelCases = []vmCase{
	{
		Case:  Case{Name: "kprobe", Script: writeMarker + `$tracer -e 'kprobe:do_sys_openat2 /comm == "cat"/ { printf("open %d %s %d\n", (int32)arg0, str(arg1), arg2 != 0); }' ` + catMarker},
		want:  []string{`open -100 ` + marker + ` 1`, `gotrace-vm-marker-text`},
		smoke: true,
	},
	{
		Case:  Case{Name: "kfunc", Script: writeMarker + `$tracer -e 'kfunc:do_sys_openat2 /comm == "cat"/ { printf("open %d %s\n", args->dfd, str(args->filename)); } kretfunc:do_sys_openat2 /comm == "cat"/ { printf("ret %s %d\n", str(args->filename), retval); }' ` + catMarker},
		want:  []string{`open -100 ` + marker, `ret ` + marker + ` 3`},
		smoke: true,
	},
	{
		Case: Case{Name: "kretprobe", Script: writeMarker + `$tracer -e 'kretprobe:do_sys_openat2 /comm == "cat"/ { printf("%s returned %d\n", func, retval); }' ` + catMarker},
		want: []string{`do_sys_openat2 returned 3`},
	},
	{
		// vfs_read(file, buf, count, pos): dd reads one byte (busybox's
		// cat copies with sendfile, without vfs_read).
		Case: Case{Name: "kprobe-args", Script: writeMarker + `$tracer -e 'kprobe:vfs_read /comm == "dd"/ { printf("read %d %d %d %d %s\n", arg0 != 0, arg1 != 0, arg2, arg3 != 0, func); exit(); }' -c "dd if=` + marker + ` of=/dev/null bs=1 count=1"`},
		want: []string{`read 1 1 1 1 vfs_read`},
	},
	{
		Case: Case{Name: "kprobe-wildcard", Script: writeMarker + `$tracer -e 'kprobe:do_sys_open* /comm == "cat"/ { @[func] = count(); }' ` + catMarker},
		want: []string{`@\[do_sys_openat2\]: 1`},
	},
	{
		Case: Case{Name: "kfunc-wildcard", Script: writeMarker + `$tracer -e 'kfunc:do_sys_open* /comm == "cat"/ { @[func] = count(); }' ` + catMarker},
		want: []string{`@\[do_sys_openat2\]: 1`},
	},
	{
		Case: Case{Name: "list-kprobe", Script: `$tracer -l 'kprobe:do_sys_open*'; $tracer -l 'kretprobe:do_sys_openat2'`},
		want: []string{`kprobe:do_sys_openat2`, `kretprobe:do_sys_openat2`},
	},
	{
		// vfscount.bt's wildcard, whose expansion must be bpftrace's.
		Case: Case{Name: "list-vfs", Script: `$tracer -l 'kprobe:vfs_*'`},
		want: []string{`kprobe:vfs_read`},
	},
	{
		Case: Case{Name: "list-kfunc", Script: `$tracer -l 'kfunc:do_sys_openat*'; $tracer -lv 'kfunc:do_sys_openat2'; $tracer -lv 'kretfunc:do_sys_openat2'`},
		want: []string{`kfunc:do_sys_openat2`, `kretfunc:do_sys_openat2`, `    int dfd`, `    const char \* filename`, `    struct open_how \* how`, `    long int retval`},
	},
	{
		Case:  Case{Name: "vfscount", Script: writeMarker + `$tracer /tools/vfscount.bt ` + catMarker},
		want:  []string{`Tracing VFS calls... Hit Ctrl-C to end.`, `@\[vfs_read\]: [0-9]+`, `@\[vfs_write\]: [0-9]+`},
		files: map[string]string{"/tools/vfscount.bt": "/usr/sbin/vfscount.bt"},
	},
	{
		// chown needs CAP_CHOWN even as root.
		Case:  Case{Name: "capable", Script: writeMarker + `$tracer /tools/capable.bt -c "chown 1:1 ` + marker + `"`},
		want:  []string{`TIME +UID +PID +COMM +CAP +NAME +AUDIT`, `[0-9:]+ +0 +[0-9]+ +chown +0 +CAP_CHOWN +[01]`},
		files: map[string]string{"/tools/capable.bt": "/usr/sbin/capable.bt"},
	},
	{
		Case:  Case{Name: "dcsnoop", Script: writeMarker + `$tracer /tools/dcsnoop.bt ` + catMarker},
		want:  []string{`TIME +PID +COMM +T FILE`, `[0-9]+ +[0-9]+ +cat +R gotrace-vm-marker`},
		files: map[string]string{"/tools/dcsnoop.bt": "/usr/sbin/dcsnoop.bt"},
	},
	{
		Case:  Case{Name: "vfsstat", Script: writeMarker + `$tracer /tools/vfsstat.bt ` + catMarker},
		want:  []string{`Attaching [0-9]+ probes...`, `Tracing key VFS calls... Hit Ctrl-C to end.`},
		files: map[string]string{"/tools/vfsstat.bt": "/usr/sbin/vfsstat.bt"},
	},
}

// TestKernelProbes runs the kernel probe cases in an emulated x86-64 with
// Debian's kernel: kprobes and BPF trampolines there attach and fire.
func TestKernelProbes(t *testing.T) {
	t.Parallel()
	runCases(t, AMD64, kernelCases)
}

// runCases boots one guest of arch with the selected cases of cs and
// checks each case's output in a subtest; it returns the boot for
// further checks.
func runCases(t *testing.T, arch Arch, cs []vmCase, extra ...Entry) *Boot {
	Require(t, arch)
	var cases []Case
	var run []vmCase
	for _, c := range cs {
		if !c.smoke && !All() {
			continue
		}
		run = append(run, c)
		cases = append(cases, Case{Name: c.Name, Script: withTracer(c.Script, "gotrace")})
	}
	files := append(append([]Entry{Gotrace(t, arch.Name)}, extra...), caseFiles(t, run)...)
	b := Start(t, Guest{Arch: arch, Files: files, Cases: cases, Console: verboseConsole()})
	for _, c := range run {
		t.Run(c.Name, func(t *testing.T) {
			r := b.Result(t, c.Name)
			c.check(t, r)
			if t.Failed() {
				t.Logf("script:\n%s\noutput:\n%s", c.Script, r.Output)
			}
		})
	}
	return b
}

// check fails t when r's exit status is not c's or a line c wants is
// missing from r's output.
func (c vmCase) check(t *testing.T, r Result) {
	t.Helper()
	if r.Exit != c.exit {
		t.Errorf("exit status %d, want %d", r.Exit, c.exit)
	}
	lines := strings.Split(r.Output, "\n")
	for _, w := range c.want {
		re := regexp.MustCompile("^" + w + "$")
		if !slices.ContainsFunc(lines, re.MatchString) {
			t.Errorf("no line matches %q", w)
		}
	}
}

// caseFiles are the host files the cases cs need, at their guest paths.
func caseFiles(t *testing.T, cs []vmCase) []Entry {
	t.Helper()
	var files []Entry
	seen := map[string]bool{}
	for _, c := range cs {
		for dst, src := range c.files {
			if seen[dst] {
				continue
			}
			seen[dst] = true
			if _, err := os.Stat(src); err != nil {
				t.Fatalf("case %s needs %s: %v", c.Name, src, err)
			}
			files = append(files, File(t, src, dst))
		}
	}
	return files
}

// verboseConsole is where a guest's console is copied as it prints: the
// test's standard error under go test -v, nowhere otherwise.
func verboseConsole() io.Writer {
	if testing.Verbose() {
		return os.Stderr
	}
	return nil
}
