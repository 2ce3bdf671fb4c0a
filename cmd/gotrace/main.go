// Command gotrace is a bpftrace-compatible tracer for USDT probes: it runs
// bpftrace scripts from a single static binary, with no LLVM.
//
//	gotrace script.bt [ARG...]
//	gotrace -e 'usdt:./bitcoind:net:inbound_message { @[str(arg3)] = count(); }'
//	gotrace -l 'usdt:/usr/bin/python3.11:*'
//	gotrace -c './bitcoind -datadir=/tmp/regtest' script.bt
package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/gotrace/gotrace/internal/settings"
	"github.com/gotrace/gotrace/lang"
	"github.com/gotrace/gotrace/runtime"
	"github.com/gotrace/gotrace/runtime/debuginfo"
	"github.com/gotrace/gotrace/runtime/output"
	"github.com/gotrace/gotrace/runtime/stream"
	"github.com/gotrace/gotrace/usdt"
)

// version is gotrace's version, printed by -V.
const version = "v0.1.0"

// processEnds is set by main, whose process exits once run returns: a
// trace then leaves the readers' raised weight as it is (runtime's
// Options.LastTrace) and the signals caught (signalContext). Tests that
// call run keep theirs given back.
var processEnds bool

func main() {
	// Every ELF file is opened with the rights of the user who started
	// gotrace (when it is elevated), and used by its descriptor after.
	usdt.SetOpenRights(asUser)
	processEnds = true
	growStack()
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// mainStack is the stack a trace's main goroutine grows to: 16 KiB for
// BEGIN { exit(); } and -l, cobra's calls under Run's.
const mainStack = 16 << 10

// growStack grows the main goroutine's stack to mainStack at once, while
// it is two frames deep. Go starts a goroutine with a 2 KiB stack and
// doubles it when a call needs more, copying it each time; every copy
// walks every frame and reads each function's tables in the binary's
// pclntab, so a copy deep in a trace's set-up touches pages of it that
// nothing else reads, at a page fault each (up to 35 µs on a
// paravirtualised VM). One copy here instead of two deep ones saved
// 0.5 ms of BEGIN { exit(); }'s 19 (issue 24).
//
//go:noinline
func growStack() byte {
	// Half of mainStack: the copy doubles the stack until the frame
	// fits.
	var frame [mainStack / 2]byte
	return lastByte(frame[:])
}

// lastByte reads frame for growStack, so that the compiler keeps it.
//
//go:noinline
func lastByte(frame []byte) byte { return frame[len(frame)-1] }

// flags holds the command line. The letters are bpftrace's.
type flags struct {
	program    string
	list       bool
	verbose    bool
	pid        string
	command    string
	user       string
	asRoot     bool
	outFile    string
	writeFile  string
	format     string
	quiet      bool
	debug      debugFlag
	dryRun     bool
	version    bool
	unsafe     bool
	noWarnings bool
	missing    string
	noMulti    bool
	metrics    metricFlags
	nats       stream.Config
	buffering  string
	helpers    int
	includeDir []string
	include    []string
	info       bool
	usdtFile   bool
	cpuProfile string
	// takeMap is runtime.Options.TakeMap: the drawing subcommands
	// (flamegraph, chart) collect maps through it; no flag sets it.
	takeMap func(m *output.Map) bool
}

// stringList is a flag that may be given more than once, each value kept
// whole: pflag's StringArray, whose type name it gives, so that help and
// completion treat it alike. pflag's own type writes its default's text
// ("[]") through encoding/csv when the flag is defined, a 4 KB buffer a
// flag, four flags at every start (issue 24); this one's empty default is
// "", which help leaves out as it left out pflag's "[]" (the manual's
// generator puts "[]" back).
type stringList []string

// stringListType is pflag's name of a StringArray flag's type.
const stringListType = "stringArray"

// Type names the flag's type for help and completion.
func (l *stringList) Type() string { return stringListType }

// Set adds a value: each use of the flag adds one.
func (l *stringList) Set(value string) error {
	*l = append(*l, value)
	return nil
}

// String is the flag's values as pflag writes a StringArray's, but ""
// when there is none.
func (l *stringList) String() string {
	if len(*l) == 0 {
		return ""
	}
	return "[" + strings.Join(*l, ",") + "]"
}

// debugBare is the value of a -d without a stage (-d, -dd); pflag shows
// no default for a "count" flag with this one.
const debugBare = "+1"

// debugFlag is -d: bpftrace's -d and -dd take no argument and print every
// stage gotrace has (each -d counts, for -dd); -d=STAGE prints one.
type debugFlag struct {
	level int
	stage string
}

func (d *debugFlag) String() string { return d.stage }
func (d *debugFlag) Type() string   { return "count" }

func (d *debugFlag) Set(s string) error {
	if s == debugBare {
		d.level++
		return nil
	}
	d.stage = s
	return nil
}

// maxPID is the largest PID Linux can give (PID_MAX_LIMIT), the bound of
// bpftrace's -p check.
const maxPID = 4194304

// run is the whole command: it returns the process exit code, so that tests
// can call it in-process.
func run(args []string, stdout, stderr io.Writer) int {
	var f flags
	code := 0
	cmd := &cobra.Command{
		Use:           "gotrace [options] FILE [ARG...] | -e 'PROGRAM' [ARG...] | -l [PATTERN]",
		Short:         "gotrace: a bpftrace-compatible tracer for USDT probes",
		SilenceErrors: true,
		SilenceUsage:  true,
		// The script and its parameters: with subcommands, cobra
		// refuses positional arguments of the root command unless told
		// otherwise.
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := execute(cmd.Context(), &f, args, stdout, stderr)
			code = c
			return err
		},
	}
	cmd.SetArgs(args)
	cmd.SetOut(stdout)
	cmd.SetErr(stderr)
	cmd.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return &usageError{err: err, useLine: c.UseLine(), command: c.CommandPath()}
	})
	fs := cmd.Flags()
	// Flags may follow the script file, as with bpftrace's getopt; a
	// positional parameter such as -5 goes after "--".
	fs.SortFlags = false
	fs.StringVarP(&f.program, "program", "e", "", "execute this `PROGRAM`")
	fs.BoolVarP(&f.list, "list", "l", false, "list probes matching the pattern given as argument")
	fs.BoolVarP(&f.verbose, "verbose", "v", false, "verbose messages; with -l, list probe arguments")
	fs.StringVarP(&f.pid, "pid", "p", "", "trace only process `PID` and enable its USDT probes")
	fs.StringVarP(&f.command, "command", "c", "", "run `CMD`, trace only it and exit when it exits")
	fs.StringVar(&f.user, "user", "", "run the -c command as `USER` (a name or a uid); by default, under sudo, as the user who ran sudo")
	fs.BoolVar(&f.asRoot, "as-root", false, "run the -c command as gotrace's own user (root under sudo), not as the user who ran sudo")
	fs.StringVarP(&f.outFile, "output", "o", "", "write output to `FILE`")
	fs.StringVarP(&f.writeFile, "write", "w", "", "record the trace into the capture `FILE`, printing nothing of it; gotrace replay FILE prints it")
	fs.StringVarP(&f.format, "format", "f", "text", formatHelp)
	fs.BoolVarP(&f.quiet, "quiet", "q", false, "do not print \"Attaching N probes...\"")
	fs.VarP(&f.debug, "debug", "d", "(dry run) print the AST after parsing and after checking, then the eBPF maps and programs (-dd: the same); -d`[=STAGE]` prints only the program after STAGE: "+strings.Join(debugStages(), ", ")+" (ast is check)")
	fs.Lookup("debug").NoOptDefVal = debugBare
	fs.BoolVar(&f.dryRun, "dry-run", false, "check and compile, but do not load or attach")
	fs.StringVarP(&f.buffering, "buffering", "B", "full", "output buffering `MODE`: full (write when the ring buffer is empty), line or none (write each line at once)")
	fs.Var((*stringList)(&f.include), "include", "put the text of `FILE` before the script: its #define macros and struct definitions")
	fs.VarP((*stringList)(&f.includeDir), "include-dir", "I", "add `DIR` to the #include path: not supported, gotrace skips #include (use --include FILE)")
	fs.CountVarP(&f.helpers, "check-helpers", "k", "``accepted for bpftrace's -k and -kk; gotrace does not report helper errors")
	fs.BoolVar(&f.usdtFile, "usdt-file-activation", false, "accepted: USDT semaphores are always raised in every process that maps the file")
	fs.BoolVar(&f.info, "info", false, "print what this kernel offers gotrace")
	fs.BoolVarP(&f.version, "version", "V", false, "print the version")
	fs.BoolVar(&f.unsafe, "unsafe", false, "allow unsafe builtins (system, cat)")
	fs.BoolVar(&f.noWarnings, "no-warnings", false, "do not print warnings")
	fs.StringVar(&f.missing, "missing-probes", "", "what a usdt probe or function that does not exist does: `MODE` error (the default), warn (and trace the rest) or ignore; a wildcard that matches nothing never counts. It overrides BPFTRACE_MISSING_PROBES, which overrides the script's missing_probes config key")
	f.metrics.add(fs)
	stream.AddFlags(fs, &f.nats, true)
	fs.BoolVar(&f.noMulti, "no-uprobe-multi", false, "attach a perf-event uprobe at each location, not one uprobe_multi link per program and file (-v says which is used)")
	// For profiling gotrace itself (its reader, printing the maps), not
	// a bpftrace option.
	fs.StringVar(&f.cpuProfile, "cpuprofile", "", "write a Go CPU profile of gotrace to `FILE`")
	fs.MarkHidden("cpuprofile")
	if wantsCommandTree(args) {
		addCommandTree(cmd, &code)
	} else {
		// Nor cobra's completion command, which it builds, with one
		// command a shell, at every start unless told not to.
		cmd.CompletionOptions.DisableDefaultCmd = true
	}

	ctx, stop := signalContext(!processEnds)
	defer stop()
	if wantsCommandTree(args) {
		// Help and the subcommands write from the start; only the
		// root command's trace has parsing to overlap (execute).
		signalsCaught(ctx)
	}
	err := cmd.ExecuteContext(ctx)
	signalsCaught(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "ERROR: %v\n", err)
		if u, ok := errors.AsType[*usageError](err); ok {
			fmt.Fprintf(stderr, "USAGE:\n  %s\nRun '%s -h' for the options.\n", u.useLine, u.command)
		}
		if code == 0 {
			code = 1
		}
	}
	return code
}

