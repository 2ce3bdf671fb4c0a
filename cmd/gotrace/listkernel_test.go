package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gotrace/gotrace/internal/testenv"
)

// TestDiffListKernel lists kernel probes under bpftrace 0.17 and gotrace:
// the same bytes on stdout and the same exit code, for every kind of
// pattern (bare -l, a search without a colon, tracepoint wildcards, t:,
// software, iter) with and without -v.
func TestDiffListKernel(t *testing.T) {
	testenv.RequireFile(t, "/sys/kernel/tracing/events")
	bpftrace := testenv.RequireBpftrace(t)
	gotrace := buildGotrace(t)
	for _, pattern := range []string{
		"", "tracepoint:sched:sched_sw*", "t:syscalls:sys_enter_open*", "tracepoint:*:sys_enter_openat",
		"tracepoint:nosuch:*", "sched*", "h*", "software:cpu*", "s:*", "iter:t*", "tracepoint:sched",
	} {
		for _, flag := range []string{"-l", "-lv"} {
			args := []string{flag}
			if pattern != "" {
				args = append(args, pattern)
			}
			t.Run(strings.Join(args, " "), func(t *testing.T) {
				want := runTool(bpftrace, t.TempDir(), args)
				got := runTool(gotrace, t.TempDir(), args)
				if got.Code != want.Code {
					t.Errorf("gotrace exit %d, bpftrace %d\n%s", got.Code, want.Code, got.Stderr)
				}
				if got.Stdout != want.Stdout {
					t.Errorf("gotrace printed %d bytes, bpftrace %d:\n%s", len(got.Stdout), len(want.Stdout), firstDifference(want.Stdout, got.Stdout))
				}
			})
		}
	}
}

// firstDifference shows the first line where two listings differ.
func firstDifference(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := range min(len(w), len(g)) {
		if w[i] != g[i] {
			return fmt.Sprintf("line %d: bpftrace %q\n         gotrace  %q", i+1, w[i], g[i])
		}
	}
	return "one is a prefix of the other"
}
