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
// the runtime runs itself: the links of the probes, the BEGIN, END and
// interval programs. It owns the links and closes them (detach). It does
// not own the collections its programs come from (the load stage's:
// load.go), nor the maps, the rings or the output; when each site is attached is the plan's
// (plan.Site.When), how is runtime/attach's, which prints -v's notes and
// the watchpoint warning to the writers of target.
type attachedSet struct {
	// target is what runtime/attach needs of the run: the uprobes' mode,
	// their files and process, the traced process, the writers.
	target attach.Target

	// mu guards links and detached: the probes of a library the -c
	// command loads are attached by the reader goroutine that sees the
	// load (loadedObjects), while the run's end may be detaching.
	mu       sync.Mutex
	links    []link.Link
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

// keepRunPrograms records the programs of the sites gotrace runs
// itself (plan.Passes.Run), from coll.
func (a *attachedSet) keepRunPrograms(sites []plan.Site, coll *ebpf.Collection) error {
	for _, s := range sites {
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
	return nil
}

// attachBefore attaches the pass of ps that goes before BEGIN, with the
// programs of coll, for target, after recording the programs gotrace runs
// itself: the script's own, or those of a library the -c command loaded
// (its probes are usdt probes, attached at once).
func (a *attachedSet) attachBefore(ps plan.Passes, coll *ebpf.Collection, target attach.Target) error {
	if err := a.keepRunPrograms(ps.Run, coll); err != nil {
		return err
	}
	return a.attachPass(ps.Before, coll, target)
}

// attachPass attaches the groups of one pass of the plan, in order, with
// the programs of coll, for target. The links of the pass are kept once,
// those made before an error too, so that detach closes them.
func (a *attachedSet) attachPass(groups []plan.Group, coll *ebpf.Collection, target attach.Target) error {
	var links []link.Link
	defer func() { a.keep(links...) }()
	for _, g := range groups {
		prog, err := program(coll, g.First())
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

// newAttachedSet returns the set a run attaches to, for target (the load
// stage's: attachTarget).
func newAttachedSet(target attach.Target) *attachedSet {
	return &attachedSet{target: target}
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

// attachSites is the run's attach stage: it attaches the passes of the
// plan (plan.Passes) in their order, with the programs of the loaded
// collection, for target (how the uprobes are attached, and for which
// process; attachTarget): the script's sites that go before
// BEGIN, then gotrace's own (the family's programs, the loader's), while
// the -c command waits at its gate; it runs BEGIN, and attaches the
// kernel's probes unless BEGIN called exit(). It says how many probes of
// the script are attached ("Attaching N probes..." before, bpftrace
// 0.24's "Attached N probes" after), and lets what BEGIN printed out
// once every probe is attached, as bpftrace prints a tool's header. It
// returns whether exit() has run by then (BEGIN's, or a kernel probe's
// as it was attached): the trace then ends before the command runs.
func (t *tracer) attachSites(pl *plan.Plan, target attach.Target) (exited bool, err error) {
	t.attached = newAttachedSet(target)
	// An attach point waiting for a library the command loads later
	// counts as one probe: it is attached, if found, before the
	// library's code runs. 0.17 says it is attaching them, the newer
	// behaviour that it has (bpftrace 0.24). gotrace's own sites
	// (pl.Own) are no probes of the script.
	probes := len(pl.Sites) + len(pl.Waiting)
	if !t.opts.Quiet && !t.prog.Newer {
		if err := t.attaching(probes); err != nil {
			return false, err
		}
	}
	a := t.attached
	if err := a.attachBefore(pl.Passes, t.coll, target); err != nil {
		return false, err
	}
	if err := a.attachPass(pl.Passes.Own, t.coll, target); err != nil {
		return false, err
	}
	if !t.opts.Quiet && t.prog.Newer {
		if err := t.attaching(probes); err != nil {
			return false, err
		}
	}
	for _, prog := range a.begin {
		if err := runProgram(prog); err != nil {
			return false, fmt.Errorf("run BEGIN: %w", err)
		}
	}
	if !t.exitedEarly() {
		if err := a.attachPass(pl.Passes.After, t.coll, target); err != nil {
			return false, err
		}
	}
	t.notifyAttached()
	return t.exitedEarly(), nil
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

// exitedEarly reports whether exit() has run already, by the flag it
// sets: its record is read by another goroutine.
func (t *tracer) exitedEarly() bool {
	m := t.coll.Maps[t.spec.ExitedMap]
	var flag uint64
	return m != nil && m.Lookup(uint32(0), &flag) == nil && flag != 0
}
