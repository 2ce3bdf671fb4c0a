package main

// The differential test: every script of testdata/scripts, scripts and
// testdata/diff runs under bpftrace 0.17 and under gotrace, with the same
// arguments and the same traced command, and the two outputs must be the
// same once known noise is dropped, timings are masked and the lines of a
// map that bpftrace prints in hash order are put in a fixed order.

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
	"strings"
	"testing"
	"time"

	"github.com/gotrace/gotrace/internal/fixture"
	"github.com/gotrace/gotrace/internal/testenv"
)

// diffDirs are the directories whose *.bt files TestDiff runs, relative to
// this package. Scripts of testdata/scripts and testdata/diff carry the
// header of testdata/scripts/README.md (in testdata/diff the fixture line
// may be left out: such a script runs without -c). Scripts of scripts/ are
// meant for users and have no header; theirs is in
// testdata/diff/scripts/NAME.header.
var diffDirs = []string{
	"../../testdata/scripts",
	"../../scripts",
	"../../testdata/diff",
}

// diffTimeout bounds one tool's run of one script.
const diffTimeout = 60 * time.Second

// diffScript is a script and how to run it.
type diffScript struct {
	*fixture.Script
	// Name is the script's file name, which the tools are given. The
	// tools run the fixture with -c when the script is Traced.
	Name string
}

// loadDiffScript reads the script at path and its header: its own, or for
// a script of scripts/ the one in testdata/diff/scripts.
func loadDiffScript(path string) (*diffScript, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load script: %w", err)
	}
	header := string(src)
	if filepath.Clean(filepath.Dir(path)) == filepath.Clean("../../scripts") {
		h, err := os.ReadFile(filepath.Join("../../testdata/diff/scripts", strings.TrimSuffix(filepath.Base(path), ".bt")+".header"))
		if err != nil {
			return nil, fmt.Errorf("load header of %s: %w", path, err)
		}
		header = string(h)
	}
	s, err := fixture.ParseHeader(path, header)
	if err != nil {
		return nil, err
	}
	s.Source = string(src)
	return &diffScript{Script: s, Name: filepath.Base(path)}, nil
}

// toolResult is what one run of a tool left behind.
type toolResult struct {
	Stdout, Stderr string
	Code           int
	// Err is set when the tool could not be started or timed out.
	Err error
}

// runTool runs bin with args in dir and returns its outputs.
func runTool(bin, dir string, args []string) toolResult {
	ctx, cancel := context.WithTimeout(context.Background(), diffTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	r := toolResult{Stdout: stdout.String(), Stderr: stderr.String()}
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		r.Err = fmt.Errorf("run %s: timed out after %v", filepath.Base(bin), diffTimeout)
	case errors.As(err, &exit):
		r.Code = exit.ExitCode()
	case err != nil:
		r.Err = fmt.Errorf("run %s: %w", filepath.Base(bin), err)
	}
	return r
}

// buildGotrace builds gotrace into a temporary directory of t.
func buildGotrace(t *testing.T) string {
	t.Helper()
	return buildGotraceWith(t)
}

// buildStaticGotrace builds gotrace as it is shipped, static
// (CGO_ENABLED=0): what a start of it does is the static binary's, without
// the dynamic loader's and cgo's files.
func buildStaticGotrace(t *testing.T) string {
	t.Helper()
	return buildGotraceWith(t, "CGO_ENABLED=0")
}

// buildGotraceWith builds gotrace into a temporary directory with env added
// to the go command's environment.
func buildGotraceWith(t *testing.T, env ...string) string {
	t.Helper()
	goTool := testenv.RequireTool(t, "go")
	bin := filepath.Join(t.TempDir(), "gotrace")
	cmd := exec.Command(goTool, "build", "-o", bin, ".")
	cmd.Env = append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build gotrace: %v\n%s", err, out)
	}
	return bin
}

