package runtime

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/gotrace/gotrace/codegen"
	"github.com/gotrace/gotrace/internal/capability"
	"github.com/gotrace/gotrace/lang"
	"github.com/gotrace/gotrace/runtime/attach"
	"github.com/gotrace/gotrace/runtime/plan"
)

// attachedSet is what a run has attached to the kernel, and the programs
// the runtime runs itself: the links of the probes, the collections loaded
// later for them (a perf-event fallback, the probes of libraries the -c
// command loads), the BEGIN, END and interval programs, and the kernel
// probes that wait for BEGIN. It owns the links and the later collections
// and closes them (detach, close). It does not own coll, the collection
// its programs come from, nor the maps, the rings or the output: it
// prints only -v's notes and the watchpoint warning, to the writers it was
// given.
type attachedSet struct {
	// coll is the loaded collection whose programs are attached.
	coll *ebpf.Collection
	// uprobes is how usdt and uprobe programs are attached; execs are
	// the files they are attached to, each opened once.
	uprobes attach.Mode
	execs   *attach.Executables
	// uprobePID is the process the uprobes are filtered on, 0 for every
	// process (uprobePID); watchPID is the traced process, the one
	// watchpoints are set in, and watchChild says it is the -c
	// command's.
	uprobePID  int
	watchPID   int
	watchChild bool
	// verbose receives -v's notes (nil without -v), warn the warnings.
	verbose, warn io.Writer

	// mu guards links, extra and detached: the probes of a library the
	// -c command loads are attached by the reader goroutine that sees the
	// load (loadedObjects), while the run's end may be detaching.
	mu       sync.Mutex
	links    []link.Link
	extra    []*ebpf.Collection
	detached bool
	// begin, end and intervals are the programs the runtime runs itself.
	begin, end []*ebpf.Program
	intervals  []interval
	// afterBegin are the sites of kernel probes, attached once BEGIN has
	// run: they fire system-wide at once, and BEGIN's output (a tool's
	// header) comes first, as in bpftrace.
	afterBegin []plan.Site
}

// interval is an interval probe's program and period.
type interval struct {
	prog   *ebpf.Program
	period time.Duration
}

// loadSpec returns the collection spec of spec to load for uprobes
// attached as mode says: as compiled, or, with uprobe_multi links, with
// the programs of usdt and uprobe probes loaded for them.
func loadSpec(mode attach.Mode, spec *codegen.Spec) *ebpf.CollectionSpec {
	if mode == attach.MultiUprobes {
		return attach.ForUprobeMulti(spec.Collection, spec.Attachments)
	}
	return spec.Collection
}

// attachAll attaches every site, the programs coming from coll, loaded
// from spec: the runtime's own sites one by one, in order, and the
// locations in files by attachment and file (attachGroup).
func (a *attachedSet) attachAll(sites []plan.Site, coll *ebpf.Collection, spec *ebpf.CollectionSpec) error {
	own, groups := attach.GroupSites(sites)
	for _, s := range own {
		if err := a.attach(s); err != nil {
			return err
		}
	}
	for _, g := range groups {
		prog := coll.Programs[g.Sites[0].Attachment.Program]
		if prog == nil {
			return fmt.Errorf("attach %s: program %s is missing from the collection", g.Sites[0].Attachment.Probe, g.Sites[0].Attachment.Program)
		}
		if err := a.attachGroup(g, prog, spec); err != nil {
			return err
		}
	}
	return nil
}

// attach attaches one site, or records the program of a BEGIN, END or
// interval site for the runtime to run.
func (a *attachedSet) attach(s plan.Site) error {
	prog := a.coll.Programs[s.Attachment.Program]
	if prog == nil {
		return fmt.Errorf("attach %s: program %s is missing from the collection", s.Attachment.Probe, s.Attachment.Program)
	}
	switch s.Attachment.Kind {
	case lang.ProbeBegin:
		a.begin = append(a.begin, prog)
		return nil
	case lang.ProbeEnd:
		a.end = append(a.end, prog)
		return nil
	case lang.ProbeInterval:
		a.intervals = append(a.intervals, interval{prog: prog, period: s.Attachment.Period})
		return nil
	case lang.ProbeProfile:
		links, err := attach.Profile(s, prog)
		a.keep(links...)
		return err
	case lang.ProbeTracepoint, lang.ProbeSoftware, lang.ProbeHardware, lang.ProbeWatchpoint,
		lang.ProbeKprobe, lang.ProbeKretprobe, lang.ProbeKfunc, lang.ProbeKretfunc:
		a.afterBegin = append(a.afterBegin, s)
		return nil
	}
	return a.attachProbe(s, prog)
}

