package runtime

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"syscall"
	"time"

	"github.com/cilium/ebpf/ringbuf"
	"golang.org/x/sys/unix"

	"github.com/gotrace/gotrace/codegen"
	"github.com/gotrace/gotrace/internal/memlock"
	"github.com/gotrace/gotrace/lang"
	"github.com/gotrace/gotrace/runtime/attach"
	"github.com/gotrace/gotrace/runtime/capture"
	"github.com/gotrace/gotrace/runtime/output"
	"github.com/gotrace/gotrace/runtime/plan"
	"github.com/gotrace/gotrace/runtime/proc"
	"github.com/gotrace/gotrace/runtime/symbols"
	"github.com/gotrace/gotrace/usdt"
)

// pollRecords is how many records the events reader handles in a burst
// between two looks at the clock for lostPoll.
const pollRecords = 256

// outHold is how much output the tracer holds before it writes it.
const outHold = 64 << 10

// childGrace is how long a -c command that is still running at the end
// gets to exit after SIGTERM before it is killed.
const childGrace = time.Second

// ErrQuit is the cause (context.WithCancelCause) with which a caller ends
// Run at once, as SIGQUIT ends bpftrace 0.17: without END and without
// printing the maps. Run then returns ErrQuit.
var ErrQuit = errors.New("quit")

// ExitStatus is what Run returns when the trace ended normally by
// exit(code) with a code other than 0: the exit status gotrace ends with,
// as bpftrace does.
type ExitStatus uint8

// Error says which status the script asked for.
func (s ExitStatus) Error() string { return fmt.Sprintf("exit(%d)", uint8(s)) }

// Run traces: it compiles p, with what the checker recorded about it in
// info (lang.Analyze), loads it, attaches its probes, prints what
// the programs ask for and, when the trace ends (exit(), ctx cancelled by
// SIGINT/SIGTERM, the -c command or the -p process exiting), runs END,
// prints the maps and detaches everything. It returns nil on such a normal
// end. On SIGUSR1 it prints every map, as bpftrace does, and goes on.
// Every kernel object it created is gone when it returns, whatever the
// path out.
//
// Run is the list of the run's stages, each taking what the one before it
// made: the traced processes started or opened (startProcesses), the plan
// made (plan.Make), the plan loaded (loadPlan), its sites attached
// (attachSites), BEGIN and the readers started (startTrace), the wait
// (wait), and the end (finish).
func Run(ctx context.Context, p *lang.Program, info *lang.Info, opts Options) (err error) {
	opts = opts.withDefaults()
	memlock.Raise()
	// The attach points as lang.Resolve found them; p stays as parsed.
	p = info.ResolvedProgram(p)
	// Whether the script ends by itself after BEGIN is a fact of the
	// checked program, which the front end recorded.
	endsAfterBegin := info.ExitsAfterBegin()

	format, err := output.ParseFormat(opts.Format)
	if err != nil {
		return err
	}
	t := newTracer(p, info, opts, format)
	defer func() {
		if cerr := t.close(); err == nil {
			err = cerr
		}
	}()
	// Caught from the start: SIGUSR1's default action ends the process.
	usr1 := make(chan os.Signal, 1)
	signal.Notify(usr1, syscall.SIGUSR1)
	defer func() {
		if !opts.LastTrace {
			signal.Stop(usr1)
		}
	}()

	objs, err := t.startProcesses()
	if err != nil {
		return err
	}
	childPID := t.childPID()
	pl, err := plan.Make(p, info, familyInput(planInput(opts, objs, childPID, t.files)))
	if err != nil {
		return err
	}
	if err := t.loadPlan(pl); err != nil {
		return err
	}
	if err := t.attachSites(pl.Sites, objs); err != nil {
		return err
	}
	if err := t.startTrace(pl.Sites, endsAfterBegin); err != nil {
		return err
	}
	if opts.Attached != nil {
		opts.Attached()
	}
	t.wait(ctx, usr1)
	if errors.Is(context.Cause(ctx), ErrQuit) {
		// close detaches, stops the command and writes what was printed,
		// with the records sent before the signal.
		t.loop.drain()
		return ErrQuit
	}
	return t.finish()
}

