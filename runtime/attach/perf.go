package attach

// Perf events: opened on every online CPU or on one thread, with a BPF
// program attached to each; used by profile.go and watchpoint.go.

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/gotrace/gotrace/codegen"
)

// profileLink is a profile, software or hardware program attached to one CPU's
// perf event: the link and the perf event it holds, closed together.
type profileLink struct {
	link.Link
	fd int
}

// Close detaches the program and closes the perf event.
func (l *profileLink) Close() error {
	err := l.Link.Close()
	unix.Close(l.fd)
	return err
}

// perfBitInheritThread is perf_event_attr's inherit_thread bit (Linux
// 5.13), which golang.org/x/sys/unix does not name: with inherit, only
// the threads a thread creates inherit its event.
const perfBitInheritThread = 1 << 35

// perfEvent describes the perf event config of type typ, sampled every
// period events (or nanoseconds, for the clocks).
func perfEvent(typ uint32, config, period uint64) unix.PerfEventAttr {
	return unix.PerfEventAttr{
		Type:   typ,
		Config: config,
		Size:   uint32(unsafe.Sizeof(unix.PerfEventAttr{})),
		Sample: period,
	}
}

// attachPerfEvents opens the perf event attr describes on every online
// CPU and attaches prog to each.
func attachPerfEvents(a *codegen.Attachment, prog *ebpf.Program, attr *unix.PerfEventAttr) ([]link.Link, error) {
	cpus, err := OnlineCPUs()
	if err != nil {
		return nil, err
	}
	var links []link.Link
	fail := func(err error) ([]link.Link, error) {
		for _, l := range links {
			l.Close()
		}
		return nil, fmt.Errorf("attach %s: %w", a.Probe, err)
	}
	for _, cpu := range cpus {
		l, err := attachPerfEvent(prog, attr, -1, cpu)
		if err != nil {
			return fail(fmt.Errorf("CPU %d: %w", cpu, err))
		}
		links = append(links, l)
	}
	return links, nil
}

// attachPerfEvent opens the perf event attr describes for thread tid (-1:
// every thread) on cpu (-1: every CPU) and attaches prog to it.
func attachPerfEvent(prog *ebpf.Program, attr *unix.PerfEventAttr, tid, cpu int) (link.Link, error) {
	fd, err := unix.PerfEventOpen(attr, tid, cpu, -1, unix.PERF_FLAG_FD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("open the perf event: %w", err)
	}
	l, err := link.AttachRawLink(link.RawLinkOptions{Target: fd, Program: prog, Attach: ebpf.AttachPerfEvent})
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	return &profileLink{Link: l, fd: fd}, nil
}

// OnlineCPUs lists the CPUs /sys/devices/system/cpu/online names
// ("0-3,5").
func OnlineCPUs() ([]int, error) {
	b, err := os.ReadFile("/sys/devices/system/cpu/online")
	if err != nil {
		return nil, fmt.Errorf("list the online CPUs: %w", err)
	}
	var cpus []int
	for _, r := range strings.Split(strings.TrimSpace(string(b)), ",") {
		lo, hi, isRange := strings.Cut(r, "-")
		first, err1 := strconv.Atoi(lo)
		last := first
		var err2 error
		if isRange {
			last, err2 = strconv.Atoi(hi)
		}
		if err1 != nil || err2 != nil || last < first {
			return nil, fmt.Errorf("list the online CPUs: bad range %q", r)
		}
		for c := first; c <= last; c++ {
			cpus = append(cpus, c)
		}
	}
	return cpus, nil
}