// attachKernelProbes attaches the kernel probes that waited for BEGIN.
func (a *attachedSet) attachKernelProbes() error {
	for _, s := range a.afterBegin {
		if err := a.attachKernel(s); err != nil {
			return err
		}
	}
	return nil
}

// attachKernel attaches a kernel probe's site.
func (a *attachedSet) attachKernel(s plan.Site) error {
	prog := a.coll.Programs[s.Attachment.Program]
	switch s.Attachment.Kind {
	case lang.ProbeSoftware, lang.ProbeHardware:
		links, err := attach.PerfCounter(s, prog)
		a.keep(links...)
		return err
	case lang.ProbeWatchpoint:
		// Asked only here, so that scripts without watchpoints open no
		// breakpoint of their own.
		bp := capability.Of(capability.Breakpoints)
		links, err := attach.Watchpoint(s, prog, a.watchPID, a.watchChild)
		a.keep(links...)
		if err == nil && !bp.Available && !bp.Unknown {
			fmt.Fprintf(a.warn, "WARNING: %s: the probe will not fire: hardware breakpoints attach on this machine but are not delivered (tried by gotrace: %s)\n", s.Attachment.Probe, bp.Evidence)
		}
		return err
	case lang.ProbeKprobe, lang.ProbeKretprobe, lang.ProbeKfunc, lang.ProbeKretfunc:
		l, err := attach.KernelFunc(s, prog)
		if err != nil {
			return err
		}
		a.keep(l)
		return nil
	}
	l, err := attach.Tracepoint(s, prog)
	if err != nil {
		return err
	}
	a.keep(l)
	return nil
}

// The run's uprobes: each group of a program's locations in one file is
// attached with one uprobe_multi link where the run uses them, else, or
// when the kernel refuses the link, with a perf-event uprobe per
// location (the mechanisms are runtime/attach's).

// attachProbe attaches prog at a USDT or uprobe site.
func (a *attachedSet) attachProbe(s plan.Site, prog *ebpf.Program) error {
	l, err := attach.Uprobe(s, prog, a.execs, a.uprobePID)
	if err != nil {
		return err
	}
	a.keep(l)
	if a.verbose != nil {
		fmt.Fprintf(a.verbose, "attached %s to %s (semaphore at offset %#x)\n", s.Attachment.Probe, s.Where(), s.USDT.SemaphoreOffset)
	}
	return nil
}

// attachGroup attaches the locations of g: with one uprobe_multi link
// when a uses them, else, or when the kernel refuses the link (a limit of
// its own, such as a file it cannot probe that way), one perf-event
// uprobe per location, with the program loaded again from spec for that
// kind of attachment.
func (a *attachedSet) attachGroup(g attach.Group, prog *ebpf.Program, spec *ebpf.CollectionSpec) error {
	if a.uprobes != attach.MultiUprobes {
		for _, s := range g.Sites {
			if err := a.attachProbe(s, prog); err != nil {
				return err
			}
		}
		return nil
	}
	l, err := attach.UprobeMulti(g, prog, a.execs, a.uprobePID)
	if err == nil {
		a.keep(l)
		if a.verbose != nil {
			fmt.Fprintf(a.verbose, "attached %s to %d locations of %s with one uprobe_multi link\n", g.Sites[0].Attachment.Probe, len(g.Sites), g.Sites[0].Path)
		}
		return nil
	}
	if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) {
		return err
	}
	fallback, lerr := a.loadPerfUprobe(spec, g.Sites[0].Attachment.Program)
	if lerr != nil {
		return fmt.Errorf("%w; and again for perf-event uprobes: %v", err, lerr)
	}
	if a.verbose != nil {
		fmt.Fprintf(a.verbose, "%v; attaching perf-event uprobes instead\n", err)
	}
	for _, s := range g.Sites {
		if err := a.attachProbe(s, fallback); err != nil {
			return err
		}
	}
	return nil
}

// loadPerfUprobe loads program name of spec again, for perf-event
// uprobes, sharing the maps already created.
func (a *attachedSet) loadPerfUprobe(spec *ebpf.CollectionSpec, name string) (*ebpf.Program, error) {
	spec = spec.Copy()
	for other := range spec.Programs {
		if other != name {
			delete(spec.Programs, other)
		}
	}
	coll, err := loadSharing(spec, a.coll.Maps)
	if err != nil {
		return nil, err
	}
	a.keepCollection(coll)
	return coll.Programs[name], nil
}