// diffScripts returns every script TestDiff runs, by directory then name.
func diffScripts(t *testing.T) []string {
	t.Helper()
	var paths []string
	for _, dir := range diffDirs {
		m, err := filepath.Glob(filepath.Join(dir, "*.bt"))
		if err != nil {
			t.Fatal(err)
		}
		paths = append(paths, m...)
	}
	if len(paths) == 0 {
		t.Fatalf("no scripts in %v", diffDirs)
	}
	return paths
}

func TestDiff(t *testing.T) {
	paths := diffScripts(t)
	bpftrace := testenv.RequireBpftrace(t)
	gotrace := buildGotrace(t)
	for _, path := range paths {
		name := strings.TrimSuffix(strings.TrimPrefix(path, "../../"), ".bt")
		t.Run(name, func(t *testing.T) {
			s, err := loadDiffScript(path)
			if err != nil {
				t.Fatal(err)
			}
			diffScriptRun(t, s, bpftrace, gotrace)
		})
	}
}

// diffRun is one tool's run of a script.
type diffRun struct {
	toolResult
	// Summary is what the fixture printed (--output), pid masked; "" when
	// the script does not trace it.
	Summary string
}

// diffScriptRun runs one script under both tools and compares them.
func diffScriptRun(t *testing.T, s *diffScript, bpftrace, gotrace string) {
	want := runScript(t, s, bpftrace)
	if want.Err != nil {
		t.Fatalf("bpftrace: %v\nstdout:\n%s\nstderr:\n%s", want.Err, want.Stdout, want.Stderr)
	}
	if s.Refused != nil {
		diffRefusedRun(t, s, want, gotrace)
		return
	}
	if err := s.CheckExpect(want.Stdout); err != nil {
		t.Errorf("bpftrace does not meet the script's expect lines (fix the script): %v", err)
	}
	got := runScript(t, s, gotrace, s.Gotrace...)
	if got.Err != nil {
		t.Fatalf("gotrace: %v\nstdout:\n%s\nstderr:\n%s", got.Err, got.Stdout, got.Stderr)
	}
	if msg := compareRuns(s.Script, want, got); msg != "" {
		t.Errorf("gotrace differs from bpftrace on %s:\n%s", s.Name, msg)
	}
	if err := s.CheckExpect(got.Stdout); err != nil {
		t.Errorf("gotrace: %v", err)
	}
	diffCaptureRun(t, s, want, gotrace)
}

// diffCaptureRun runs s under gotrace with -w, which must print nothing
// of the trace, and replays the capture: the replay must match bpftrace
// as the live run does. A script that fails before it traces leaves an
// empty capture; then the -w run itself must match.
func diffCaptureRun(t *testing.T, s *diffScript, want diffRun, gotrace string) {
	file := filepath.Join(t.TempDir(), "capture")
	got := runScript(t, s, gotrace, append([]string{"-w", file}, s.Gotrace...)...)
	if got.Err != nil {
		t.Fatalf("gotrace -w: %v\nstdout:\n%s\nstderr:\n%s", got.Err, got.Stdout, got.Stderr)
	}
	if st, err := os.Stat(file); err == nil && st.Size() > 0 {
		if got.Stdout != "" {
			t.Errorf("gotrace -w printed the trace:\n%s", got.Stdout)
		}
		got.toolResult = runTool(gotrace, ".", []string{"replay", file})
		if got.Err != nil {
			t.Fatalf("gotrace replay: %v\nstdout:\n%s\nstderr:\n%s", got.Err, got.Stdout, got.Stderr)
		}
	}
	if msg := compareRuns(s.Script, want, got); msg != "" {
		t.Errorf("gotrace replay of a capture differs from bpftrace on %s:\n%s", s.Name, msg)
	}
}

