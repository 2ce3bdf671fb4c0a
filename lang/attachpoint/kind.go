// Package attachpoint reads bpftrace's attach points: the probe kinds and
// their names, the syntax of an attach point's fields, and the matching of
// its wildcards and C++ names against what a file offers. The script's
// parser (lang), listing (-l, in usdt) and attaching (runtime) all use it,
// so that a pattern means the same in each. It imports nothing of gotrace's.
package attachpoint

// Kind says what an attach point attaches to.
type Kind int

// The probe kinds gotrace parses. Kprobe and Kretprobe are parsed and then
// refused where the kernel has no kprobes.
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
}

// String returns bpftrace's name of k.
func (k Kind) String() string {
	if k < 0 || int(k) >= len(kindNames) {
		return kindNames[Unknown].name
	}
	return kindNames[k].name
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
	{"software", "s"},
	{"hardware", "h"},
	{"watchpoint", "w"},
	{"asyncwatchpoint", "aw"},
	{"kfunc", "f"},
	{"kretfunc", "fr"},
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