// keep adds links to those detach closes. Once the set is detached, a
// link made late (a library the command loaded as the trace ended) is
// closed at once: no probe outlives the run's end, and no semaphore stays
// raised in the traced process.
func (a *attachedSet) keep(links ...link.Link) {
	a.mu.Lock()
	if !a.detached {
		a.links = append(a.links, links...)
		links = nil
	}
	a.mu.Unlock()
	closeLinks(links)
}

// keepCollection adds a collection loaded after the first (for the
// probes of a library the command loaded) to those close closes.
func (a *attachedSet) keepCollection(c *ebpf.Collection) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.extra = append(a.extra, c)
}

// detach closes every link, so that no probe fires any more and the
// semaphores of a traced process go back to zero, and closes the links
// kept after it at once (keep). Without a set (the run ended before
// loading) there is nothing to close.
func (a *attachedSet) detach() {
	if a == nil {
		return
	}
	a.mu.Lock()
	links := a.links
	a.links, a.detached = nil, true
	a.mu.Unlock()
	closeLinks(links)
}

// closeLinks closes links all at once: the kernel waits for an RCU grace
// period (tens of milliseconds) in each uprobe's teardown, and closes made
// in parallel share their grace periods. One after another, the 531 USDT
// locations of libjvm.so took 100 s to detach.
func closeLinks(links []link.Link) {
	var wg sync.WaitGroup
	for _, l := range links {
		wg.Go(func() { l.Close() })
	}
	wg.Wait()
}

// close closes the collections loaded after the first; detach comes
// first.
func (a *attachedSet) close() {
	if a == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, c := range a.extra {
		c.Close()
	}
	a.extra = nil
}

// runProgram runs a BEGIN, END or interval program once, in the kernel,
// with BPF_PROG_TEST_RUN.
func runProgram(prog *ebpf.Program) error {
	opts := &ebpf.RunOptions{}
	if prog.Type() != ebpf.RawTracepoint {
		// Packet-based program types want at least an Ethernet header.
		opts.Data = make([]byte, 14)
	}
	_, err := prog.Run(opts)
	return err
}

// chooseUprobes chooses how usdt and uprobe programs are attached: for a
// script without them, as the zero Mode says, with nothing asked.
// Asking the kernel whether it has uprobe_multi links loads and attaches
// test programs (6% of the CPU time of BEGIN { exit(); }): only a script
// with usdt or uprobe probes needs the answer.
func (t *tracer) chooseUprobes() attach.Mode {
	if !slices.ContainsFunc(t.spec.Attachments, func(a codegen.Attachment) bool { return plan.UserKind(a.Kind) }) {
		if t.opts.Verbose {
			fmt.Fprintln(t.opts.Err, "uprobes: none in the script")
		}
		return attach.PerfUprobes
	}
	mode, why := attach.ChooseMode(t.opts.NoUprobeMulti, t.uprobePID())
	if t.opts.Verbose {
		fmt.Fprintf(t.opts.Err, "uprobes: %s", mode)
		if why != "" {
			fmt.Fprintf(t.opts.Err, " (%s)", why)
		}
		fmt.Fprintln(t.opts.Err)
	}
	return mode
}

// newAttachedSet returns the set the run attaches to, the programs of
// t.coll attached for uprobes as mode says, for the traced process.
func (t *tracer) newAttachedSet(mode attach.Mode) *attachedSet {
	a := &attachedSet{
		coll:       t.coll,
		uprobes:    mode,
		execs:      attach.NewExecutables(t.files),
		uprobePID:  t.uprobePID(),
		watchPID:   t.pid,
		watchChild: t.child != nil,
		warn:       t.opts.Err,
	}
	if t.opts.Verbose {
		a.verbose = t.opts.Err
	}
	return a
}

// attachSites attaches the sites of the plan, the family's programs and
// the loader's, and says how many probes are attached ("Attaching N
// probes..." before, bpftrace 0.24's "Attached N probes" after). The
// kernel probes wait for BEGIN (startTrace).
func (t *tracer) attachSites(sites []plan.Site, objs []string) error {
	// An attach point waiting for a library the command loads later
	// counts as one probe: it is attached, if found, before the
	// library's code runs. 0.17 says it is attaching them, the newer
	// behaviour that it has (bpftrace 0.24).
	probes := len(sites) + len(t.waiting())
	if !t.opts.Quiet && !t.prog.Newer {
		if err := t.attaching(probes); err != nil {
			return err
		}
	}
	if err := t.attached.attachAll(sites, t.coll, t.spec.Collection); err != nil {
		return err
	}
	if err := t.keepFamily(); err != nil {
		return err
	}
	if !t.opts.Quiet && t.prog.Newer {
		if err := t.attaching(probes); err != nil {
			return err
		}
	}
	return t.watchLoader(objs)
}
