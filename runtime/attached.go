package runtime

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"

	"github.com/gotrace/gotrace/lang"
	"github.com/gotrace/gotrace/runtime/attach"
	"github.com/gotrace/gotrace/runtime/plan"
)

// attachedSet is what a run has attached to the kernel, and the programs
// the runtime runs itself: the links of the probes, the collections loaded
// later for them (a perf-event fallback, the probes of libraries the -c
// command loads), the BEGIN, END and interval programs. It owns the links
// and the later collections and closes them (detach, close). It does not
// own coll, the collection its programs come from, nor the maps, the
// rings or the output; when each site is attached is the plan's
// (plan.Site.When), how is runtime/attach's, which prints -v's notes and
// the watchpoint warning to the writers of target.
type attachedSet struct {
	// coll is the loaded collection whose programs are attached.
	coll *ebpf.Collection
	// target is what runtime/attach needs of the run: the uprobes' mode,
	// their files and process, the traced process, the writers.
	target attach.Target

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
}

// interval is an interval probe's program and period.
type interval struct {
	prog   *ebpf.Program
	period time.Duration
}

// attachAll records the programs of the sites gotrace runs itself and
// attaches the sites that go before BEGIN, their programs coming from
// coll, loaded from spec (a perf-event fallback loads them again from
// it). The kernel's probes wait for BEGIN (attachKernelProbes).
func (a *attachedSet) attachAll(sites []plan.Site, coll *ebpf.Collection, spec *ebpf.CollectionSpec) error {
	for _, s := range plan.Only(sites, plan.RunByGotrace) {
		prog, err := program(coll, s)
		if err != nil {
			return err
		}
		switch s.Attachment.Kind {
		case lang.ProbeBegin:
			a.begin = append(a.begin, prog)
		case lang.ProbeEnd:
			a.end = append(a.end, prog)
		case lang.ProbeInterval:
			a.intervals = append(a.intervals, interval{prog: prog, period: s.Attachment.Period})
		}
	}
	return a.attachPass(plan.Only(sites, plan.BeforeBegin), coll, spec)
}

// attachOwn attaches gotrace's own sites (plan.Plan.Own: the family's
// tracepoints, the loader's uprobe), in their order, after the script's
// sites that go before BEGIN and before the -c command leaves its gate.
func (a *attachedSet) attachOwn(own []plan.Site) error {
	return a.attachPass(plan.Only(own, plan.BeforeBegin), a.coll, nil)
}

// attachKernelProbes attaches the sites of the kernel's probes, once
// BEGIN has run.
func (a *attachedSet) attachKernelProbes(sites []plan.Site) error {
	return a.attachPass(plan.Only(sites, plan.AfterBegin), a.coll, nil)
}

// attachPass attaches sites, in the order runtime/attach groups them,
// with the programs of coll; spec, when not nil, is what coll was loaded
// from, for a perf-event fallback. The links of the pass are kept once,
// those made before an error too, so that detach closes them.
func (a *attachedSet) attachPass(sites []plan.Site, coll *ebpf.Collection, spec *ebpf.CollectionSpec) error {
	target := a.target
	if spec != nil {
		target.Reload = func(name string) (*ebpf.Program, error) { return a.loadPerfUprobe(spec, name) }
	}
	var links []link.Link
	defer func() { a.keep(links...) }()
	for _, g := range attach.GroupSites(sites) {
		prog, err := program(coll, g.Sites[0])
		if err != nil {
			return err
		}
		made, err := attach.Site(g, prog, &target)
		links = append(links, made...)
		if err != nil {
			return err
		}
	}
	return nil
}

// program returns the program of site s in coll.
func program(coll *ebpf.Collection, s plan.Site) (*ebpf.Program, error) {
	prog := coll.Programs[s.Attachment.Program]
	if prog == nil {
		return nil, fmt.Errorf("attach %s: program %s is missing from the collection", s.Attachment.Probe, s.Attachment.Program)
	}
	return prog, nil
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

// newAttachedSet returns the set the run attaches to, the programs of
// t.coll attached for uprobes as mode says, for process uprobePID (0:
// every process).
func (t *tracer) newAttachedSet(mode attach.Mode, uprobePID int) *attachedSet {
	return &attachedSet{
		coll: t.coll,
		target: attach.Target{
			Mode:      mode,
			Execs:     attach.NewExecutables(t.files),
			UprobePID: uprobePID,
			PID:       t.pid,
			Child:     t.child != nil,
			Warn:      t.warnings(),
			Verbose:   t.notes(),
		},
	}
}

// warnings is where the attach mechanisms' warnings go: nil under
// --no-warnings.
func (t *tracer) warnings() io.Writer {
	if t.opts.NoWarnings {
		return nil
	}
	return t.opts.Err
}

// notes is where -v's notes go: nil without -v.
func (t *tracer) notes() io.Writer {
	if t.opts.Verbose {
		return t.opts.Err
	}
	return nil
}

// attachSites attaches the sites of the plan, the script's and then
// gotrace's own (the family's programs and the loader's), and says how
// many probes of the script are attached ("Attaching N probes..."
// before, bpftrace 0.24's "Attached N probes" after). The kernel probes
// wait for BEGIN (startTrace). objs are the objects the -c command's
// probes were looked for in.
func (t *tracer) attachSites(pl *plan.Plan, objs []string) error {
	sites := pl.Sites
	// An attach point waiting for a library the command loads later
	// counts as one probe: it is attached, if found, before the
	// library's code runs. 0.17 says it is attaching them, the newer
	// behaviour that it has (bpftrace 0.24). gotrace's own sites
	// (pl.Own) are no probes of the script.
	probes := len(sites) + len(pl.Waiting)
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
	if err := t.attached.attachOwn(pl.Own); err != nil {
		return err
	}
	if !t.opts.Quiet && t.prog.Newer {
		if err := t.attaching(probes); err != nil {
			return err
		}
	}
	t.searchedAtStart(objs)
	return nil
}
