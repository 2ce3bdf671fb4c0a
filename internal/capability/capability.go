// Package capability finds out what this machine's CPU and kernel can do
// for gotrace by trying each feature the way gotrace uses it: open a
// breakpoint on a variable of gotrace's own and write it, open a cycle
// counter, attach a kprobe, load an fentry program, create a ring buffer.
// Its table is the one place that decides: gotrace --info prints it, the
// runtime refuses or warns from it, and the tests that need a feature
// skip from it. Each feature is tried at most once per process, and only
// when something asks about it.
package capability

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// Feature names a hardware- or kernel-dependent feature; the name is the
// one --info prints.
type Feature string

// The features, in the order --info prints them.
const (
	RingBuf        Feature = "ring buffer maps"
	Uprobes        Feature = "uprobes"
	UprobeRefCtr   Feature = "uprobe reference counter"
	UprobeMulti    Feature = "uprobe_multi"
	Kprobes        Feature = "kprobes"
	Fentry         Feature = "fentry"
	Tracefs        Feature = "tracefs"
	BTF            Feature = "btf"
	PMU            Feature = "hardware PMU"
	Breakpoints    Feature = "hardware breakpoints"
	RawTracepoint  Feature = "raw tracepoint programs"
	PerfEventProgs Feature = "perf event programs"
	ForEachMapElem Feature = "for_each_map_elem"
	Loop           Feature = "loop"
	LookupPercpu   Feature = "lookup_percpu_elem"
	NamespacePIDs  Feature = "PID namespace ids"
)

// Row is what trying one feature found.
type Row struct {
	Feature Feature
	// Available is true when the feature worked here.
	Available bool
	// Unknown is true when this process lacks the privileges to try the
	// feature (CAP_BPF, CAP_PERFMON): then Available says nothing.
	Unknown bool
	// Evidence is what happened when it was tried, in words.
	Evidence string
	// Uses says what of gotrace needs the feature.
	Uses string
}

// NotAvailable says that the feature is not available and why, as the
// runtime refuses what needs it.
func (r Row) NotAvailable() string {
	return fmt.Sprintf("%s are not available: %s", r.Feature, r.Evidence)
}

// Answer is the row's yes, no or unknown.
func (r Row) Answer() string {
	switch {
	case r.Unknown:
		return "unknown"
	case r.Available:
		return "yes"
	}
	return "no"
}

// String is the row as --info prints it: "NAME: ANSWER (EVIDENCE; for USES)".
func (r Row) String() string {
	return fmt.Sprintf("%s: %s (%s; for %s)", r.Feature, r.Answer(), r.Evidence, r.Uses)
}

// probe tries one feature; its result is kept for the process.
type probe struct {
	feature Feature
	uses    string
	try     func() (bool, string, error)
	once    sync.Once
	row     Row
}

// probes are every feature's probe, in --info's order.
var probes = []*probe{
	{feature: RingBuf, uses: "printf(), exit() and every other event", try: tryRingBuf},
	{feature: Uprobes, uses: "usdt, uprobe, uretprobe", try: tryUprobes},
	{feature: UprobeRefCtr, uses: "USDT semaphores", try: tryUprobeRefCtr},
	{feature: UprobeMulti, uses: "attaching many uprobe locations at once", try: tryUprobeMulti},
	{feature: Kprobes, uses: "kprobe, kretprobe", try: tryKprobes},
	{feature: Fentry, uses: "kfunc, kretfunc", try: tryFentry},
	{feature: Tracefs, uses: "tracepoint probes; gotrace mounts it as root", try: tryTracefs},
	{feature: BTF, uses: "kernel types: casts to kernel structs, curtask, kfunc arguments", try: tryBTF},
	{feature: PMU, uses: "hardware probes", try: tryPMU},
	{feature: Breakpoints, uses: "watchpoint probes", try: tryBreakpoints},
	{feature: RawTracepoint, uses: "BEGIN, END and interval run as these", try: tryRawTracepoint},
	{feature: PerfEventProgs, uses: "profile, software and hardware probes", try: tryPerfEventProgs},
	{feature: ForEachMapElem, uses: "for ($kv : @m), len(@m)", try: tryForEachMapElem},
	{feature: Loop, uses: "for ($kv : @m) over count(), sum(), min(), max(), avg()", try: tryLoop},
	{feature: LookupPercpu, uses: "for ($kv : @m) over count(), sum(), min(), max(), avg()", try: tryLookupPercpu},
	{feature: NamespacePIDs, uses: "pid, tid and user stacks as gotrace's own PID namespace (a container) numbers them", try: tryNamespacePIDs},
}

// Of returns the row of feature f, trying it on the first call. An
// unknown feature is a programming error and panics.
func Of(f Feature) Row {
	for _, p := range probes {
		if p.feature == f {
			return p.result()
		}
	}
	panic(fmt.Sprintf("capability: unknown feature %q", f))
}

// All returns every feature's row, trying those not yet tried.
func All() []Row {
	rows := make([]Row, len(probes))
	for i, p := range probes {
		rows[i] = p.result()
	}
	return rows
}

// Features returns every feature's name, without trying any.
func Features() []Feature {
	fs := make([]Feature, len(probes))
	for i, p := range probes {
		fs[i] = p.feature
	}
	return fs
}

// result tries the feature once and keeps the row.
func (p *probe) result() Row {
	p.once.Do(func() {
		ok, evidence, err := p.try()
		p.row = Row{Feature: p.feature, Available: ok && err == nil, Evidence: evidence, Uses: p.uses}
		if err != nil {
			// The memory lock limit is removed before loading, so
			// cilium/ebpf's guess that it caused an EPERM is wrong.
			p.row.Evidence = evidence + ": " + strings.Replace(err.Error(), memlockHint, "", 1)
			switch {
			case permissionDenied(err) && !privileged():
				p.row.Unknown = true
				p.row.Evidence = "finding out needs CAP_BPF and CAP_PERFMON (" + p.row.Evidence + ")"
			case permissionDenied(err):
				p.row.Evidence += ", though this process has the capabilities"
			}
		}
	})
	return p.row
}

// memlockHint is what cilium/ebpf adds to every EPERM of a program load.
const memlockHint = " (MEMLOCK may be too low, consider rlimit.RemoveMemlock)"

// permissionDenied reports whether err is the kernel refusing for lack
// of privileges (EPERM or EACCES).
func permissionDenied(err error) bool {
	return errors.Is(err, os.ErrPermission) || errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES)
}

// privileged reports whether this process holds what loading programs and
// opening perf events need: CAP_SYS_ADMIN, or CAP_BPF and CAP_PERFMON. A
// refusal to such a process is a fact of the kernel, not of the user.
func privileged() bool {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return false
	}
	caps := uint64(data[0].Effective) | uint64(data[1].Effective)<<32
	has := func(c int) bool { return caps&(1<<uint(c)) != 0 }
	return has(unix.CAP_SYS_ADMIN) || has(unix.CAP_BPF) && has(unix.CAP_PERFMON)
}
