package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"
)

// tutorialOneLiner is a one-liner of bpftrace's tutorial whose output
// depends on time or on the whole machine, so that no differential script
// (testdata/diff) can compare it line for line: under a workload, gotrace
// and bpftrace must both print lines that pattern matches.
type tutorialOneLiner struct {
	name, program string
	work          func(t *testing.T, marker string)
	pattern       string
	// live is set for a one-liner that prints the pattern while it runs
	// (an interval), waited for before it is stopped; the others print it
	// at exit.
	live bool
}

// tutorialOneLiners are those one-liners: per-second syscall rates,
// scheduler switches and profile samples by kernel stack, block I/O
// sizes. File names, read sizes and syscall counts by probe are compared
// line for line in testdata/diff/tracepoint_oneliners.bt.
var tutorialOneLiners = []tutorialOneLiner{
	{"syscall rate", `tracepoint:raw_syscalls:sys_enter { @ = count(); } interval:s:1 { print(@); clear(@); }`,
		func(t *testing.T, marker string) { makeSyscalls(1500 * time.Millisecond) },
		// A second's count printed, then another.
		`(?m)^@: [1-9]\d*\n(?:.*\n)*@: \d+$`, true},
	{"scheduler switches by kernel stack", `tracepoint:sched:sched_switch { @[kstack] = count(); }`,
		// Go's runtime sleeps in the kernel, and wakes on a timer.
		func(t *testing.T, marker string) { time.Sleep(200 * time.Millisecond) },
		`(?m)^@\[\n    __schedule\+\d+\n    schedule\+\d+\n(?:    \w+\+\d+\n)*\]: [1-9]\d*$`, false},
	{"kernel stacks of profile samples", `profile:hz:99 { @[kstack] = count(); }`,
		func(t *testing.T, marker string) { makeSyscalls(700 * time.Millisecond) },
		`(?m)^@\[\n(?:    \w+\+\d+\n)+\]: [1-9]\d*$`, false},
	{"block I/O sizes", `tracepoint:block:block_rq_issue { @ = hist(args->bytes); }`,
		func(t *testing.T, marker string) {
			writeSynced(t, marker)
		},
		`(?m)^@: \n(?:\[.*\n)*\[\d+[KM]?, \d+[KM]?\)\s+[1-9]\d* \|@+ *\|$`, false},
}

// TestTutorialOneLiners runs each of tutorialOneLiners under bpftrace and
// gotrace with the same workload, stopped with SIGINT, and checks that
// both print its shape.
func TestTutorialOneLiners(t *testing.T) {
	bpftrace, gotrace := kernelTracers(t)
	for _, o := range tutorialOneLiners {
		t.Run(o.name, func(t *testing.T) {
			// A header from BEGIN, which both tools print once every
			// probe is attached ("Attaching N probes..." comes before).
			script := filepath.Join(t.TempDir(), "oneliner.bt")
			if err := os.WriteFile(script, []byte(o.program+"\nBEGIN { printf(\"tracing\\n\"); }\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			marker := filepath.Join(os.TempDir(), "gtm-oneliner-"+strconv.Itoa(os.Getpid()))
			re := regexp.MustCompile(o.pattern)
			for _, tool := range []string{bpftrace, gotrace} {
				out := traceTool(t, tool, script, 1, func() *regexp.Regexp {
					o.work(t, marker)
					if o.live {
						return re
					}
					return nil
				})
				if !re.MatchString(out) {
					t.Errorf("%s printed no match of %s:\n%s", filepath.Base(tool), o.pattern, out)
				}
			}
		})
	}
}

// makeSyscalls makes system calls, stat(2) of the root, for d: they land
// in the kernel, where profile samples then have kernel stacks.
func makeSyscalls(d time.Duration) {
	for end := time.Now().Add(d); time.Now().Before(end); {
		os.Stat("/")
	}
}
