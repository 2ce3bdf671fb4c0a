package runtime

import (
	"fmt"
	"sync"
	"time"

	"github.com/cilium/ebpf"

	"github.com/gotrace/gotrace/runtime/proc"
)

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

// openRings opens the readers of the events and control ring buffers.
func (l *eventLoop) openRings(events, control *ebpf.Map) error {
	var err error
	if l.events, err = openRing(events); err != nil {
		return fmt.Errorf("open events ring buffer: %w", err)
	}
	if l.control, err = openRing(control); err != nil {
		return fmt.Errorf("open control ring buffer: %w", err)
	}
	return nil
}

// startReaders starts one goroutine per ring buffer, each running read;
// the events reader also reports lost records (lostPoll). They wait in
// Go's poller (see ring), so they hold no P while the rings are empty:
// the goroutines they wake (Run's, at exit()), timers and signals run at
// once. With favour, the readers' weight is raised (proc.Favour): only for
// a trace that goes on, since after a BEGIN that called exit() it would be
// a pass over every thread for nothing.
func (l *eventLoop) startReaders(favour bool, read func(rd *ring, flushed chan<- struct{}, poll time.Duration)) {
	l.flushed = make(chan struct{})
	l.eventsDone = make(chan struct{})
	l.stop = make(chan struct{})
	l.readers.Add(2)
	if favour {
		l.favoured = proc.Favour()
	}
	l.controlFlushed = make(chan struct{})
	l.controlDone = make(chan struct{})
	go func() {
		defer close(l.eventsDone)
		defer l.readers.Done()
		read(l.events, l.flushed, lostPoll)
	}()
	go func() {
		defer close(l.controlDone)
		defer l.readers.Done()
		read(l.control, l.controlFlushed, 0)
	}()
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