// withDefaults fills in what Run needs of the options the caller left
// unset: output that goes nowhere, the text format.
func (opts Options) withDefaults() Options {
	if opts.Out == nil {
		opts.Out = io.Discard
	}
	if opts.Err == nil {
		opts.Err = io.Discard
	}
	if opts.Format == "" {
		opts.Format = "text"
	}
	return opts
}

// newTracer returns the state of a run of p: its output set up in format
// as opts ask (held, queued, captured or diverted), nothing started yet.
func newTracer(p *lang.Program, info *lang.Info, opts Options, format output.Format) *tracer {
	t := &tracer{
		printer: printer{
			opts: opts,
			prog: p,
			loop: newEventLoop(),
			out:  output.NewWriter(opts.Out, format),
		},
		info:  info,
		pid:   opts.PID,
		files: &usdt.Files{},
	}
	t.loaded = t.loadedObjects
	switch {
	case opts.Capture != nil:
		t.out = output.NewWriter(io.Discard, format)
	case !opts.LineBuffered:
		// -B line and -B none keep writing each line themselves.
		t.queue = newOutQueue(opts.Out, t.loop.requestExit)
		t.out = output.NewWriter(t.queue, format)
	}
	if !opts.LineBuffered {
		t.out.Hold(outHold)
	}
	if opts.TakeMap != nil && opts.Capture == nil {
		t.out.Divert(opts.TakeMap)
	}
	return t
}

// startProcesses starts the -c command, held at its gate, or opens the
// -p process. It returns the objects the command maps at start (the
// executable and the libraries it needs), which the plan searches for
// the probes of attach points without a path.
func (t *tracer) startProcesses() ([]string, error) {
	switch {
	case t.opts.Command != "":
		objs, err := plan.CommandObjects(t.opts.Command, t.files)
		if err != nil {
			return nil, err
		}
		if t.child, err = proc.StartChild(t.opts.Command, proc.RunAs{User: t.opts.User, Root: t.opts.AsRoot}); err != nil {
			return nil, err
		}
		t.pid = t.child.PID
		return objs, nil
	case t.opts.PID != 0:
		var err error
		t.process, err = proc.OpenProcess(t.opts.PID)
		return nil, err
	}
	return nil, nil
}

// childPID is the -c command's PID, 0 without one.
func (t *tracer) childPID() int {
	if t.child == nil {
		return 0
	}
	return t.child.PID
}

