package attach

// Watchpoints: hardware breakpoints on an address, as perf events of the
// traced process's threads or of every CPU.

import (
	"errors"
	"fmt"
	"os"
	"strconv"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/gotrace/gotrace/internal/capability"
	"github.com/gotrace/gotrace/runtime/plan"
)

// Watchpoint attaches prog to a hardware breakpoint on the address of
// watchpoint site s, every hit: on every online CPU for every process when
// t.PID is 0, else on the traced process's threads, those it has and those
// it starts. A -c command (t.Child) is one thread until it execs, and its
// event follows it through exec. bpftrace 0.17 watches only the main
// thread of the -c or -p process. Where this machine attaches hardware
// breakpoints but does not deliver them, it warns to t.Warn that the probe
// will not fire.
func Watchpoint(s plan.Site, prog *ebpf.Program, t *Target) ([]link.Link, error) {
	// Asked only here, so that scripts without watchpoints open no
	// breakpoint of their own.
	bp := capability.Of(capability.Breakpoints)
	links, err := watchpoint(s, prog, t.PID, t.Child)
	if err == nil && !bp.Available && !bp.Unknown {
		notef(t.Warn, "WARNING: %s: the probe will not fire: hardware breakpoints attach on this machine but are not delivered (tried by gotrace: %s)\n", s.Attachment.Probe, bp.Evidence)
	}
	return links, err
}

// watchpoint attaches prog to the breakpoint of site s, for process pid
// (0: every process), the -c command's when child.
func watchpoint(s plan.Site, prog *ebpf.Program, pid int, child bool) ([]link.Link, error) {
	a := s.Attachment
	attr := perfEvent(unix.PERF_TYPE_BREAKPOINT, 0, 1)
	attr.Bp_type = a.WatchAccess
	attr.Ext1, attr.Ext2 = a.Address, a.WatchLen // bp_addr, bp_len
	if pid == 0 {
		return attachPerfEvents(a, prog, &attr)
	}
	// The threads the process starts later inherit the watchpoint;
	// processes it forks, whose memory is their own, do not.
	attr.Bits |= unix.PerfBitInherit | perfBitInheritThread
	tids := []int{pid}
	if !child {
		var err error
		if tids, err = processThreads(pid); err != nil {
			return nil, fmt.Errorf("attach %s: %w", a.Probe, err)
		}
	}
	var links []link.Link
	for _, tid := range tids {
		l, err := attachPerfEvent(prog, &attr, tid, -1)
		if err != nil {
			for _, l := range links {
				l.Close()
			}
			if errors.Is(err, unix.ENOSPC) {
				err = fmt.Errorf("%w: every hardware breakpoint register of thread %d is taken (x86-64 has 4)", err, tid)
			}
			return nil, fmt.Errorf("attach %s: %w", a.Probe, err)
		}
		links = append(links, l)
	}
	return links, nil
}

// processThreads lists the threads of process pid.
func processThreads(pid int) ([]int, error) {
	entries, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return nil, fmt.Errorf("list the threads of process %d: %w", pid, err)
	}
	var tids []int
	for _, e := range entries {
		if tid, err := strconv.Atoi(e.Name()); err == nil {
			tids = append(tids, tid)
		}
	}
	return tids, nil
}
