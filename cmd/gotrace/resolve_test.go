package main

import (
	"testing"

	"github.com/gotrace/gotrace/internal/testenv"
)

// TestDiffResolvedTargets runs uaddr() in probes whose targets the front
// end resolves before checking, a bare name found through $PATH and a
// positional parameter, under bpftrace and gotrace: the same addresses
// and values. Both scripts failed with "Could not resolve symbol" when the
// runtime resolved targets after checking.
func TestDiffResolvedTargets(t *testing.T) {
	const python = "/usr/bin/python3.11"
	testenv.RequireFile(t, python)
	bpftrace := testenv.RequireBpftrace(t)
	gotrace := buildGotrace(t)
	t.Setenv("PATH", "/usr/local/bin:/usr/bin:/bin")
	// Maps, not printf and exit(): a probe that fires on several CPUs
	// may print more than once before the trace stops.
	const body = `{ @addr = uaddr("Py_DebugFlag"); @value = *uaddr("Py_DebugFlag"); }`
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"bare name", []string{"-e", "uprobe:python3.11:Py_BytesMain " + body}},
		{"positional parameter", []string{"-e", "usdt:$1:python:function__entry " + body, python}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"-c", python + " -c pass"}, tc.args...)
			want := runTool(bpftrace, t.TempDir(), args)
			if want.Err != nil || want.Code != 0 {
				t.Fatalf("bpftrace: exit %d, %v\n%s%s", want.Code, want.Err, want.Stdout, want.Stderr)
			}
			got := runTool(gotrace, t.TempDir(), args)
			if got.Err != nil || got.Code != 0 {
				t.Fatalf("gotrace: exit %d, %v\n%s%s", got.Code, got.Err, got.Stdout, got.Stderr)
			}
			if got.Stdout != want.Stdout {
				t.Errorf("gotrace printed\n%s\nbpftrace\n%s", got.Stdout, want.Stdout)
			}
		})
	}
}
