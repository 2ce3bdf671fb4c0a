package runtime

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/gotrace/gotrace/codegen"
	"github.com/gotrace/gotrace/internal/memlock"
	"github.com/gotrace/gotrace/lang"
	"github.com/gotrace/gotrace/runtime/capture"
	"github.com/gotrace/gotrace/runtime/output"
	"github.com/gotrace/gotrace/runtime/plan"
	"github.com/gotrace/gotrace/runtime/proc"
	"github.com/gotrace/gotrace/usdt"
)

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
// made (plan.Make), and the plan run (runPlan: loaded, its sites attached,
// BEGIN and the readers started, the wait, and the end).
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
	return t.runPlan(ctx, pl, objs, endsAfterBegin, usr1)
}

// runPlan runs the trace the plan pl describes, the compiled program and
// every site it attaches to, on the processes started or opened for it
// (objs are the -c command's objects pl's probes were looked for in), a
// stage a file: it loads pl (loadPlan, load.go), attaches its passes
// around BEGIN (attachSites, attached.go), starts the readers, the
// command and the tickers (startTrace, loop.go), waits for the end (wait)
// and finishes (finish). Nothing here resolves an attach point or decides
// when a site is attached again: the plan has (plan.Passes).
func (t *tracer) runPlan(ctx context.Context, pl *plan.Plan, objs []string, endsAfterBegin bool, usr1 <-chan os.Signal) error {
	target, err := t.loadPlan(pl, objs)
	if err != nil {
		return err
	}
	exited, err := t.attachSites(pl, target)
	if err != nil {
		return err
	}
	t.startTrace(plan.UserFiles(pl.Passes.Before), exited, endsAfterBegin)
	if t.opts.Attached != nil {
		t.opts.Attached()
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
		},
		info:  info,
		pid:   opts.PID,
		files: &usdt.Files{},
	}
	t.loaded = t.loadedObjects
	w := opts.Out
	switch {
	case opts.Capture != nil:
		w = io.Discard
	case !opts.LineBuffered:
		// -B line and -B none keep writing each line themselves.
		t.queue = newOutQueue(opts.Out, t.loop.requestExit)
		w = t.queue
	}
	t.out = newOutput(w, format, opts, p.Newer)
	return t
}

// tracer is the state of one Run: the printer (embedded: what prints, and
// the maps it reads), the traced processes, the attached set and the event
// loop. Its methods are the run's stages and what joins them: reading a
// record into the printer (read), the loads of a -c command (loader.go),
// its family (family.go, follow.go), the end (finish, close).
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
	// child's family (family.go), as the plan chose (plan.Plan.Family).
	follow     *follower
	familyRecs *codegen.FamilyRecords
	// noFamily is why the plan gave a -c trace with probes in files no
	// family filter (tracefs unreadable, a PID namespace); nil with one.
	noFamily error
	// attached is what the run attached, nil until it attaches;
	// later are the collections loaded after the plan's (load.go).
	attached *attachedSet
	later    laterCollections
	// unwind loads the tables of stack_unwind=eh_frame; nil without.
	unwind *unwindTables
	// files are the ELF files the run reads, each opened once.
	files *usdt.Files
	// namesUser says whether the program names user addresses (ustack,
	// usym, func; namesUserAddresses), so that the traced process's
	// symbols are kept.
	namesUser bool
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
	t.later.close()
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
