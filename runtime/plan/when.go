package plan

import "github.com/gotrace/gotrace/lang"

// When says at which point of a run a site is attached. It follows from
// the site's kind, and whether it is gotrace's own (whenOfSite), so that
// the runtime filters the sites of each pass by it rather than deciding
// by kind in several places.
type When int

const (
	// RunByGotrace is a program gotrace runs itself (BEGIN, END,
	// interval): nothing is attached.
	RunByGotrace When = iota
	// BeforeBegin is attached before BEGIN runs: the probes in user files
	// (usdt, uprobe, uretprobe), which fire only in the traced processes,
	// held until every probe is attached, and profile probes.
	BeforeBegin
	// AfterBegin is attached once BEGIN has run: the kernel's probes
	// (tracepoint, software, hardware, watchpoint, kprobe, kretprobe,
	// kfunc, kretfunc) fire system-wide at once, and BEGIN's output (a
	// tool's header) comes first, as in bpftrace.
	AfterBegin
)

// String names the point of the run, for messages and tests.
func (w When) String() string {
	switch w {
	case RunByGotrace:
		return "run by gotrace"
	case BeforeBegin:
		return "attached before BEGIN"
	case AfterBegin:
		return "attached after BEGIN"
	}
	return "unknown"
}

// whenOf says when a site of the script of kind k is attached: the one
// place that decides it.
func whenOf(k lang.ProbeKind) When {
	switch k {
	case lang.ProbeBegin, lang.ProbeEnd, lang.ProbeInterval:
		return RunByGotrace
	case lang.ProbeTracepoint, lang.ProbeSoftware, lang.ProbeHardware, lang.ProbeWatchpoint,
		lang.ProbeKprobe, lang.ProbeKretprobe, lang.ProbeKfunc, lang.ProbeKretfunc:
		return AfterBegin
	}
	return BeforeBegin
}

// whenOfSite says when site s is attached: a site of gotrace's own
// (Site.Own) before BEGIN and before the -c command leaves its gate,
// whatever its kind (the family's tracepoints must see the command's
// first fork, the loader's uprobe its first load), a site of the script
// as its kind says (whenOf).
func whenOfSite(s Site) When {
	if s.Own != "" {
		return BeforeBegin
	}
	return whenOf(s.Attachment.Kind)
}

// UprobePID is the process the usdt, uprobe and uretprobe sites are
// attached for: 0, every process, when the programs filter on the -c
// command's family themselves (Family), else PID.
func (pl *Plan) UprobePID() int {
	if pl.Family != nil {
		return 0
	}
	return pl.PID
}