// addCommandTree gives root what only help and the subcommands use: the
// long description, bpftrace's usage heading and the subcommands
// (replay, flamegraph, chart, completion, __man). Building them took
// cobra about a third of gotrace's set-up (issue 24), and a trace, -l or
// --version uses none of it.
func addCommandTree(root *cobra.Command, code *int) {
	root.Long = fmt.Sprintf(`gotrace runs bpftrace scripts against USDT probes (Bitcoin Core, Python,
PostgreSQL, the JVM) and prints what bpftrace prints, from one static binary.

Environment: BPFTRACE_STRLEN (string size, default %d), BPFTRACE_MAP_KEYS_MAX
(map size, default %d), BPFTRACE_PERF_RB_PAGES (printf ring buffer pages,
default 16 MiB worth).`, settings.DefaultStrLen, settings.DefaultMapKeysMax)
	// bpftrace's heading, which its users' scripts and tests look for.
	root.SetUsageTemplate(strings.Replace(root.UsageTemplate(), "Usage:", "USAGE:", 1))
	addToolCommands(root)
	addReplayCommand(root, code)
	addFlameGraphCommand(root, code)
	addChartCommand(root, code)
}

// commandTreeWords are the arguments that name a subcommand (cobra's help,
// completion and __complete among them): an argument list with one of
// them gets the command tree. TestCommandTreeWords keeps the list whole.
var commandTreeWords = []string{
	"help", "completion", cobra.ShellCompRequestCmd, cobra.ShellCompNoDescRequestCmd,
	manCommandName, replayCommandName, flameGraphCommandName, chartCommandName,
}

