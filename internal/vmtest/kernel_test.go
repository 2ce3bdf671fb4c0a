package vmtest

import (
	"os"
	"regexp"
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
		Case:  Case{Name: "kprobe", Script: writeMarker + `gotrace -e 'kprobe:do_sys_openat2 /comm == "cat"/ { printf("open %d %s %d\n", (int32)arg0, str(arg1), arg2 != 0); }' ` + catMarker},
		want:  []string{`open -100 ` + marker + ` 1`, `gotrace-vm-marker-text`},
		smoke: true,
	},
	{
		Case:  Case{Name: "kfunc", Script: writeMarker + `gotrace -e 'kfunc:do_sys_openat2 /comm == "cat"/ { printf("open %d %s\n", args->dfd, str(args->filename)); } kretfunc:do_sys_openat2 /comm == "cat"/ { printf("ret %s %d\n", str(args->filename), retval); }' ` + catMarker},
		want:  []string{`open -100 ` + marker, `ret ` + marker + ` 3`},
		smoke: true,
	},
	{
		Case: Case{Name: "kretprobe", Script: writeMarker + `gotrace -e 'kretprobe:do_sys_openat2 /comm == "cat"/ { printf("%s returned %d\n", func, retval); }' ` + catMarker},
		want: []string{`do_sys_openat2 returned 3`},
	},
	{
		// vfs_read(file, buf, count, pos): dd reads one byte (busybox's
		// cat copies with sendfile, without vfs_read).
		Case: Case{Name: "kprobe-args", Script: writeMarker + `gotrace -e 'kprobe:vfs_read /comm == "dd"/ { printf("read %d %d %d %d %s\n", arg0 != 0, arg1 != 0, arg2, arg3 != 0, func); exit(); }' -c "dd if=` + marker + ` of=/dev/null bs=1 count=1"`},
		want: []string{`read 1 1 1 1 vfs_read`},
	},
	{
		Case: Case{Name: "kprobe-wildcard", Script: writeMarker + `gotrace -e 'kprobe:do_sys_open* /comm == "cat"/ { @[func] = count(); }' ` + catMarker},
		want: []string{`@\[do_sys_openat2\]: 1`},
	},
	{
		Case: Case{Name: "kfunc-wildcard", Script: writeMarker + `gotrace -e 'kfunc:do_sys_open* /comm == "cat"/ { @[func] = count(); }' ` + catMarker},
		want: []string{`@\[do_sys_openat2\]: 1`},
	},
	{
		Case: Case{Name: "list-kprobe", Script: `gotrace -l 'kprobe:do_sys_open*'; gotrace -l 'kretprobe:do_sys_openat2'`},
		want: []string{`kprobe:do_sys_openat2`, `kretprobe:do_sys_openat2`},
	},
	{
		Case: Case{Name: "list-kfunc", Script: `gotrace -l 'kfunc:do_sys_openat*'; gotrace -lv 'kfunc:do_sys_openat2'; gotrace -lv 'kretfunc:do_sys_openat2'`},
		want: []string{`kfunc:do_sys_openat2`, `kretfunc:do_sys_openat2`, `    int dfd`, `    char \* filename`, `    struct open_how \* how`, `    long int retval`},
	},
	{
		Case:  Case{Name: "vfscount", Script: writeMarker + `gotrace /tools/vfscount.bt ` + catMarker},
		want:  []string{`Tracing VFS calls... Hit Ctrl-C to end.`, `@\[vfs_read\]: [0-9]+`, `@\[vfs_write\]: [0-9]+`},
		files: map[string]string{"/tools/vfscount.bt": "/usr/sbin/vfscount.bt"},
	},
	{
		// chown needs CAP_CHOWN even as root.
		Case:  Case{Name: "capable", Script: writeMarker + `gotrace /tools/capable.bt -c "chown 1:1 ` + marker + `"`},
		want:  []string{`TIME +UID +PID +COMM +CAP +NAME +AUDIT`, `[0-9:]+ +0 +[0-9]+ +chown +0 +CAP_CHOWN +[01]`},
		files: map[string]string{"/tools/capable.bt": "/usr/sbin/capable.bt"},
	},
	{
		Case:  Case{Name: "dcsnoop", Script: writeMarker + `gotrace /tools/dcsnoop.bt ` + catMarker},
		want:  []string{`TIME +PID +COMM +T FILE`, `[0-9]+ +[0-9]+ +cat +R gotrace-vm-marker`},
		files: map[string]string{"/tools/dcsnoop.bt": "/usr/sbin/dcsnoop.bt"},
	},
	{
		Case:  Case{Name: "vfsstat", Script: writeMarker + `gotrace /tools/vfsstat.bt ` + catMarker},
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
	files := append([]Entry{Gotrace(t, arch.Name)}, extra...)
	var run []vmCase
	for _, c := range cs {
		if !c.smoke && !All() {
			continue
		}
		run = append(run, c)
		cases = append(cases, c.Case)
		for dst, src := range c.files {
			if _, err := os.Stat(src); err != nil {
				t.Fatalf("case %s needs %s: %v", c.Name, src, err)
			}
			files = append(files, File(t, src, dst))
		}
	}
	var console *os.File
	if testing.Verbose() {
		console = os.Stderr
	}
	g := Guest{Arch: arch, Files: files, Cases: cases}
	if console != nil {
		g.Console = console
	}
	b := Start(t, g)
	for _, c := range run {
		t.Run(c.Name, func(t *testing.T) {
			r := b.Result(t, c.Name)
			if r.Exit != c.exit {
				t.Errorf("exit status %d, want %d", r.Exit, c.exit)
			}
			lines := strings.Split(r.Output, "\n")
			for _, w := range c.want {
				re := regexp.MustCompile("^" + w + "$")
				found := false
				for _, l := range lines {
					if re.MatchString(l) {
						found = true
						break
					}
				}
				if !found {
					t.Errorf("no line matches %q", w)
				}
			}
			if t.Failed() {
				t.Logf("script:\n%s\noutput:\n%s", c.Script, r.Output)
			}
		})
	}
	return b
}