// loadPlan loads the plan: its spec becomes the collection of programs and
// maps, with the unwind tables and the symbolizer they read, the ring
// readers opened and the capture's header written. Nothing is attached.
func (t *tracer) loadPlan(pl *plan.Plan) error {
	t.spec = pl.Spec
	t.familyRecs, t.noFamily = pl.Family, pl.NoFamily
	if t.opts.Compiled != nil {
		t.opts.Compiled()
	}
	if err := t.checkMetrics(); err != nil {
		return err
	}
	if len(pl.Sites) == 0 && t.spec.LoaderProgram == "" {
		return plan.ErrNoProbes
	}
	t.syms = symbols.New(t.pid, siteSymbols(pl.Sites), t.files)
	// The unwind tables follow the mappings symbols learns, from the
	// start of tracking: the maps exist before the collection.
	var err error
	if t.unwind, err = newUnwindTables(t.spec.Collection, t.verbosef); err != nil {
		return err
	}
	if t.unwind != nil {
		t.syms.OnMappings(t.unwind.setProcess)
	}
	// Read once, before the readers start: the spec grows under them
	// when the -c command loads a library (loadedObjects).
	t.namesUser = namesUserAddresses(t.spec)
	if t.namesUser {
		// Before the command runs (it is held at its gate): the kernel's
		// mapping records keep the maps of processes that exit before
		// /proc is read. Without them /proc is read as before.
		if err := t.syms.Track(t.pid); err != nil && t.opts.Verbose {
			fmt.Fprintf(t.opts.Err, "symbols: %v; memory maps are read from /proc only\n", err)
		}
	}
	mode := t.chooseUprobes()
	if t.coll, err = load(loadSpec(mode, t.spec), t.unwind.replacements()); err != nil {
		return kernelFuncLoadError(t.spec, err)
	}
	t.attached = t.newAttachedSet(mode)
	if err := t.loop.openRings(t.coll.Maps[t.spec.EventsMap], t.coll.Maps[t.spec.ControlMap]); err != nil {
		return err
	}
	return t.startCapture()
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

// startTrace runs BEGIN, attaches the kernel probes unless BEGIN called
// exit(), starts the readers, lets the -c command run, and starts the
// goroutines that run while the trace does: the family's follower, the
// symbols' refresh, the interval tickers, the metrics' source.
func (t *tracer) startTrace(sites []plan.Site, endsAfterBegin bool) error {
	if err := t.storeStart(); err != nil {
		return err
	}
	for _, prog := range t.attached.begin {
		if err := runProgram(prog); err != nil {
			return fmt.Errorf("run BEGIN: %w", err)
		}
	}
	if !t.exitedEarly() {
		if err := t.attached.attachKernelProbes(); err != nil {
			return err
		}
	}
	// BEGIN's output waits in the ring buffer until every probe is
	// attached, as bpftrace prints it: a tool's header says it is tracing.
	t.notifyAttached()
	t.loop.startReaders(!t.exitedEarly(), t.read)
	t.releaseChild(sites)
	// Current bpftrace ends a script of begin and end probes after begin;
	// with -c or -p it traces until the process ends.
	if endsAfterBegin && t.child == nil && t.process == nil {
		t.loop.requestExit()
	}
	t.keepSymbols()
	t.loop.startIntervals(t.attached.intervals, t.keepRunErr)
	if t.opts.Metrics != nil {
		t.opts.Metrics.SetSource(t.metricMaps)
	}
	return nil
}

// symbolsPoll is how often the mappings of the processes seen are read
// again, for the libraries they load and the threads they start after
// they were first seen: a -c command is first seen before it executes
// its program.
const symbolsPoll = 200 * time.Millisecond

// keepSymbols captures the traced process (-c or -p) now and then while
// the trace runs, so that its stacks are named after it exits. A script
// that names no user address (no ustack, usym or func) reads nothing: a
// capture reads the symbol tables of every file the process maps.
func (t *tracer) keepSymbols() {
	if !t.namesUser {
		return
	}
	if t.pid != 0 {
		t.syms.Capture(t.pid)
	}
	t.loop.every(symbolsPoll, t.syms.Refresh)
	if t.unwind != nil {
		// The eh_frame walk stops at the first frame of a process whose
		// mappings it does not have: the records are drained more often
		// than /proc is read, so that it has a new one's sooner.
		t.loop.every(unwindDrain, t.syms.Drain)
	}
}

// unwindDrain is how often the mapping records are applied when the
// eh_frame walk needs them: a drain without records costs a read of each
// ring's head.
const unwindDrain = 20 * time.Millisecond

// releaseChild lets the -c command leave its gate, and follows the
// processes it starts for the files of sites. A BEGIN that called exit()
// ends the trace before the command runs any of its code, as in
// bpftrace; close kills it.
func (t *tracer) releaseChild(sites []plan.Site) {
	if t.child == nil || t.exitedEarly() {
		return
	}
	if err := t.child.Release(); err != nil {
		// The command could not be executed: its child exits, which
		// ends the trace as the command's exit would (BEGIN's output
		// and the maps are printed), and the error is the run's.
		t.keepRunErr(err)
	} else if t.follow = newFollower(t, t.child.PID, sites); t.follow != nil {
		t.loop.every(proc.FamilyPoll, t.follow.poll)
	}
}

// tracer is the state of one Run: the printer (embedded: what prints, and
// the maps it reads), the traced processes, the attached set and the event
// loop. Its methods are the run's stages and what joins them: reading a
// record into the printer (read), the loads of a -c command (loader.go),
// its family (follow.go), the end (finish, close).
type tracer struct {
	printer
	// info is what the checker recorded about the program, for the
	// probes of objects loaded later.
	info *lang.Info
	// searched are the objects whose probes were looked for (loader.go).
	searched map[fileID]bool
	// pid is the traced process, the -c command's or -p's (0: none);
	// child is the -c command and process the -p process, each nil
	// without.
	pid     int
	child   *proc.Child
	process *proc.Process
	// follow watches the processes the child starts; familyRecs, for a
	// -c trace with probes in files, has the programs filter on the
	// child's family (follow.go), as the plan chose (plan.Plan.Family).
	follow     *follower
	familyRecs *codegen.FamilyRecords
	// noFamily is why the plan gave a -c trace with probes in files no
	// family filter (tracefs unreadable, a PID namespace); nil with one.
	noFamily error
	// attached is what the run attached, nil until it is loaded.
	attached *attachedSet
	// unwind loads the tables of stack_unwind=eh_frame; nil without.
	unwind *unwindTables
	// files are the ELF files the run reads, each opened once.
	files *usdt.Files
	// namesUser says whether the program names user addresses (ustack,
	// usym, func; namesUserAddresses), so that the traced process's
	// symbols are kept.
	namesUser bool
}

// storeStart records the start time for the elapsed builtin, on the clock
// of bpf_ktime_get_ns.
func (t *tracer) storeStart() error {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return fmt.Errorf("read the clock: %w", err)
	}
	t.bootWall = time.Now().Add(-time.Duration(ts.Nano()))
	t.recordUint64(capture.Clock, uint64(t.bootWall.UnixNano()))
	m := t.coll.Maps[t.spec.StartMap]
	if m == nil {
		return nil
	}
	if err := m.Put(uint32(0), uint64(ts.Nano())); err != nil {
		return fmt.Errorf("store start time: %w", err)
	}
	return nil
}