// diffRefusedRun checks a script that bpftrace 0.17 cannot run: that it
// refuses it as the header says, that gotrace runs it and meets its
// expect lines, and that a capture replays as gotrace's live run printed.
func diffRefusedRun(t *testing.T, s *diffScript, bpftrace diffRun, gotrace string) {
	if bpftrace.Code == 0 || !s.Refused.MatchString(bpftrace.Stderr) {
		t.Errorf("bpftrace ran %s (exit code %d) or refused it otherwise than %q:\n%s", s.Name, bpftrace.Code, s.Refused, bpftrace.Stderr)
	}
	got := runScript(t, s, gotrace, s.Gotrace...)
	if got.Err != nil || got.Code != 0 {
		t.Fatalf("gotrace: exit code %d, %v\nstderr:\n%s", got.Code, got.Err, got.Stderr)
	}
	if err := s.CheckExpect(got.Stdout); err != nil {
		t.Errorf("gotrace: %v", err)
	}
	diffCaptureRun(t, s, got, gotrace)
}

// runScript runs s under tool, with toolArgs before the script, in a fresh
// directory holding the script and, for a traced script, a private copy of
// the fixture as ./bitcoind.
func runScript(t *testing.T, s *diffScript, tool string, toolArgs ...string) diffRun {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, s.Name), []byte(s.Source), 0o644); err != nil {
		t.Fatal(err)
	}
	summary := filepath.Join(dir, "fixture.out")
	if s.Traced {
		// A copy of its own: uprobes attached by path fire in every
		// process running the same file.
		bin, err := os.ReadFile(fixture.Build(t, s.Variant))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "bitcoind"), bin, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	r := diffRun{toolResult: runTool(tool, dir, s.RunArgs(s.Name, summary, toolArgs...))}
	if s.Traced {
		out, err := os.ReadFile(summary)
		if err != nil {
			r.Summary = fmt.Sprintf("(no fixture output: %v)", err)
		} else {
			r.Summary = readyPID.ReplaceAllString(string(out), "pid=<pid>")
		}
	}
	return r
}

// fixtureFinished matches the fixture's last line after a full run.
var fixtureFinished = regexp.MustCompile(`(?m)^END rc=0 aborted=0$`)

// readyPID is the fixture's pid in its READY line.
var readyPID = regexp.MustCompile(`pid=\d+`)

// compareRuns returns "" when got matches want, or a description of every
// difference. Standard error is compared only when bpftrace failed: then
// its error message is the output; otherwise it holds warnings that are no
// part of the contract (testdata/scripts/README.md).
func compareRuns(s *fixture.Script, want, got diffRun) string {
	var b strings.Builder
	if want.Code != got.Code {
		fmt.Fprintf(&b, "exit code: bpftrace %d, gotrace %d\n", want.Code, got.Code)
	}
	b.WriteString(lineDiff("stdout", s.CompareLines(want.Stdout), s.CompareLines(got.Stdout)))
	if want.Code != 0 {
		b.WriteString(lineDiff("stderr", s.CompareLines(want.Stderr), s.CompareLines(got.Stderr)))
	} else if got.Code != 0 {
		fmt.Fprintf(&b, "gotrace stderr:\n%s", got.Stderr)
	}
	// A script that calls exit() may end the fixture before it is done,
	// at a moment that differs from run to run; compare only runs that
	// both finished.
	if fixtureFinished.MatchString(want.Summary) && fixtureFinished.MatchString(got.Summary) {
		b.WriteString(lineDiff("fixture output", strings.Split(want.Summary, "\n"), strings.Split(got.Summary, "\n")))
	}
	return b.String()
}

// lineDiff returns "" when want and got are equal, or both listings with
// the first difference marked.
func lineDiff(what string, want, got []string) string {
	if slices.Equal(want, got) {
		return ""
	}
	first := 0
	for first < len(want) && first < len(got) && want[first] == got[first] {
		first++
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: first difference at line %d\n", what, first+1)
	for _, side := range []struct {
		name  string
		lines []string
	}{{"bpftrace", want}, {"gotrace", got}} {
		fmt.Fprintf(&b, "--- %s (%d lines)\n", side.name, len(side.lines))
		for i, l := range side.lines {
			mark := "  "
			if i == first {
				mark = "> "
			}
			fmt.Fprintf(&b, "%s%q\n", mark, l)
		}
	}
	return b.String()
}