// wantsCommandTree is needsCommandTree; a test sets it to build the tree
// for every command line and compare.
var wantsCommandTree = needsCommandTree

// needsCommandTree reports whether args may ask for help or a subcommand:
// an argument that names one, --help, or a short flag group holding an h
// (-h, -qh). It may say yes for a trace (-ehello, a script named chart),
// which then only costs the tree's set-up; it never says no to help or a
// subcommand.
func needsCommandTree(args []string) bool {
	for _, a := range args {
		switch {
		case slices.Contains(commandTreeWords, a):
			return true
		case a == "--help" || strings.HasPrefix(a, "--help="):
			return true
		case len(a) > 1 && a[0] == '-' && a[1] != '-' && strings.IndexByte(a, 'h') > 0:
			return true
		}
	}
	return false
}

// usageError is a command line that cobra cannot parse (an unknown flag, a
// flag without its value): as bpftrace does, the error is followed by the
// usage, here its first line.
type usageError struct {
	err     error
	useLine string
	// command is the command's path, "gotrace replay" for the subcommand.
	command string
}

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// signalContext returns a context that SIGINT, SIGTERM and SIGHUP cancel
// (the trace ends, END runs, the maps are printed, a -c command is
// stopped) and SIGQUIT cancels with runtime.ErrQuit (the trace ends at
// once, as SIGQUIT ends bpftrace 0.17, but with the probes detached and a
// -c command stopped, and without Go's goroutine dump). SIGPIPE is caught
// and dropped, so that a closed standard output is a write error (EPIPE),
// which ends the trace, and not the death of gotrace; catching it, unlike
// ignoring it, leaves a -c command's SIGPIPE at its default. SIGUSR1 is the
// runtime's.
//
// The signals are caught by a goroutine of their own: catching one is a
// round trip to the runtime's signal thread (a locked one), the five 1 ms
// of a trace's start on this project's VMs (issue 24), which the command
// line's parsing overlaps. Whatever writes output or starts the trace
// first waits for them with signalsCaught.
//
// With release false the returned stop leaves the signals caught, for a
// process that exits next: giving one back is the same round trip, the
// five of them a chain of thread wake-ups at the end of every trace. A
// signal that arrives after stop is then dropped instead of ending the
// process, which exits anyway.
func signalContext(release bool) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(context.Background())
	sigs := make(chan os.Signal, 1)
	caught := make(chan struct{})
	ctx = context.WithValue(ctx, signalsKey{}, caught)
	done := make(chan struct{})
	go func() {
		signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGPIPE)
		close(caught)
		for {
			select {
			case <-done:
				return
			case sig := <-sigs:
				switch sig {
				case syscall.SIGPIPE:
				case syscall.SIGQUIT:
					cancel(runtime.ErrQuit)
				default:
					cancel(context.Canceled)
				}
			}
		}
	}()
	return ctx, func() {
		<-caught
		if release {
			signal.Stop(sigs)
		}
		close(done)
		cancel(nil)
	}
}