// readerNap is how soon the events reader looks at its ring again after
// reading records, whether or not a record woke it: the programs write
// the records of a burst without waking it (codegen.EventsWakeGap), so
// the last records of a burst wait for this nap rather than for the next
// lostPoll.
const readerNap = codegen.EventsWakeGap + time.Millisecond

// read handles the records of one ring buffer until the reader is closed:
// it is what each reader goroutine of t.loop runs (startReaders), where
// the loop's rings meet what the records print, under t.mu.
// After a Flush it signals flushed (when not nil). With a poll period, it
// also reports lost records and writes held output that often, busy or
// idle: the events reader does it itself rather than a goroutine of its
// own, which would hold t.mu on an unfavoured thread and stall the
// reader whenever the scheduler left that thread waiting. With a poll
// period it also naps: after the ring is empty it looks again readerNap
// later, and goes back to waiting up to the poll period only when a nap
// found nothing.
func (t *tracer) read(rd *ring, flushed chan<- struct{}, poll time.Duration) {
	var rec ringbuf.Record
	// next is when lost records are next reported; deadline is the
	// reader's deadline, no later than next.
	var next, deadline time.Time
	if poll > 0 {
		next = time.Now().Add(poll)
		deadline = next
		rd.SetDeadline(deadline)
	}
	for n := 0; ; n++ {
		err := rd.ReadInto(&rec)
		timedOut := errors.Is(err, os.ErrDeadlineExceeded)
		// The clock is read when the ring is empty or every
		// pollRecords records, not for each record of a burst.
		due := timedOut || err == nil && (rec.Remaining == 0 || n%pollRecords == 0)
		if poll > 0 && due {
			now := time.Now()
			if now.After(next) {
				t.mu.Lock()
				t.reportLost()
				// Also bounds how long a line can stay held should the
				// emptiness check below ever miss it.
				t.queueOut()
				t.mu.Unlock()
				next = now.Add(poll)
				deadline = next
			}
			switch {
			case err == nil && rec.Remaining == 0:
				// The ring is empty: nap.
				deadline = now.Add(readerNap)
				if deadline.After(next) {
					deadline = next
				}
			case timedOut && !now.Before(deadline):
				// A nap that found nothing (it would have ended in
				// an empty ring, above, and moved the deadline).
				deadline = next
			}
			rd.SetDeadline(deadline)
		}
		switch {
		case errors.Is(err, os.ErrDeadlineExceeded):
		case err == nil:
			t.mu.Lock()
			err = t.handle(rec.RawSample)
			t.keepErr(err)
			// Remaining is what the ring held when the record was
			// read: no second look at the producer's position, a
			// cache line the kernel keeps writing.
			if rec.Remaining == 0 {
				t.queueOut()
			}
			t.mu.Unlock()
			if err != nil {
				t.loop.requestExit()
			}
		case errors.Is(err, ringbuf.ErrFlushed):
			if flushed != nil {
				flushed <- struct{}{}
			}
		case errors.Is(err, os.ErrClosed):
			return
		default:
			t.keepRunErr(fmt.Errorf("read ring buffer: %w", err))
			t.loop.requestExit()
			return
		}
	}
}

