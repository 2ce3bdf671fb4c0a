package runtime

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/ringbuf"
	"golang.org/x/sys/unix"

	"github.com/gotrace/gotrace/codegen"
	"github.com/gotrace/gotrace/runtime/capture"
	"github.com/gotrace/gotrace/runtime/plan"
	"github.com/gotrace/gotrace/runtime/proc"
)

// pollRecords is how many records the events reader handles in a burst
// between two looks at the clock for lostPoll.
const pollRecords = 256

// symbolsPoll is how often the mappings of the processes seen are read
// again, for the libraries they load and the threads they start after
// they were first seen: a -c command is first seen before it executes
// its program.
const symbolsPoll = 200 * time.Millisecond

// unwindDrain is how often the mapping records are applied when the
// eh_frame walk needs them: a drain without records costs a read of each
// ring's head.
const unwindDrain = 20 * time.Millisecond

// readerNap is how soon the events reader looks at its ring again after
// reading records, whether or not a record woke it: the programs write
// the records of a burst without waking it (codegen.EventsWakeGap), so
// the last records of a burst wait for this nap rather than for the next
// lostPoll.
const readerNap = codegen.EventsWakeGap + time.Millisecond

// lostPoll is how often the runtime looks for records the programs could
// not reserve, to report them as "Lost N events" close to when they
// happened.
const lostPoll = 100 * time.Millisecond

// eventLoop is what runs while a trace does: the two ring buffers and the
// goroutines reading them, the channels by which a drain learns they have
// read through, the exit signal, and the tickers (intervals, symbols,
// the family's follower). It owns those goroutines and ends them (stop,
// closeReaders); what a record does is the tracer's (tracer.read), and the
// loop touches neither the output nor t.mu.
//
// The tracer's side of the loop is in this file too: startTrace, the
// stage that runs BEGIN and starts the loop, and read, each reader's body;
// and runProgram, which runs BEGIN, END and the intervals in the kernel.
type eventLoop struct {
	events, control *ring
	// readers counts the reader goroutines; flushed receives one value
	// from the events reader each time a Flush has been read through.
	readers sync.WaitGroup
	flushed chan struct{}
	// eventsDone is closed when the events reader goroutine has returned.
	eventsDone chan struct{}
	// controlFlushed and controlDone are the same for the control ring's
	// reader.
	controlFlushed, controlDone chan struct{}
	// exit is closed by the first exit() record.
	exit     chan struct{}
	exitOnce sync.Once
	// stop ends interval tickers.
	stop     chan struct{}
	tickers  sync.WaitGroup
	stopOnce sync.Once
	// favoured is the weight the readers run with (see proc.Favour); the
	// commands system() runs get the process's own.
	favoured *proc.Favoured
}

// newEventLoop returns a loop whose trace has not exited yet.
func newEventLoop() *eventLoop {
	return &eventLoop{exit: make(chan struct{})}
}

// openRings opens the readers of the events and control ring buffers;
// events is nil when no program writes a printf-like record
// (codegen.Spec.EventsMap).
func (l *eventLoop) openRings(events, control *ebpf.Map) error {
	var err error
	if events != nil {
		if l.events, err = openRing(events); err != nil {
			return fmt.Errorf("open events ring buffer: %w", err)
		}
	}
	if l.control, err = openRing(control); err != nil {
		return fmt.Errorf("open control ring buffer: %w", err)
	}
	return nil
}

// startReaders starts one goroutine per ring buffer, each running read;
// the events reader also reports lost records (lostPoll), or the control
// reader where there is no events ring. They wait in
// Go's poller (see ring), so they hold no P while the rings are empty:
// the goroutines they wake (Run's, at exit()), timers and signals run at
// once. With favour, the readers' weight is raised (proc.Favour): only for
// a trace that goes on, since after a BEGIN that called exit() it would be
// a pass over every thread for nothing.
func (l *eventLoop) startReaders(favour bool, read func(rd *ring, flushed chan<- struct{}, poll time.Duration)) {
	l.stop = make(chan struct{})
	if favour {
		l.favoured = proc.Favour()
	}
	controlPoll := lostPoll
	if l.events != nil {
		controlPoll = 0
		l.flushed, l.eventsDone = l.startReader(l.events, lostPoll, read)
	}
	l.controlFlushed, l.controlDone = l.startReader(l.control, controlPoll, read)
}