// signalsKey is the context key of the channel that signalContext closes
// once the signals are caught.
type signalsKey struct{}

// signalsCaught waits until the signals of ctx's signalContext are
// caught: before the first output, which a closed pipe must turn into an
// error rather than SIGPIPE's death, and before a trace starts, which
// SIGINT must end with its maps printed. A context without them has none
// to wait for.
func signalsCaught(ctx context.Context) {
	if caught, ok := ctx.Value(signalsKey{}).(chan struct{}); ok {
		<-caught
	}
}

// formatHelp is -f's help, the root command's and replay's.
const formatHelp = "output `FORMAT`: text, json or folded (maps keyed by ustack or kstack as flame-graph tools read them, a line per stack; docs/flamegraph.md)"

// checkOutputFormat refuses an -f FORMAT other than text, json and
// folded, in bpftrace's words (gotrace adds folded).
func checkOutputFormat(format string) error {
	if format != "text" && format != "json" && format != "folded" {
		return fmt.Errorf("Invalid output format %q\nValid formats: 'text', 'json', 'folded'", format)
	}
	return nil
}

// frontEndMemoryLimit is the Go heap's soft limit while a script is parsed,
// checked and compiled. The front end's garbage is most of its heap (a
// 400 KB script's tokens and instructions); collecting it before the
// heap doubles keeps such a script under 80 MB where the default policy
// reached 100. The limit is soft: a larger script collects more often,
// never fails. GOMEMLIMIT, when set, wins.
const frontEndMemoryLimit = 64 << 20