// wait blocks until the trace should end: exit(), ctx done, or the traced
// command or process gone. It prints the maps at each signal from usr1.
func (t *tracer) wait(ctx context.Context, usr1 <-chan os.Signal) {
	var gone <-chan struct{}
	switch {
	case t.child != nil:
		gone = t.child.Exited()
	case t.process != nil:
		gone = t.process.Exited(t.loop.exit)
	}
	for {
		select {
		case <-t.loop.exit:
			return
		case <-ctx.Done():
			return
		case <-gone:
			return
		case <-usr1:
			// What the probes sent before the signal comes first,
			// however far behind the reader is.
			t.loop.drain()
			t.mu.Lock()
			t.flushOut()
			t.record(capture.PrintMaps, nil)
			t.keepErr(t.printAllMaps())
			t.flushOut()
			t.mu.Unlock()
		}
	}
}

// exitedEarly reports whether exit() has run already, by the flag it
// sets: its record is read by another goroutine.
func (t *tracer) exitedEarly() bool {
	m := t.coll.Maps[t.spec.ExitedMap]
	var flag uint64
	return m != nil && m.Lookup(uint32(0), &flag) == nil && flag != 0
}

// finish ends the trace: it stops the timers, detaches the probes, prints
// the records still in the buffer, runs END, prints the maps and returns
// the first runtime error.
func (t *tracer) finish() error {
	t.loop.stopTickers()
	t.loop.requestExit()
	if m := t.coll.Maps[t.spec.ExitedMap]; m != nil {
		// Like exit(): the probes still attached return at once.
		if err := m.Put(uint32(0), uint64(1)); err != nil {
			return fmt.Errorf("stop probes: %w", err)
		}
	}
	t.attached.detach()
	t.loop.drain()
	for _, prog := range t.attached.end {
		if err := runProgram(prog); err != nil {
			return fmt.Errorf("run END: %w", err)
		}
	}
	t.loop.drain()
	t.mu.Lock()
	defer t.mu.Unlock()
	t.flushOut()
	t.warnUnmatched()
	t.follow.warnWrapper()
	t.reportLost()
	if err := t.printExitMaps(); err != nil {
		return err
	}
	t.flushOut()
	t.reportFull()
	t.reportUnmapped()
	if t.opts.Verbose {
		t.unwind.report(t.opts.Err)
	}
	if n := t.syms.LostRecords(); n > 0 && !t.opts.NoWarnings {
		fmt.Fprintf(t.opts.Err, "WARNING: %d memory mapping records were lost (a ring was full): stacks of processes that exited may print as addresses\n", n)
	}
	if t.runErr == nil && t.exitStatus != 0 {
		return t.exitStatus
	}
	return t.runErr
}

// close releases everything, on every path out of Run: the child (killed
// when it is still held or running), the readers, the links, the programs
// and the maps. It ends the capture (-w), and returns the error of
// writing it.
func (t *tracer) close() error {
	if t.opts.Metrics != nil {
		t.opts.Metrics.SetSource(nil)
	}
	t.loop.stopTickers()
	t.attached.detach()
	t.loop.closeReaders(t.opts.LastTrace)
	if t.syms != nil {
		t.syms.Close()
	}
	t.files.Close()
	t.attached.close()
	if t.coll != nil {
		t.coll.Close()
	}
	t.unwind.close()
	if t.child != nil {
		t.child.Terminate(childGrace)
	}
	if t.process != nil {
		t.process.Close()
	}
	// What was printed before an error is still written.
	t.out.Flush()
	if t.queue != nil {
		t.queue.Close()
	}
	if t.capture != nil {
		return t.capture.Close()
	}
	return nil
}
