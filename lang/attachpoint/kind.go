// Package attachpoint reads bpftrace's attach points: the probe kinds and
// their names, the syntax of an attach point's fields, and the matching of
// its wildcards and C++ names against what a file offers. The script's
// parser (lang), listing (-l, in usdt) and attaching (runtime) all use it,
// so that a pattern means the same in each. It imports nothing of gotrace's.
package attachpoint

// Kind says what an attach point attaches to.
type Kind int

// The probe kinds gotrace parses. Kprobe, Kretprobe, Kfunc and Kretfunc
// (fentry and fexit programs) are compiled and loaded everywhere, and
// refused at attach time by kernels without kprobes or BPF trampolines.
const (
	Unknown Kind = iota
	Begin
	End
	USDT
	Uprobe
	Uretprobe
	Interval
	Profile
	Tracepoint
	Kprobe
	Kretprobe
	Software
	Hardware
	Watchpoint
	Kfunc
	Kretfunc
)

// kindNames are each kind's name, as bpftrace writes it in its messages,
// and its other name in scripts: a short alias, or for BEGIN and END the
// lower-case names of bpftrace 0.24 and later.
var kindNames = [...]struct{ name, alias string }{
	Unknown:    {"unknown", ""},
	Begin:      {"BEGIN", "begin"},
	End:        {"END", "end"},
	USDT:       {"usdt", "U"},
	Uprobe:     {"uprobe", "u"},
	Uretprobe:  {"uretprobe", "ur"},
	Interval:   {"interval", "i"},
	Profile:    {"profile", "p"},
	Tracepoint: {"tracepoint", "t"},
	Kprobe:     {"kprobe", "k"},
	Kretprobe:  {"kretprobe", "kr"},
	Software:   {"software", "s"},
	Hardware:   {"hardware", "h"},
	Watchpoint: {"watchpoint", "w"},
	Kfunc:      {"kfunc", "f"},
	Kretfunc:   {"kretfunc", "fr"},
}

// String returns bpftrace's name of k.
func (k Kind) String() string {
	if k < 0 || int(k) >= len(kindNames) {
		return kindNames[Unknown].name
	}
	return kindNames[k].name
}

// TypeName is the name bpftrace gives the probe type of kind k in its
// messages and its probetype builtin: "special" for BEGIN and END, k's
// name for the others.
func (k Kind) TypeName() string {
	if k == Begin || k == End {
		return "special"
	}
	return k.String()
}

// LookupKind returns the kind a probe type of an attach point names, by
// its name or its alias (usdt or U).
func LookupKind(name string) (Kind, bool) {
	for k, n := range kindNames {
		if Kind(k) != Unknown && (name == n.name || name == n.alias) {
			return Kind(k), true
		}
	}
	return Unknown, false
}

// unattached are bpftrace's probe types (0.17's, and fentry, fexit and
// rawtracepoint of later versions) that gotrace does not attach, by name
// and alias.
var unattached = []struct{ name, alias string }{
	{"asyncwatchpoint", "aw"},
	{"fentry", ""},
	{"fexit", ""},
	{"iter", "it"},
	{"rawtracepoint", "rt"},
}

// Unattached returns the name of the bpftrace probe type that name or
// alias stands for when it is one gotrace does not attach.
func Unattached(name string) (string, bool) {
	for _, n := range unattached {
		if name == n.name || name == n.alias {
			return n.name, true
		}
	}
	return "", false
}

// PerfEvent is a perf event a software or hardware probe names.
type PerfEvent struct {
	// Name is bpftrace's name of it, Alias its short name ("" for none).
	Name, Alias string
	// Config is the kernel's PERF_COUNT_SW_* or PERF_COUNT_HW_* number of
	// the event.
	Config uint64
	// DefaultCount is how many events make one hit when the probe gives
	// no count.
	DefaultCount uint64
}

// SoftwareEvents are bpftrace 0.17's software events, in the kernel's
// order.
var SoftwareEvents = []PerfEvent{
	{"cpu-clock", "cpu", 0, 1000000},
	{"task-clock", "", 1, 1000000},
	{"page-faults", "faults", 2, 100},
	{"context-switches", "cs", 3, 1000},
	{"cpu-migrations", "", 4, 1},
	{"minor-faults", "", 5, 100},
	{"major-faults", "", 6, 1},
	{"alignment-faults", "", 7, 1},
	{"emulation-faults", "", 8, 1},
	{"dummy", "", 9, 1},
	{"bpf-output", "", 10, 1},
}

// HardwareEvents are bpftrace 0.17's hardware events, in the kernel's
// order.
var HardwareEvents = []PerfEvent{
	{"cpu-cycles", "cycles", 0, 1000000},
	{"instructions", "", 1, 1000000},
	{"cache-references", "", 2, 1000000},
	{"cache-misses", "", 3, 1000000},
	{"branch-instructions", "branches", 4, 100000},
	{"branch-misses", "", 5, 100000},
	{"bus-cycles", "", 6, 100000},
	{"frontend-stalls", "", 7, 1000000},
	{"backend-stalls", "", 8, 1000000},
	{"ref-cycles", "", 9, 1000000},
}

// LookupPerfEvent returns the event of a software or hardware probe (kind)
// that name or alias names.
func LookupPerfEvent(kind Kind, name string) (PerfEvent, bool) {
	events := SoftwareEvents
	if kind == Hardware {
		events = HardwareEvents
	}
	for _, e := range events {
		if name == e.Name || name == e.Alias && e.Alias != "" {
			return e, true
		}
	}
	return PerfEvent{}, false
}