// limitFrontEndMemory sets frontEndMemoryLimit and returns the function
// that lifts it.
func limitFrontEndMemory() (lift func()) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	debug.SetMemoryLimit(frontEndMemoryLimit)
	return liftFrontEndMemoryLimit
}

// liftFrontEndMemoryLimit lifts the front end's limit before tracing:
// printing a million keys at exit needs its heap and should not pay for
// collections meant for the compiler.
func liftFrontEndMemoryLimit() {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(math.MaxInt64)
	}
}

// quitCode is the exit code after SIGQUIT: the shell's for a process that
// SIGQUIT ended.
const quitCode = 128 + int(syscall.SIGQUIT)

// execute does what the flags ask. A non-nil error is printed as
// "ERROR: ..."; diagnostics it prints itself come with an exit code only.
func execute(ctx context.Context, f *flags, args []string, stdout, stderr io.Writer) (int, error) {
	if f.version || f.info || f.list {
		signalsCaught(ctx)
	}
	if f.cpuProfile != "" {
		stop, err := startCPUProfile(f.cpuProfile)
		if err != nil {
			return 1, err
		}
		defer stop()
	}
	if f.version {
		fmt.Fprintf(stdout, "gotrace %s\n", version)
		return 0, nil
	}
	if f.info {
		// bpftrace prints --info on standard error.
		runtime.WriteInfo(stderr, version)
		return 0, nil
	}
	if err := checkOutputFormat(f.format); err != nil {
		return 1, err
	}
	if f.buffering != "full" && f.buffering != "line" && f.buffering != "none" {
		return 1, errors.New("USAGE: -B must be either 'line', 'full', or 'none'.")
	}
	if len(f.includeDir) > 0 {
		return 1, errors.New("-I is not supported: gotrace skips #include directives (it has no C preprocessor); pass a header's macros and structs with --include FILE")
	}
	pid, err := parsePID(f.pid)
	if err != nil {
		return 1, err
	}
	if pid != 0 && f.command != "" {
		return 1, errors.New("-p and -c cannot be used together")
	}
	if (f.user != "" || f.asRoot) && f.command == "" {
		return 1, errors.New("--user and --as-root choose the user of a -c command: there is none")
	}
	if f.list {
		return list(f, pid, args, stdout, stderr)
	}
	if f.writeFile != "" && f.outFile != "" {
		return 1, errors.New("-w and -o cannot be used together: a capture (-w) holds the output; give -o to gotrace replay")
	}
	if f.nats.URL != "" && f.outFile != "" {
		return 1, errors.New("--nats and -o cannot be used together: the trace goes to the stream, and nothing of it to -o's file (-w FILE keeps a capture as well)")
	}

	if err := checkPrivileges(f, args); err != nil {
		return 1, err
	}
	file, src, params, err := script(f, args)
	if err != nil {
		return 1, err
	}
	pre, err := includes(f.include)
	if err != nil {
		return 1, err
	}
	src = pre.text + src
	diagnose := func(err error) (int, error) { return pre.diagnose(err, file, src, stderr) }
	defer limitFrontEndMemory()()
	// lang.Parse, the settings (flags, environment, the script's config
	// block), then the passes of lang.Passes (lang.Analyze), then
	// runtime.Compile or runtime.Run.
	cfg := lang.Config{
		Params: params, Unsafe: f.unsafe,
		Child: f.command != "", Host: runtime.NewHost(pid, f.command), Kernel: runtime.NewKernel(),
	}
	// -d STAGE prints the program after that stage, a dry run; -d
	// without a stage prints bpftrace's: after the parser (here: after
	// the last desugaring pass) and after the semantic passes.
	dump, err := debugDump(f.debug)
	if err != nil {
		return 1, err
	}
	// What comes next may write (-d, errors, warnings) and runs the
	// trace.
	signalsCaught(ctx)
	prog, err := lang.Parse(file, src)
	if err == nil {
		cfg.Values, err = resolveSettings(f, prog)
	}
	if err == nil && dump.stage == "parse" {
		lang.Dump(stdout, prog, nil)
		return 0, nil
	}
	var info *lang.Info
	if err == nil {
		info, err = lang.Analyze(prog, cfg, func(pass lang.Pass, info *lang.Info) { dump.after(pass, prog, info) })
	}
	if err != nil {
		return diagnose(err)
	}
	if !f.noWarnings {
		info.Warnings.WriteWarnings(stderr, prog.File, prog.Source)
	}
	if _, err := dump.w.WriteTo(stdout); err != nil {
		return 1, fmt.Errorf("write debug output: %w", err)
	}
	if dump.done {
		return 0, nil
	}
	if err := checkProgram(f, prog, params, pid); err != nil {
		return 1, err
	}

	out := stdout
	if f.outFile != "" {
		of, err := createAsUser(f.outFile)
		if err != nil {
			return 1, fmt.Errorf("open output file: %w", err)
		}
		defer of.Close()
		out = of
	}
	opts := runtime.Options{
		Out: out, Err: stderr, Format: f.format, Quiet: f.quiet,
		PID: pid, Command: f.command, User: f.user, AsRoot: f.asRoot,
		Params: params, Unsafe: f.unsafe,
		Values: cfg.Values, Verbose: f.verbose,
		NoWarnings: f.noWarnings, NoUprobeMulti: f.noMulti,
		LineBuffered: f.buffering != "full",
		TakeMap:      f.takeMap,
		LastTrace:    processEnds,
	}
	if f.outFile != "" {
		opts.Stdout = stdout
	}
	if f.writeFile != "" && f.debug.level == 0 && f.debug.stage == "" && !f.dryRun {
		wf, err := createAsUser(f.writeFile)
		if err != nil {
			return 1, fmt.Errorf("open capture file: %w", err)
		}
		defer wf.Close()
		opts.Capture = wf
	}
	if dump.stage == "plan" {
		// The plan as --dry-run -v prints it: every site, where it
		// attaches and why, nothing loaded.
		opts.Verbose = true
		if err := runtime.DryRun(prog, info, opts); err != nil {
			return diagnose(err)
		}
		return 0, nil
	}
	if dump.stage == "codegen" || f.debug.level > 0 {
		spec, err := runtime.Compile(prog, info, opts)
		if err != nil {
			return diagnose(err)
		}
		if f.debug.level > 0 {
			debugHeader(stdout, "eBPF after: codegen")
		}
		spec.WriteListing(stdout)
		return 0, nil
	}
	if f.dryRun {
		if err := runtime.DryRun(prog, info, opts); err != nil {
			return diagnose(err)
		}
		return 0, nil
	}
	collector, stopMetrics, err := f.metrics.start(stderr)
	if err != nil {
		return 1, err
	}
	defer stopMetrics()
	opts.Metrics = collector
	opts.Compiled = liftFrontEndMemoryLimit
	var bus *stream.Helper
	if opts.Capture, bus, err = startNATS(f.nats, opts.Capture, stderr); err != nil {
		return 1, err
	}
	err = runtime.Run(ctx, prog, info, opts)
	if bus != nil {
		if berr := bus.Close(); berr != nil && err == nil {
			err = berr
		}
	}
	if errors.Is(err, runtime.ErrQuit) {
		return quitCode, nil
	}
	if code, ok := exitCode(err); ok {
		return code, nil
	}
	if errors.Is(err, syscall.EPIPE) {
		// Whoever read the output is gone (| head): the trace ended
		// cleanly, and there is no one to tell.
		return 0, nil
	}
	if err != nil {
		return diagnose(err)
	}
	return 0, nil
}

