package vmtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/gotrace/gotrace/internal/fixture"
	"github.com/gotrace/gotrace/internal/regtest"
	"github.com/gotrace/gotrace/internal/testenv"
)

// arm64DiffSkipped are the scripts of testdata/diff that TestARM64Diff
// does not run in the arm64 guest, each with the reason. Each names
// something of this machine that the guest does not share, so that the
// same script cannot print the same there: it is no difference of
// gotrace's between the architectures. docs/compat.md lists them.
var arm64DiffSkipped = map[string]string{
	"sarg.bt":                 "probes x86-64's C library (/lib/x86_64-linux-gnu); arm64's stack arguments are TestARM64's sarg case",
	"cgroupid.bt":             "the guest mounts no cgroup hierarchy for cgroupid() to resolve",
	"kernel_structs.bt":       "reads x86-64's struct thread_struct (fsbase), which arm64's lacks",
	"sizeof_struct.bt":        "prints the size of the kernel's struct task_struct, which differs between this 6.18 and the guest's 6.1",
	"strftime.bt":             "prints the wall-clock time of boot, which is the guest's own",
	"strftime_conversions.bt": "prints the wall-clock time of boot, which is the guest's own",
	"deref_int.bt":            "reads 8 bytes from string literals shorter than that: the bytes after them are the next literal in .rodata, where the compiler of each architecture puts another",
	"uaddr.bt":                "uaddr(\"stdout\") needs the copy of stdout that x86-64's non-PIE link makes in the executable; arm64's reaches the C library's through the GOT, so the executable has no such symbol (TestARM64's uaddr case covers arm64)",
	"tracepoint_args.bt":      "counts openat(2) calls of the dynamic loader, which opens six files in the guest (no ld.so.cache) and three here; and the int dfd's 8-byte slot holds the register as the C library set it, sign-extended by arm64's glibc (-100) and not by x86-64's (4294967196). TestARM64's tracepoint-syscalls case covers args there",
	"ustack.bt":               "frame offsets differ by instruction set; and arm64's gcc keeps no frame record in a leaf function, so the kernel's frame-record unwinder, which never reads the link register, skips the leaf's caller (tp_block_connected), as bpftrace's stacks do there. TestARM64's ustack case checks arm64's frames",
	"tracepoint_oneliners.bt": "counts the dynamic loader's system calls, which differ by architecture (arm64 has no open(2) and maps differently) and by file system (the guest has no ld.so.cache)",
}

// arm64DiffMasks are masks TestARM64Diff adds to a script's own for the
// comparison of the two architectures: the link-time addresses of the
// fixture's symbols, which each architecture's linker chooses.
var arm64DiffMasks = map[string][]*regexp.Regexp{
	"uaddr_params.bt": {regexp.MustCompile(`0x[0-9a-f]+`)},
}

// arm64DiffCase is one script of testdata/diff as the guest runs it.
type arm64DiffCase struct {
	script *fixture.Script
	// name is the script's file name.
	name string
}

// stderrSeparator divides a diff case's standard output from its standard
// error in the guest's output of the case.
const stderrSeparator = "@@vmtest-diff stderr"

