package proc

import (
	"os"
	"os/exec"
	goruntime "runtime"
	"strconv"

	"golang.org/x/sys/unix"
)

// readerNice is the nice value of the tracer's threads while its readers
// run. The probes write records at their own rate, whatever else runs:
// a reader that gets only its fair share of a busy machine's CPUs falls
// behind a burst and the ring fills, while with a higher weight it takes
// the fraction of a CPU that it needs (about 0.5 µs a 155-byte line) as
// soon as records wait.
//
// Every thread gets it, not only the one running the events reader: the
// Go scheduler preempts a goroutine that has run for 10 ms, and one
// locked to a favoured thread then waits for an unfavoured thread to
// hand that thread a P back. On a busy machine that wait took up to
// 70 ms, in the middle of a burst, and the ring overflowed.
const readerNice = -10

// Favour raises the scheduling weight of every thread of the process to
// readerNice; threads started later inherit it from the thread that starts
// them. It does so on a goroutine of its own, so that the readers start at
// once (a -c command's first output waits for them). Without the right to
// (no CAP_SYS_NICE) the threads keep their weight.
func Favour() *Favoured {
	f := &Favoured{done: make(chan struct{})}
	// getpriority returns 20 - nice.
	if prio, err := unix.Getpriority(unix.PRIO_PROCESS, 0); err == nil {
		f.nice = 20 - prio
	}
	go func() {
		defer close(f.done)
		setThreadsNice(readerNice)
	}()
	return f
}

// Favoured is the process's weight raised by Favour.
type Favoured struct {
	// nice is the nice value the process had.
	nice int
	// done is closed when every thread has the raised weight.
	done chan struct{}
}

// Undo gives every thread of the process its nice value from before
// Favour, so that a process that runs the tracer again and again (the
// tests) keeps its weight.
func (f *Favoured) Undo() {
	<-f.done
	setThreadsNice(f.nice)
}

// setThreadsNice sets the nice value of every thread of the process. It
// goes over the threads until a pass finds no new one, for threads started
// meanwhile by a thread it had not reached yet.
func setThreadsNice(nice int) {
	done := map[int]bool{}
	for pass := 0; pass < 3; pass++ {
		tasks, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return
		}
		added := false
		for _, task := range tasks {
			tid, err := strconv.Atoi(task.Name())
			if err != nil || done[tid] {
				continue
			}
			done[tid] = true
			added = true
			unix.Setpriority(unix.PRIO_PROCESS, tid, nice)
		}
		if !added {
			return
		}
	}
}

// StartUnfavoured starts c with the nice value the process had before f
// raised it (a new process takes its thread's), from a thread of its own
// that ends with the call. With no raised weight (nil f) it is c.Start.
func StartUnfavoured(c *exec.Cmd, f *Favoured) error {
	if f == nil {
		return c.Start()
	}
	<-f.done // or the sweep could favour the new thread after all
	started := make(chan error)
	go func() {
		// Never unlocked: the thread exits when the goroutine returns.
		goruntime.LockOSThread()
		unix.Setpriority(unix.PRIO_PROCESS, unix.Gettid(), f.nice)
		started <- c.Start()
	}()
	return <-started
}
