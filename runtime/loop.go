package runtime

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/ringbuf"

	"github.com/gotrace/gotrace/codegen"
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

// startTrace starts what runs while the trace does, once every probe is
// attached: the readers, the -c command (let out of its gate, its family
// followed for the probes' files, files), the tickers (the family's
// follower, the symbols' refresh, the interval programs), the metrics'
// source. After an exit() (exited: BEGIN's or an early probe's), the
// command never leaves its gate, as in bpftrace, and the readers only
// drain what was sent.
func (t *tracer) startTrace(files []string, exited, endsAfterBegin bool) {
	t.loop.startReaders(!exited, t.read)
	if !exited {
		t.releaseChild(files)
	}
	// Current bpftrace ends a script of begin and end probes after begin;
	// with -c or -p it traces until the process ends.
	if endsAfterBegin && t.child == nil && t.process == nil {
		t.loop.requestExit()
	}
	if t.namesUser && t.pid != 0 {
		// The traced process (-c or -p) is captured now and then, so
		// that its stacks are named after it exits. A script that names
		// no user address (no ustack, usym or func) reads nothing: a
		// capture reads the symbol tables of every file the process
		// maps.
		t.syms.Capture(t.pid)
	}
	if t.follow != nil {
		t.loop.every(proc.FamilyPoll, t.follow.poll)
	}
	if t.namesUser {
		t.loop.every(symbolsPoll, t.syms.Refresh)
		if t.unwind != nil {
			// The eh_frame walk stops at the first frame of a process
			// whose mappings it does not have: the records are drained
			// more often than /proc is read, so that it has a new
			// one's sooner.
			t.loop.every(unwindDrain, t.syms.Drain)
		}
	}
	t.loop.startIntervals(t.attached.intervals, t.keepRunErr)
	if t.opts.Metrics != nil {
		t.opts.Metrics.SetSource(t.metricMaps)
	}
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
