package runtime

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/cilium/ebpf"

	"github.com/gotrace/gotrace/codegen"
	"github.com/gotrace/gotrace/lang"
	"github.com/gotrace/gotrace/runtime/capture"
	"github.com/gotrace/gotrace/runtime/output"
	"github.com/gotrace/gotrace/runtime/symbols"
)

// printer turns the records and maps of a trace into output: it decodes
// them (print.go), acts on each record (events.go), writes the output
// through its writer and queue, records under -w what printing read from
// the system and gives it back in a Replay (replay.go), and keeps the
// run's first error and exit status. Its mutex mu serialises everything
// written to Out and Err with the map reads print() and clear() ask for.
// It reads the maps of coll and asks loop to end the trace, and touches
// nothing else of the kernel: it attaches, loads and reads no ring. A
// Replay uses it alone, with no collection.
type printer struct {
	opts Options
	// prog is the checked program and spec what it was compiled to.
	prog *lang.Program
	spec *codegen.Spec
	// coll holds the maps printing reads; nil in a Replay.
	coll *ebpf.Collection
	// syms names code addresses for func and usym(); nil in a Replay.
	syms *symbols.Symbolizer
	// loop is asked to end the trace (exit(), an output that cannot be
	// written); system() runs its command with the process's own weight
	// rather than loop's readers'.
	loop *eventLoop
	// loaded handles a record of the loader program (tracer.loadedObjects);
	// nil in a Replay, which attaches nothing.
	loaded func() error

	// out formats everything the trace prints to Out. It holds its output
	// (outHold), and the readers flush it when their ring buffer is empty:
	// a burst of records costs one write per 64 KiB, not one per line, and
	// a quiet trace still prints each line at once.
	out *output.Writer
	// queue, when not nil, is what out writes to: it writes held output
	// on a goroutine of its own (see outQueue).
	queue *outQueue
	// capture receives the records under -w; replay gives them back in
	// a Replay, where replayErr is the first record it could not read.
	capture   *capture.Writer
	replay    *capture.Reader
	replayErr error
	// args holds the decoded fields of the record being printed (see
	// recordArgs).
	args []output.Value
	// users caches the names username prints, by uid; cgroups the paths
	// cgroup_path() prints.
	users   map[uint64]string
	cgroups cgroupPaths
	// bootWall is the wall-clock time of CLOCK_MONOTONIC's zero, to print
	// bpf_ktime_get_ns times.
	bootWall time.Time

	// mu serialises everything written to Out and Err, and the map reads
	// that print() and clear() ask for.
	mu   sync.Mutex
	lost uint64
	// runErr is the first runtime error a reader met.
	runErr error
	// exitStatus is the code of the first exit(code) record.
	exitStatus ExitStatus
}

// printExitMaps prints the maps at the end of the trace, after bpftrace's
// two newlines; with -o those go to standard output, as in bpftrace 0.17.
// The caller holds pr.mu.
func (pr *printer) printExitMaps() error {
	// bpftrace 0.20's config key print_maps_on_exit = 0 prints nothing.
	if v, ok := pr.prog.Setting("print_maps_on_exit"); ok && (v == "0" || v == "false") {
		return nil
	}
	pr.record(capture.ExitMaps, nil)
	if pr.opts.Stdout == nil {
		maps, err := pr.outputMaps()
		if err != nil {
			return err
		}
		return pr.out.Exit(maps)
	}
	if _, err := io.WriteString(pr.opts.Stdout, "\n\n"); err != nil {
		return fmt.Errorf("write output: %w", err)
	}
	return pr.printAllMaps()
}

// flushOut writes the output pr.out holds and waits until it is written,
// so that what comes next on standard output or error (a system()
// command's, a message, the maps after "\n\n") follows it. Output that
// cannot be written (a closed pipe: EPIPE) ends the trace. The caller
// holds pr.mu, or is the only goroutine left.
func (pr *printer) flushOut() {
	pr.writeOut(true)
}

// queueOut is flushOut for the events reader: the output goes to the
// writer goroutine (pr.queue), and the reader goes on with the next record
// while it is written.
func (pr *printer) queueOut() {
	pr.writeOut(false)
}

// writeOut writes the output pr.out holds; with wait, it returns once the
// writer goroutine has written it.
func (pr *printer) writeOut(wait bool) {
	err := pr.passOut(wait)
	if pr.capture != nil && err == nil {
		err = pr.capture.Flush()
	}
	if err != nil {
		pr.keepErr(err)
		pr.loop.requestExit()
	}
}

// passOut passes the output pr.out holds to the writer goroutine, if any;
// with wait, it returns once everything passed is written. It returns the
// error of a failed write.
func (pr *printer) passOut(wait bool) error {
	err := pr.out.Flush()
	if pr.queue == nil || err != nil {
		return err
	}
	if wait {
		err = pr.queue.Sync()
	} else {
		err = pr.queue.Err()
	}
	if err != nil {
		return fmt.Errorf("write output: %w", err)
	}
	return nil
}

// keepRunErr records err as keepErr does, taking pr.mu: for the
// goroutines that do not hold it (interval tickers, a reader that fails,
// Run releasing the command).
func (pr *printer) keepRunErr(err error) {
	pr.mu.Lock()
	pr.keepErr(err)
	pr.mu.Unlock()
}

// keepErr records err (when not nil) as the run's error, unless an earlier
// one is kept. The caller holds pr.mu, or is the only goroutine left.
func (pr *printer) keepErr(err error) {
	if err != nil && pr.runErr == nil {
		pr.runErr = err
	}
}

// outHold is how much output the tracer holds before it writes it.
const outHold = 64 << 10

// newOutput returns the writer that formats a run's or a replay's output
// in format to w, as opts ask: held (outHold) unless each line is written
// at once (-B line, -B none), and the maps offered to opts.TakeMap first,
// unless the trace is captured (-w), where nothing is printed; newer says
// the script asks for current bpftrace's formats (lang.Program.Newer).
func newOutput(w io.Writer, format output.Format, opts Options, newer bool) *output.Writer {
	out := output.NewWriter(w, format)
	out.SetNewer(newer)
	if !opts.LineBuffered {
		out.Hold(outHold)
	}
	if opts.TakeMap != nil && opts.Capture == nil {
		out.Divert(opts.TakeMap)
	}
	return out
}
