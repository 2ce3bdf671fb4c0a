package attach

// Perf events sampled on every CPU: profile probes on the CPU clock,
// software and hardware probes on their counters (perf.go opens them).

import (
	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/gotrace/gotrace/lang"
	"github.com/gotrace/gotrace/runtime/plan"
)

// Profile attaches the profile program prog of site s to a CPU clock
// event on every online CPU, sampling every process, as bpftrace does:
// Frequency times a second, or every Period.
func Profile(s plan.Site, prog *ebpf.Program) ([]link.Link, error) {
	a := s.Attachment
	attr := perfEvent(unix.PERF_TYPE_SOFTWARE, unix.PERF_COUNT_SW_CPU_CLOCK, uint64(a.Period.Nanoseconds()))
	if a.Frequency > 0 {
		attr.Bits |= unix.PerfBitFreq
		attr.Sample = a.Frequency
	}
	return attachPerfEvents(a, prog, &attr)
}

// PerfCounter attaches the software or hardware program prog of site s
// to its perf event on every online CPU, every Count events of every
// process.
func PerfCounter(s plan.Site, prog *ebpf.Program) ([]link.Link, error) {
	a := s.Attachment
	typ := uint32(unix.PERF_TYPE_SOFTWARE)
	if a.Kind == lang.ProbeHardware {
		typ = unix.PERF_TYPE_HARDWARE
	}
	attr := perfEvent(typ, a.PerfConfig, a.Count)
	return attachPerfEvents(a, prog, &attr)
}
