package main

import (
	"fmt"
	"regexp"
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
		"*ware:*", "*ware:cpu*", "trace*:sched:sched_sw*", "*:/bin/bash:echo_b*",
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
				w, g := staticEvents(want.Stdout), staticEvents(got.Stdout)
				if g != w {
					t.Errorf("gotrace printed %d bytes, bpftrace %d:\n%s", len(g), len(w), firstDifference(w, g))
				}
			})
		}
	}
}

// dynamicEvent matches a listed tracepoint that another tracer on the
// machine adds and removes while it runs (bpftrace 0.17 makes its uprobes
// through tracefs), with its fields under -lv.
var dynamicEvent = regexp.MustCompile(`(?m)^tracepoint:(uprobes|kprobes):.*\n(    .*\n)*`)

// staticEvents drops the dynamic events from a listing, which may differ
// between two runs.
func staticEvents(listing string) string {
	return dynamicEvent.ReplaceAllString(listing, "")
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