// exitCode is the exit code of a trace that ended by exit(code) with a
// code other than 0, as Run and Replay return it.
func exitCode(err error) (int, bool) {
	status, ok := errors.AsType[runtime.ExitStatus](err)
	return int(status), ok
}

// debugStages are the stages -d STAGE prints after: parse, each of the
// front end's passes, the probe plan and codegen; ast is check's old
// name.
func debugStages() []string {
	stages := []string{"parse"}
	for _, p := range lang.Passes {
		stages = append(stages, p.Name)
	}
	return append(stages, "plan", "codegen")
}

// debugDumper prints the program after the passes -d asks for, held
// until every pass has run: a script with errors prints only those.
type debugDumper struct {
	w bytes.Buffer
	// stage is the one stage -d STAGE prints, level the count of a bare
	// -d (bpftrace's: the AST after the parser and after the semantic
	// passes, then the programs).
	stage string
	level int
	// done is set once the stage asked for is printed: the run ends there.
	done bool
}

// debugDump checks -d's stage and returns the dumper for it.
func debugDump(d debugFlag) (*debugDumper, error) {
	stage := d.stage
	if stage == "ast" {
		stage = "check"
	}
	if stage != "" && !slices.Contains(debugStages(), stage) {
		return nil, fmt.Errorf("unknown debug stage %q: the stages are: %s (ast is check)", d.stage, strings.Join(debugStages(), ", "))
	}
	return &debugDumper{stage: stage, level: d.level}, nil
}

