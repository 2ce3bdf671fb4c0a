// Package runtime runs a bpftrace program that lang has resolved (with
// NewHost's Host) and checked: it finds what the attach points match (USDT
// probes of files, of a -p process or of a -c command, the functions a
// uprobe pattern names), has
// the code generator compile the program, loads it, attaches the uprobes,
// runs BEGIN, reads the ring buffers and prints what the program asks for,
// and at the end runs END, prints the maps and detaches everything.
//
// For -c the runtime has runtime/proc start the command held at a gate
// program that execs it once the probes are attached, so the PID filter
// and the semaphores are in place before the command's first instruction;
// proc owns the processes, the runtime what is traced in them.
//
// The runtime decodes records and maps into runtime/output's values and
// leaves their text to output (printf, maps, times, errnos, signals): it
// formats nothing itself that does not need the running trace.
//
// Run is the run's orchestration, a list of stages each taking what the
// one before made: newTracer (the output set up), startProcesses (the -c
// command held at its gate, or the -p process), plan.Make (the spec and
// its sites), loadPlan (the collection, the unwind tables, the
// symbolizer, the rings), attachSites, startTrace (BEGIN, the kernel
// probes, the readers, the command released), wait and finish (END, the
// maps); tracer.close, deferred, releases every kernel object whatever
// the path out. What the run attached is an attachedSet (attached.go);
// the rings, their readers, the exit signal and the tickers are the
// eventLoop (loop.go); the printer (printer.go, print.go,
// events.go, replay.go) keeps the output, the mutex that serialises it
// with the map reads it asks for, and the run's error and exit status,
// and is all a Replay uses; the tracer (run.go) holds the three with the
// processes and joins them.
package runtime

import (
	"io"
	"os"

	"github.com/gotrace/gotrace/codegen"
	"github.com/gotrace/gotrace/internal/settings"
	"github.com/gotrace/gotrace/lang"
	"github.com/gotrace/gotrace/runtime/metrics"
	"github.com/gotrace/gotrace/runtime/output"
	"github.com/gotrace/gotrace/runtime/plan"
	"github.com/gotrace/gotrace/usdt"
)

// Options configure a run; the command line fills them in.
type Options struct {
	// Compiled, when set, is called once the script is compiled, before
	// anything is loaded: the caller's front end (parsing, checking,
	// compiling) is over.
	Compiled func()
	// Out receives the trace: printf output, "Attaching N probes..." and
	// the maps (standard output or the -o file).
	Out io.Writer
	// Err receives warnings and runtime errors.
	Err io.Writer
	// Stdout is gotrace's standard output when Out is a file (-o). The
	// two newlines that precede the maps at exit go there, as in bpftrace
	// 0.17, so that the file holds the trace alone (in JSON, objects and
	// nothing else); nil: they go to Out.
	Stdout io.Writer
	// Capture, when set, receives the trace as a capture file (-w,
	// docs/capture.md) for Replay to print, and nothing of it is printed
	// to Out.
	Capture io.Writer
	// LineBuffered writes each line as soon as it is formatted (-B line or
	// -B none). Otherwise the output is held while records keep coming
	// and written when a ring buffer is empty, in whole lines.
	LineBuffered bool
	// Format is "text", "json" or "folded" (output.ParseFormat).
	Format string
	// Quiet suppresses "Attaching N probes..." (-q).
	Quiet bool
	// PID traces only this process and enables its USDT probes (-p).
	PID int
	// Command is run and traced; the trace ends when it exits (-c). It is
	// split into words like a shell does (quotes, backslashes; no
	// expansions).
	Command string
	// User is the user Command runs as, a name or a uid (--user). Left
	// empty, the command runs as the user who ran sudo when gotrace runs
	// as root under sudo (SUDO_UID), else as gotrace.
	User string
	// AsRoot runs Command as gotrace itself, root under sudo (--as-root).
	AsRoot bool
	// Params are the positional parameters $1, $2, ...
	Params []string
	// Unsafe allows system() (--unsafe), and uprobes at addresses whose
	// instruction boundary gotrace cannot check (a stripped file).
	Unsafe bool
	// Values are the trace's settings (internal/settings), the same the
	// front end checked the script with: StrLen, MapKeysMax, TimeMap,
	// MissingProbes (what an attach point that names one usdt probe or
	// function the file does not have does to the run; by default an
	// error), PerfRBPages (the printf ring buffer's size).
	settings.Values
	// Verbose prints what the runtime resolves and attaches to Err.
	Verbose bool
	// NoWarnings drops warnings such as a full map's (--no-warnings).
	NoWarnings bool
	// NoUprobeMulti attaches a perf-event uprobe at each location even
	// where the kernel has uprobe_multi links (--no-uprobe-multi).
	NoUprobeMulti bool
	// Attached, when set, is called once every probe is attached, BEGIN
	// has run and records are being read: whatever the probes see from
	// then on is traced. Tests and callers that start a workload wait for
	// it rather than for "Attaching N probes...", which is printed before
	// attaching. It runs on Run's goroutine and must not block.
	Attached func()
	// TakeMap, when set, is offered each map before it is printed
	// (print(), SIGUSR1, exit); a map it takes (returns true for) is not
	// printed to Out. gotrace flamegraph and gotrace chart collect their
	// maps so. It must copy what it keeps: a map's entries may be
	// decoded as they are read.
	TakeMap func(m *output.Map) bool
	// Diagnostic, when set, is given the message of every errorf() and
	// warnf() the trace prints on Err, and whether it is a warning, so
	// that a caller can send them elsewhere too (--nats).
	Diagnostic func(warn bool, msg string)
	// Metrics, when set, is given the maps to read at each scrape once
	// they are loaded, until the trace ends (--metrics).
	Metrics *metrics.Collector
	// LastTrace says that the process ends soon after Run returns, as
	// gotrace does: the readers' raised weight (proc.Favour) is then not
	// given back, which would cost every end two passes over
	// /proc/self/task and a setpriority for each thread, nor SIGUSR1,
	// which would cost a round trip to the runtime's signal thread
	// (issue 24). A process that traces again or goes on with other
	// work leaves it false.
	LastTrace bool
}