// startReader starts the goroutine that runs read on rd with the poll
// period poll, and returns the channels it signals when a Flush has been
// read through and when it has returned.
func (l *eventLoop) startReader(rd *ring, poll time.Duration, read func(rd *ring, flushed chan<- struct{}, poll time.Duration)) (flushed, done chan struct{}) {
	flushed, done = make(chan struct{}), make(chan struct{})
	l.readers.Add(1)
	go func() {
		defer close(done)
		defer l.readers.Done()
		read(rd, flushed, poll)
	}()
	return flushed, done
}

// every calls f every period, on a goroutine of its own, until the trace
// stops or f returns false.
func (l *eventLoop) every(period time.Duration, f func() bool) {
	l.tickers.Add(1)
	go func() {
		defer l.tickers.Done()
		tick := time.NewTicker(period)
		defer tick.Stop()
		for {
			select {
			case <-l.stop:
				return
			case <-tick.C:
				if !f() {
					return
				}
			}
		}
	}()
}

// requestExit ends the trace as exit() does.
func (l *eventLoop) requestExit() {
	l.exitOnce.Do(func() {
		close(l.exit)
	})
}

// startIntervals runs the interval programs, one ticker per period. The
// programs of one period run in script order at each tick, so that one
// that calls exit() stops those after it (they check the exited flag),
// as in bpftrace; on tickers of their own they raced. A program that
// cannot run is given to fail and ends the trace.
func (l *eventLoop) startIntervals(intervals []interval, fail func(error)) {
	var periods []time.Duration
	byPeriod := map[time.Duration][]*ebpf.Program{}
	for _, iv := range intervals {
		if _, ok := byPeriod[iv.period]; !ok {
			periods = append(periods, iv.period)
		}
		byPeriod[iv.period] = append(byPeriod[iv.period], iv.prog)
	}
	for _, period := range periods {
		l.every(period, func() bool {
			return l.runIntervals(byPeriod[period], fail)
		})
	}
}

// runIntervals runs progs once, in order. On an error it gives it to
// fail, ends the trace and returns false.
func (l *eventLoop) runIntervals(progs []*ebpf.Program, fail func(error)) bool {
	for _, prog := range progs {
		if err := runProgram(prog); err != nil {
			fail(fmt.Errorf("run interval program: %w", err))
			l.requestExit()
			return false
		}
	}
	return true
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

// drain returns once the readers have handled every record the rings
// held when it was called.
//
// Both rings are drained: exit()'s record, which carries the exit status,
// goes to the control ring, while the exited flag it sets lets Run end the
// trace without waiting for that record, so a drain of the events ring
// alone could end the run before the control reader had read it, and the
// status was lost (exit 0 after assert's error, about 1 run in 40 with
// four tracers started at once on 2 cores).
func (l *eventLoop) drain() {
	drainRing(l.events, l.flushed, l.eventsDone)
	drainRing(l.control, l.controlFlushed, l.controlDone)
}

// drainRing returns once the reader of rd has handled every record the
// ring held when it was called (flushed), or has stopped (done).
func drainRing(rd *ring, flushed, done <-chan struct{}) {
	if rd == nil || rd.Flush() != nil {
		return
	}
	select {
	case <-flushed:
	case <-done:
	}
}

// stopTickers ends the tickers and waits until none runs.
func (l *eventLoop) stopTickers() {
	l.stopOnce.Do(func() {
		if l.stop != nil {
			close(l.stop)
		}
	})
	l.tickers.Wait()
}

// closeReaders closes the rings and waits for their readers to return;
// unless keepWeight (the process's last trace), the readers' weight goes
// back to the process's own.
func (l *eventLoop) closeReaders(keepWeight bool) {
	if l.events != nil {
		l.events.Close()
	}
	if l.control != nil {
		l.control.Close()
	}
	l.readers.Wait()
	if l.favoured != nil && !keepWeight {
		l.favoured.Undo()
	}
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
		if err := t.attached.attachKernelProbes(sites); err != nil {
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

// exitedEarly reports whether exit() has run already, by the flag it
// sets: its record is read by another goroutine.
func (t *tracer) exitedEarly() bool {
	m := t.coll.Maps[t.spec.ExitedMap]
	var flag uint64
	return m != nil && m.Lookup(uint32(0), &flag) == nil && flag != 0
}