// TestARM64Diff runs the scripts of testdata/diff in the arm64 guest, on
// the fixture cross-built for arm64, and compares each one's output with
// gotrace's output for the same script on this x86-64 machine, normalised
// as the differential test normalises it (fixture.Script.CompareLines:
// masks, sorting, noise). TestDiff holds the host's output to bpftrace
// 0.17's, so the guest is compared with bpftrace through it; the guest
// cannot run bpftrace (docs/vmtest.md). Whole suite only: the scripts
// take minutes under TCG.
func TestARM64Diff(t *testing.T) {
	if !All() {
		t.Skip("the whole VM suite only (GOTRACE_VMTEST=all, hack/vmtest.sh)")
	}
	Require(t, ARM64)
	testenv.RequireRoot(t) // the x86-64 runs
	cases := arm64DiffCases(t)
	variants := map[string]bool{}
	var guestCases []Case
	files := []Entry{Gotrace(t, ARM64.Name)}
	for _, c := range cases {
		files = append(files, Entry{Path: "/work/diff/" + c.name, Mode: 0o644, Data: []byte(c.script.Source)})
		if c.script.Traced {
			variants[c.script.Variant] = true
		}
		guestCases = append(guestCases, Case{Name: c.guestName(), Script: arm64DiffScript(c)})
	}
	for v := range variants {
		files = append(files, File(t, fixture.BuildARM64(t, v), "/work/fixtures/"+v))
	}
	files = append(files, arm64Libs(t)...)

	// The x86-64 runs go on while the guest boots and runs: qemu
	// emulates its one CPU on one host core. They end with the test.
	gt := Gotrace(t, "amd64")
	hostDir := t.TempDir()
	hostBin := filepath.Join(hostDir, "gotrace")
	if err := os.WriteFile(hostBin, gt.Data, 0o755); err != nil {
		t.Fatal(err)
	}
	hostFixtures := map[string]string{}
	for v := range variants {
		hostFixtures[v] = fixture.Build(t, v)
	}
	ctx, cancel := context.WithCancel(context.Background())
	hostDone := make(chan map[string]scriptRun, 1)
	go func() {
		runs := map[string]scriptRun{}
		for _, c := range cases {
			runs[c.name] = hostDiffRun(ctx, hostBin, hostDir, hostFixtures[c.script.Variant], c)
		}
		hostDone <- runs
	}()
	var host map[string]scriptRun
	t.Cleanup(func() {
		cancel()
		if host == nil {
			<-hostDone
		}
	})
	g := Guest{Arch: ARM64, Files: files, Cases: guestCases}
	if testing.Verbose() {
		g.Console = os.Stderr
	}
	b := Start(t, g)
	host = <-hostDone

	for _, c := range cases {
		t.Run("compare/"+c.name, func(t *testing.T) {
			h := host[c.name]
			if h.err != nil {
				t.Fatalf("x86-64: %v\nstdout:\n%s\nstderr:\n%s", h.err, h.stdout, h.stderr)
			}
			r := b.Result(t, c.guestName())
			stdout, stderr := splitDiffOutput(r.Output)
			if r.Exit != h.exit {
				t.Errorf("exit status: arm64 %d, x86-64 %d", r.Exit, h.exit)
			}
			if g, w := c.script.CompareLines(stdout), c.script.CompareLines(h.stdout); !slices.Equal(g, w) {
				t.Errorf("stdout differs:\n%s", quotedSides(g, w))
			}
			if h.exit != 0 {
				if g, w := c.script.CompareLines(stderr), c.script.CompareLines(h.stderr); !slices.Equal(g, w) {
					t.Errorf("stderr differs:\n%s", quotedSides(g, w))
				}
			}
			if err := c.script.CheckExpect(stdout); err != nil {
				t.Errorf("arm64: %v", err)
			}
			if t.Failed() {
				t.Logf("arm64 stderr:\n%s", stderr)
			}
		})
	}
}

// guestName is c's name among the guest's cases.
func (c arm64DiffCase) guestName() string { return "diff-" + strings.TrimSuffix(c.name, ".bt") }

