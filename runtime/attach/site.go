package attach

// The one entry: a group of the plan's sites (plan.Group) and its program in, the mechanism of
// their kind chosen, links out.

import (
	"fmt"
	"io"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"

	"github.com/gotrace/gotrace/lang"
	"github.com/gotrace/gotrace/runtime/plan"
)

// Target is what the mechanisms need of the run besides a site and its
// program: how and for which process uprobes are attached, the traced
// process, where notes and warnings go. The runtime fills it in once for
// a run, and Reload for each pass that may attach uprobes.
type Target struct {
	// Mode is how usdt, uprobe and uretprobe programs are attached
	// (Loadable chose it); Execs are their files, each opened once.
	Mode  Mode
	Execs *Executables
	// UprobePID is the process uprobes are attached for, 0 for every
	// process (plan.Plan.UprobePID).
	UprobePID int
	// PID is the traced process, the one a watchpoint is set in (0: a
	// watchpoint on every CPU), and Child says it is the -c command's.
	PID   int
	Child bool
	// Warn receives warnings, Verbose -v's notes; nil drops them.
	Warn, Verbose io.Writer
	// Reload loads a program (by its name in the collection) again for
	// perf-event uprobes, when the kernel refuses its uprobe_multi link;
	// nil keeps the refusal as the error.
	Reload func(program string) (*ebpf.Program, error)
}

// notef writes a note or a warning to w, unless w is nil.
func notef(w io.Writer, format string, args ...any) {
	if w != nil {
		fmt.Fprintf(w, format, args...)
	}
}

// Site attaches prog, the program of g's attachment, at the sites of g by
// the mechanism of their kind: uprobe_multi links or perf-event uprobes
// as t.Mode says (uprobe_multi.go, uprobe.go), tracepoints
// (tracepoint.go), perf events (profile.go), hardware breakpoints
// (watchpoint.go), kernel functions (kprobe.go); a site of gotrace's own
// as Own says. It returns the links it made, with an error too those
// made before it, for the caller to keep and close: nothing it attached
// is left without an owner.
func Site(g plan.Group, prog *ebpf.Program, t *Target) ([]link.Link, error) {
	s := g.Sites[0]
	if s.Own != "" {
		return Own(s, prog, t)
	}
	switch s.Attachment.Kind {
	case lang.ProbeUSDT, lang.ProbeUprobe, lang.ProbeUretprobe:
		return uprobeGroup(g, prog, t)
	case lang.ProbeProfile:
		return Profile(s, prog)
	case lang.ProbeSoftware, lang.ProbeHardware:
		return PerfCounter(s, prog)
	case lang.ProbeWatchpoint:
		return Watchpoint(s, prog, t)
	case lang.ProbeKprobe, lang.ProbeKretprobe, lang.ProbeKfunc, lang.ProbeKretfunc:
		return KernelFunc(s, prog)
	case lang.ProbeTracepoint:
		return Tracepoint(s, prog)
	}
	return nil, fmt.Errorf("attach %s: probes of this kind cannot be attached", s.Attachment.Probe)
}

// Own attaches prog at s, a site of gotrace's own (plan.Plan.Own): a
// tracepoint by its category and event, or a perf-event uprobe at a
// symbol of a file, for the process the site names (s.PID) whatever the
// mode and process of the script's uprobes (the loader's program is
// loaded as it was compiled). Its errors say what the site is for.
func Own(s plan.Site, prog *ebpf.Program, t *Target) ([]link.Link, error) {
	var links []link.Link
	var err error
	switch s.Attachment.Kind {
	case lang.ProbeTracepoint:
		links, err = Tracepoint(s, prog)
	case lang.ProbeUprobe:
		var l link.Link
		if l, err = perfUprobe(s, prog, t.Execs, s.PID); err == nil {
			links = []link.Link{l}
		}
	default:
		err = fmt.Errorf("attach %s: probes of this kind cannot be attached", s.Attachment.Probe)
	}
	if err != nil {
		return links, fmt.Errorf("%s: %w", s.Own, err)
	}
	return links, nil
}