// after prints prog, typed by info where the checker has run, after pass
// when -d asks for it.
func (d *debugDumper) after(pass lang.Pass, prog *lang.Program, info *lang.Info) {
	switch {
	case d.stage == pass.Name:
		lang.Dump(&d.w, prog, info)
		d.done = true
	case d.level > 0 && pass.Name == lastDesugarPass():
		debugHeader(&d.w, "AST after: parser")
		lang.Dump(&d.w, prog, info)
	case d.level > 0 && pass.Name == "check":
		debugHeader(&d.w, "AST after: semantic")
		lang.Dump(&d.w, prog, info)
	}
}

// lastDesugarPass names the last of the front end's desugaring passes.
func lastDesugarPass() string {
	name := ""
	for _, p := range lang.Passes {
		if p.Desugar {
			name = p.Name
		}
	}
	return name
}

// debugHeader prints a stage's title as bpftrace's -d does.
func debugHeader(w io.Writer, title string) {
	fmt.Fprintf(w, "\n%s\n-------------------\n", title)
}

// parsePID checks -p as bpftrace 0.17 does; "" is no -p, 0.
func parsePID(s string) (int, error) {
	if s == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, fmt.Errorf("pid '%s' is not a valid decimal number", s)
	}
	if err != nil || n < 1 || n > maxPID {
		return 0, fmt.Errorf("pid '%s' out of valid pid range [1,%d]", s, maxPID)
	}
	return int(n), nil
}