// arm64DiffCases are the scripts of testdata/diff that run in the guest,
// by name.
func arm64DiffCases(t *testing.T) []arm64DiffCase {
	t.Helper()
	root, err := regtest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	paths, err := filepath.Glob(filepath.Join(root, "testdata", "diff", "*.bt"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no scripts in testdata/diff: %v", err)
	}
	sort.Strings(paths)
	var cases []arm64DiffCase
	for _, p := range paths {
		name := filepath.Base(p)
		if _, skip := arm64DiffSkipped[name]; skip {
			continue
		}
		src, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		s, err := fixture.ParseHeader(p, string(src))
		if err != nil {
			t.Fatal(err)
		}
		s.Masks = append(s.Masks, arm64DiffMasks[name]...)
		cases = append(cases, arm64DiffCase{script: s, name: name})
	}
	return cases
}

// arm64DiffScript is the guest's case for c: in a directory of its own
// holding the script and, for a traced script, the fixture's variant as
// ./bitcoind, gotrace runs the script as the differential test runs it;
// the case prints its standard output, the separator and its standard
// error, and exits with gotrace's status.
func arm64DiffScript(c arm64DiffCase) string {
	dir := "/tmp/" + c.guestName()
	var s strings.Builder
	fmt.Fprintf(&s, "mkdir -p %s && cd %s && cp /work/diff/%s . || exit 125\n", dir, dir, c.name)
	if c.script.Traced {
		fmt.Fprintf(&s, "cp /work/fixtures/%s bitcoind || exit 125\n", c.script.Variant)
	}
	s.WriteString("gotrace")
	for _, a := range c.script.RunArgs(c.name, "fixture.out", c.script.Gotrace...) {
		s.WriteString(" " + shellQuote(a))
	}
	fmt.Fprintf(&s, " >stdout 2>stderr\nrc=$?\ncat stdout\necho '%s'\ncat stderr\nexit $rc\n", stderrSeparator)
	return s.String()
}

// splitDiffOutput splits a diff case's output at the separator into the
// script's standard output and error. The separator's line took the
// newline that ended the standard output: it is given back.
func splitDiffOutput(out string) (stdout, stderr string) {
	if rest, ok := strings.CutPrefix(out, stderrSeparator+"\n"); ok {
		return "", rest
	}
	stdout, stderr, _ = strings.Cut(out, "\n"+stderrSeparator+"\n")
	return stdout + "\n", stderr
}

// quotedSides lists the arm64 and the x86-64 lines, each quoted so that
// blanks and control characters show.
func quotedSides(arm64, amd64 []string) string {
	var b strings.Builder
	for _, side := range []struct {
		name  string
		lines []string
	}{{"arm64", arm64}, {"x86-64", amd64}} {
		fmt.Fprintf(&b, "--- %s (%d lines)\n", side.name, len(side.lines))
		for _, l := range side.lines {
			fmt.Fprintf(&b, "%q\n", l)
		}
	}
	return b.String()
}

// shellQuote quotes a word for sh.
func shellQuote(w string) string { return "'" + strings.ReplaceAll(w, "'", `'\''`) + "'" }

// scriptRun is one run of a script by a tracer on this machine.
type scriptRun struct {
	stdout, stderr string
	exit           int
	// err says that the tracer could not be run or timed out.
	err error
}

// hostDiffRun runs c with the gotrace at bin in a fresh directory under
// dir holding the script and a copy of the fixture at bin (for a traced
// script), as the guest runs it.
func hostDiffRun(ctx context.Context, gotrace, dir, fixtureBin string, c arm64DiffCase) scriptRun {
	d, err := os.MkdirTemp(dir, strings.TrimSuffix(c.name, ".bt")+"-")
	if err != nil {
		return scriptRun{err: err}
	}
	if err := os.WriteFile(filepath.Join(d, c.name), []byte(c.script.Source), 0o644); err != nil {
		return scriptRun{err: err}
	}
	if c.script.Traced {
		if _, err := fixture.Copy(fixtureBin, d); err != nil {
			return scriptRun{err: err}
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, gotrace, c.script.RunArgs(c.name, "fixture.out", c.script.Gotrace...)...)
	cmd.Dir = d
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	r := scriptRun{stdout: stdout.String(), stderr: stderr.String()}
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		r.err = fmt.Errorf("run %s: no exit within 2 minutes", c.name)
	case errors.As(err, &exit):
		r.exit = exit.ExitCode()
	case err != nil:
		r.err = fmt.Errorf("run %s: %w", c.name, err)
	}
	return r
}