// Compile finds what the attach points of p match and compiles it with
// info, the checker's record of it (lang.Analyze). It never loads
// anything into the kernel; with Command set it does not start the command
// either, it only reads its executable and libraries.
func Compile(p *lang.Program, info *lang.Info, opts Options) (*codegen.Spec, error) {
	var files usdt.Files
	defer files.Close()
	objs, err := traceObjects(opts, &files)
	if err != nil {
		return nil, err
	}
	return plan.Compile(info.ResolvedProgram(p), info, planInput(opts, objs, 0, &files))
}

// DryRun computes the probe plan of p for a run with opts, as Run would
// before loading anything, and with opts.Verbose prints it to opts.Out:
// every site, where it attaches and why (--dry-run -v). It never loads or
// attaches anything, nor starts the -c command.
func DryRun(p *lang.Program, info *lang.Info, opts Options) error {
	var files usdt.Files
	defer files.Close()
	objs, err := traceObjects(opts, &files)
	if err != nil {
		return err
	}
	pl, err := plan.Make(info.ResolvedProgram(p), info, planInput(opts, objs, 0, &files))
	if err != nil {
		return err
	}
	if opts.Verbose && opts.Out != nil {
		pl.Write(opts.Out)
	}
	return nil
}

// traceObjects returns the objects an attach point without a path looks
// in when they are known before the plan: those of the -c command, read
// through files. The plan reads those of a -p process itself, when an
// attach point needs them.
func traceObjects(opts Options, files *usdt.Files) ([]string, error) {
	if opts.Command != "" {
		return plan.CommandObjects(opts.Command, files)
	}
	return nil, nil
}

// planInput is the probe plan's input for a run with opts: objs are the
// objects an attach point without a path looks in (nil for the plan to
// read those of a -p process), childPID the -c
// command's PID (0 before it is started), files the ELF files the run
// reads, kept open for attaching.
func planInput(opts Options, objs []string, childPID int, files *usdt.Files) plan.Input {
	in := plan.Input{
		Files:         files,
		Objects:       objs,
		PID:           opts.PID,
		Command:       opts.Command,
		ChildPID:      childPID,
		Unsafe:        opts.Unsafe,
		MissingProbes: opts.MissingProbes,
		Codegen:       codegenOptions(opts),
	}
	if !opts.NoWarnings {
		in.Warnings = opts.Err
	}
	if opts.Verbose {
		in.Verbose = opts.Err
	}
	return in
}

// codegenOptions are the code generator's options for a run with opts;
// the plan adds what it resolved.
func codegenOptions(opts Options) codegen.Options {
	return codegen.Options{
		Values:     opts.Values,
		EventsSize: ringSize(opts.PerfRBPages),
		CPUs:       ebpfPossibleCPUs(),
	}
}

// ringSize is the byte size of a ring buffer of pages pages, rounded up to
// a power of two; 0 for the code generator's default.
func ringSize(pages int) int {
	if pages <= 0 {
		return 0
	}
	size := os.Getpagesize()
	for size < pages*os.Getpagesize() {
		size *= 2
	}
	return size
}