// diagnose prints the script's diagnostics when err carries them, with the
// source line they point at; other errors go back to be printed as
// "ERROR: ...".
func diagnose(err error, file, src string, stderr io.Writer) (int, error) {
	var diags lang.ErrorList
	if errors.As(err, &diags) {
		diags.Write(stderr, file, src)
		return 1, nil
	}
	return 1, err
}

// script returns the script's name for diagnostics, its text and its
// positional parameters, from -e or from the first argument.
func script(f *flags, args []string) (file, src string, params []string, err error) {
	if f.program != "" {
		return "stdin", f.program, args, nil
	}
	if len(args) == 0 {
		return "", "", nil, errors.New("no program given: pass a script file, '-' for standard input, or -e 'PROGRAM' (see -h)")
	}
	var b []byte
	if args[0] == "-" {
		b, err = io.ReadAll(os.Stdin)
		file = "stdin"
	} else {
		b, err = readFileAsUser(args[0])
		file = args[0]
	}
	if err != nil {
		// bpftrace's message, with strerror's text.
		return "", "", nil, fmt.Errorf("failed to open file '%s': %s", args[0], output.Strerror(err))
	}
	return file, string(b), args[1:], nil
}

// list prints the probes that match the pattern (-l), of a process (-p) or
// both.
func list(f *flags, pid int, args []string, stdout, stderr io.Writer) (int, error) {
	if len(args) > 1 {
		return 1, errors.New("-l takes at most one pattern")
	}
	pattern := ""
	if len(args) == 1 {
		pattern = args[0]
	}
	var err error
	kernel := false
	if pid == 0 || strings.Contains(pattern, ":") {
		// With -p, a pattern of no probe type lists the process's probes.
		kernel, err = runtime.ListKernel(stdout, pattern, len(args) == 1, f.verbose)
	}
	if !kernel {
		err = asUser(func() error {
			var debug debuginfo.Files
			return usdt.List(stdout, usdt.ListOptions{Pattern: pattern, PID: pid, Verbose: f.verbose, UprobeParams: debug.ParamLines})
		})
	}
	var pe *usdt.PatternError
	if errors.As(err, &pe) {
		// bpftrace treats the pattern as a one-line script named stdin.
		end := lang.Pos{Line: 1, Col: int32(len(pe.Pattern) + 1)}
		diag := lang.ErrorList{{Span: lang.Span{Start: lang.Pos{Line: 1, Col: 1}, End: end}, Msg: pe.Msg}}
		return diagnose(diag, "stdin", pe.Pattern, stderr)
	}
	if err != nil {
		return 1, err
	}
	return 0, nil
}

// resolveSettings reads the trace's settings (internal/settings) from the
// flags, the environment and the script's config block, in that order;
// a bad value in the config block is a diagnostic at its entry.
func resolveSettings(f *flags, prog *lang.Program) (settings.Values, error) {
	src := settings.Sources{Flags: map[string]string{}, Env: os.LookupEnv}
	if f.missing != "" {
		src.Flags["--missing-probes"] = f.missing
	}
	for _, c := range prog.Config {
		src.Config = append(src.Config, settings.ConfigEntry{Key: c.Key, Value: c.Value})
	}
	v, err := settings.Resolve(src)
	if bad, ok := errors.AsType[*settings.Error](err); ok && bad.Source == "config" {
		return v, lang.ErrorList{{Span: prog.Config[bad.Entry].Loc, Msg: bad.Error()}}
	}
	return v, err
}

// startCPUProfile writes a CPU profile to file until the returned function
// is called.
func startCPUProfile(file string) (func(), error) {
	out, err := os.Create(file)
	if err != nil {
		return nil, fmt.Errorf("create CPU profile: %w", err)
	}
	if err := pprof.StartCPUProfile(out); err != nil {
		out.Close()
		return nil, fmt.Errorf("start CPU profile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		out.Close()
	}, nil
}
