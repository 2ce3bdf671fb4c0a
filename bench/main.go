// Command bench runs gotrace and bpftrace side by side on the same cases and
// prints, for each, the median wall time (or the case's own measure) and the
// median peak RSS of each tool and their ratio gotrace/bpftrace.
//
//	go run ./bench [-n 11] [-only NAME] [-json FILE]
//
// It must run as root from inside the module: it builds gotrace with go
// build and a small USDT loop program (bench/loop/loop.c) with gcc into a
// temporary directory. Runs of the two tools are interleaved, so that a
// machine that slows down mid-run slows both. See bench/README.md.
package main

import (
	"bufio"
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

//go:embed loop/loop.c
var loopSource []byte

//go:embed rss/rss.c
var rssSource []byte

// rssHelper is the built bench/rss/rss.c, through which measure runs a
// tool to read its own peak RSS (see there why os/exec's cannot be used)
// and its wall time from fork to reaping.
var rssHelper string

// libjvm is the largest USDT target on these machines (500-odd probes).
const libjvm = "/usr/lib/jvm/java-17-openjdk-amd64/lib/server/libjvm.so"

// Sizes of the loop runs.
const (
	// hitIterations is how often the per-hit cases fire the probe: big
	// enough that start-up does not matter inside the loop's own timing,
	// small enough for about a tenth of a second of hits per traced run
	// (a hit costs ~1 µs on the AMD VMs, 5-6 µs on the Intel ones with PTI).
	hitIterations = 100000
	// printfEvents is how many printf events the throughput case fires.
	printfEvents = 500000
	// mapKeys is the number of keys of the map printed at exit, which is
	// bpftrace's default BPFTRACE_MAP_KEYS_MAX.
	mapKeys = 4096
	// bigMapKeys is the number of keys of the big map printed at exit.
	bigMapKeys = 1000000
)

// burst is the printf of the burst cases: a 155-byte line of two strings,
// two integers and a 32-byte buffer printed as \xNN, written to a file.
const burst = `usdt:LOOP:bench:burst { printf("%s %d %s %d %r\n", str(arg0), arg1, str(arg2), arg3, buf(arg4, 32)); }`

// Kind says what a case measures besides wall time and peak RSS.
type Kind string

// The kinds of cases.
const (
	// KindWall: the tool's wall time.
	KindWall Kind = "wall"
	// KindHit: nanoseconds a probe hit adds to one loop iteration.
	KindHit Kind = "hit"
	// KindPrintf: printf lines delivered out of printfEvents.
	KindPrintf Kind = "printf"
	// KindPrintMap: time from the traced process's end to the tool's.
	KindPrintMap Kind = "printmap"
	// KindAttach: on a running Target, time from the tool's start until
	// BEGIN's "ready" line (both tools run BEGIN after attaching every
	// probe), then, after a second of tracing, from SIGINT to its exit.
	KindAttach Kind = "attach"
	// KindRegtest: scripts/netmsg.bt with -p on a regtest bitcoind
	// through a fixed workload (bench/regtest.go): the tool's CPU time,
	// and the time from its start to the workload's last message printed.
	KindRegtest Kind = "regtest"
	// KindProbe: the probe effect (bench/probe.go): the burst loop's
	// rate untraced, under bpftrace -o, gotrace -o and gotrace -w, beside
	// the lines each tool delivered.
	KindProbe Kind = "probe"
)

// exitBound is how long a KindAttach run waits for the tool to exit after
// SIGINT: bpftrace 0.17 takes a minute or more to detach hundreds of
// perf-event uprobes one by one, so its exit is reported as "> 20 s".
const exitBound = 20 * time.Second

// sleepJava is the Java program the libjvm case traces: it sleeps.
const sleepJava = `class Sleep {
	public static void main(String[] args) throws Exception {
		System.out.println("sleeping");
		Thread.sleep(Long.MAX_VALUE);
	}
}
`

// attachScript is the script of the KindAttach cases, with PROBE standing
// for the probe.
const attachScript = `BEGIN { printf("ready\n"); } PROBE { @ = count(); }`

// Case is one thing both tools are run on.
type Case struct {
	Name string
	Kind Kind
	// Args are the tool's arguments; "LOOP" stands for the loop binary,
	// "OUT" for a file the tool writes its output to (-o), whose printf
	// lines KindPrintf counts, "CAPTURE" for gotrace's -w capture file,
	// replayed into OUT to count them (bpftrace, which has no -w, prints
	// into OUT with -o), "SCRIPT" for a file holding Script, and
	// "DRYRUN" for the tool's flags that check and compile without
	// loading (gotrace --dry-run, bpftrace --emit-elf).
	Args []string
	// Script is the text of the script a check case checks.
	Script string
	// Env is added to the tools' environment.
	Env []string
	// Target is the command a KindAttach case traces with -p PID ("PID"
	// in Args), started once for all the case's runs; "DIR" stands for
	// the work directory, which holds Sleep.java. It must print a line
	// once it is up.
	Target []string
	// Keys is the number of map entries a KindPrintMap case prints.
	Keys int
	// TimeTarget and RSSTarget are the ratios gotrace/bpftrace the project
	// aims at (0: none).
	TimeTarget, RSSTarget float64
}

// withEnv returns c with env added to its tools' environment.
func withEnv(c Case, env ...string) Case {
	c.Env = append(c.Env, env...)
	return c
}

// cases returns every case, in the order they run.
func cases() []Case {
	hit := func(name, body string) Case {
		return Case{Name: "hit-" + name, Kind: KindHit, Args: []string{
			"-c", fmt.Sprintf("LOOP %d", hitIterations),
			"-e", "usdt:LOOP:bench:hit { " + body + " }",
		}}
	}
	return []Case{
		{Name: "list-libjvm", Kind: KindWall, Args: []string{"-l", "usdt:" + libjvm + ":*"},
			TimeTarget: 0.5, RSSTarget: 0.5},
		{Name: "startup", Kind: KindWall, Args: []string{"-e", "BEGIN { exit(); }"},
			TimeTarget: 0.1, RSSTarget: 0.25},
		// A tracepoint script: tracefs, the format file and BTF are read
		// before anything is loaded; it exits at the first system call.
		{Name: "startup-tracepoint", Kind: KindWall, Args: []string{"-e", "tracepoint:raw_syscalls:sys_enter { exit(); }"}},
		hit("empty", ""),
		hit("count", "@ = count();"),
		hit("count-str-key", "@[str(arg2)] = count();"),
		hit("hist-tuple-key", "@h[arg1, str(arg2)] = hist(arg0);"),
		hit("hist", "@ = hist(arg0);"),
		hit("lhist", "@ = lhist(arg1, 0, 16, 1);"),
		// A user stack as a map key: the kernel's frame-pointer walk of
		// the loop's stack (main, __libc_start_call_main) and a stack map
		// update, the cost issue 26's unwinding is measured against.
		hit("ustack", "@[ustack] = count();"),
		// The same walked with .eh_frame rules in the program (gotrace's
		// stack_unwind=eh_frame; bpftrace ignores the variable and walks
		// by frame pointers): the loop's whole stack, fire, main,
		// __libc_start_call_main, __libc_start_main, _start. The loop
		// waits 500 ms before its first hit, for gotrace to load its
		// mappings (it learns them from the kernel's records, drained
		// every 20 ms, and builds its files' tables).
		withEnv(hit("ustack-ehframe", "@[ustack] = count();"), "BPFTRACE_STACK_UNWIND=eh_frame", "LOOP_SETTLE_MS=500"),
		// Two maps keyed by two strings of bench:burst (name, i, other
		// name, i % KEYS): a string read and a hash map operation each.
		{Name: "hit-two-maps", Kind: KindHit, Args: []string{
			"-c", fmt.Sprintf("LOOP %d", hitIterations),
			"-e", "usdt:LOOP:bench:burst { @b[str(arg2)] = hist(arg3); @n[str(arg0), arg3]++; }",
		}},
		// Every process's system calls hit it; the loop makes one per
		// iteration (LOOP_SYSCALL), traced and untraced.
		{Name: "hit-tracepoint-count", Kind: KindHit, Env: []string{"LOOP_SYSCALL=1"}, Args: []string{
			"-c", fmt.Sprintf("LOOP %d", hitIterations),
			"-e", "tracepoint:raw_syscalls:sys_enter { @[comm] = count(); }",
		}},
		{Name: "printf", Kind: KindPrintf, Args: []string{
			"-c", fmt.Sprintf("LOOP %d", printfEvents),
			"-e", `usdt:LOOP:bench:hit { printf("%d %s\n", arg0, str(arg2)); }`,
		}},
		// The same 500,000 events from two threads at once: the tool's
		// reader then competes with both for the machine's two cores.
		{Name: "printf-2-threads", Kind: KindPrintf, Args: []string{
			"-c", fmt.Sprintf("LOOP %d 16 2", printfEvents/2),
			"-e", `usdt:LOOP:bench:hit { printf("%d %s\n", arg0, str(arg2)); }`,
		}},
		// The 155-byte burst into a file: 500,000 and 2,000,000 events,
		// and 500,000 from two threads at once.
		{Name: "burst-500k", Kind: KindPrintf, Args: []string{
			"-o", "OUT", "-c", fmt.Sprintf("LOOP %d", printfEvents), "-e", burst,
		}},
		{Name: "burst-2m", Kind: KindPrintf, Args: []string{
			"-o", "OUT", "-c", fmt.Sprintf("LOOP %d", 4*printfEvents), "-e", burst,
		}},
		// The same burst recorded with gotrace -w (replayed afterwards to
		// count the lines), against bpftrace printing it into a file.
		{Name: "capture-500k", Kind: KindPrintf, Args: []string{
			"CAPTURE", "-c", fmt.Sprintf("LOOP %d", printfEvents), "-e", burst,
		}},
		{Name: "capture-2m", Kind: KindPrintf, Args: []string{
			"CAPTURE", "-c", fmt.Sprintf("LOOP %d", 4*printfEvents), "-e", burst,
		}},
		// The same burst published to a local NATS JetStream stream
		// (gotrace --nats; bench/nats.go counts the printf messages the
		// stream holds once gotrace has exited), against bpftrace
		// printing it into a file.
		{Name: "nats-500k", Kind: KindPrintf, Args: []string{
			"NATS", "-c", fmt.Sprintf("LOOP %d", printfEvents), "-e", burst,
		}},
		{Name: "burst-2-threads", Kind: KindPrintf, Args: []string{
			"-o", "OUT", "-c", fmt.Sprintf("LOOP %d 16 2", printfEvents/2), "-e", burst,
		}},
		// The probe effect of the burst: the loop untraced and under
		// each tool, the four interleaved (bench/probe.go).
		{Name: "probe-500k", Kind: KindProbe, Args: []string{"-c", fmt.Sprintf("LOOP %d", printfEvents), "-e", burst}},
		{Name: "probe-2m", Kind: KindProbe, Args: []string{"-c", fmt.Sprintf("LOOP %d", 4*printfEvents), "-e", burst}},
		{Name: "print-map-4096", Kind: KindPrintMap, Keys: mapKeys, Args: []string{
			"-c", fmt.Sprintf("LOOP %d %d", mapKeys, mapKeys),
			"-e", "usdt:LOOP:bench:hit { @[arg1] = count(); }",
		}},
		{Name: "print-map-1m", Kind: KindPrintMap, Keys: bigMapKeys,
			Env: []string{fmt.Sprintf("BPFTRACE_MAP_KEYS_MAX=%d", bigMapKeys)},
			Args: []string{
				"-c", fmt.Sprintf("LOOP %d %d", bigMapKeys, bigMapKeys),
				"-e", "usdt:LOOP:bench:hit { @[arg1] = count(); }",
			}},
		// Hundreds of probe locations on a running process: USDT probes
		// of the JVM (531) and a wildcard uprobe (939 functions).
		attach("attach-libjvm-usdt", "usdt:"+libjvm+":*", "java", "DIR/Sleep.java"),
		attach("attach-python-uprobes", "uprobe:/usr/bin/python3.11:Py*",
			"/usr/bin/python3.11", "-c", "import time; print('sleeping', flush=True); time.sleep(86400)"),
		// A real Bitcoin Core v29.2 node (../shared/bitcoin-core) on
		// regtest, traced with -p while it syncs from a miner and relays
		// transactions and blocks.
		{Name: "regtest-netmsg", Kind: KindRegtest},
		check("check-expr-400k", "BEGIN { @ = 1"+strings.Repeat("+1", 200_000)+"; }"),
		check("check-probes-10", probes(10)),
		check("check-probes-100", probes(100)),
		check("check-probes-1000", probes(1000)),
		check("check-probes-10000", probes(10000)),
		check("check-printf-2000", printfs(2000)),
	}
}

// check is a case that checks and compiles script without loading it.
func check(name, script string) Case {
	return Case{Name: name, Kind: KindWall, Args: []string{"DRYRUN", "SCRIPT"}, Script: script,
		// bpftrace refuses more than 512 probes or programs by default.
		Env: []string{"BPFTRACE_MAX_PROBES=100000", "BPFTRACE_MAX_BPF_PROGS=100000"}}
}

// attach is a case that attaches probe to a running target.
func attach(name, probe string, target ...string) Case {
	return Case{Name: name, Kind: KindAttach, Target: target,
		Args: []string{"-p", "PID", "-e", strings.ReplaceAll(attachScript, "PROBE", probe)},
		// bpftrace refuses more than 512 probes or programs by default.
		Env: []string{"BPFTRACE_MAX_PROBES=100000", "BPFTRACE_MAX_BPF_PROGS=100000"}}
}

// probes is a script of n probes on the loop's probe, each with a filter
// and a map of its own.
func probes(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "usdt:LOOP:bench:hit /arg1 == %d/ { @m%d[str(arg2)] = count(); }\n", i, i)
	}
	return b.String()
}

// printfs is a script of one probe with n printf statements, each under
// an if.
func printfs(n int) string {
	var b strings.Builder
	b.WriteString("usdt:LOOP:bench:hit {\n")
	for i := range n {
		fmt.Fprintf(&b, "\tif (arg1 == %d) { printf(\"%%d %%s %d\\n\", arg0, str(arg2)); }\n", i, i)
	}
	b.WriteString("}\n")
	return b.String()
}

// Run is one run of one tool on one case.
type Run struct {
	Wall time.Duration
	// MaxRSS is the peak resident set size in bytes.
	MaxRSS int64
	// Value is the case's measure (KindHit: ns per hit before the untraced
	// loop is subtracted; KindPrintf: lines; KindPrintMap: seconds).
	Value float64
	// Lost is the total of the "Lost N events" lines.
	Lost int64
	// ProgNS is, for KindHit, the mean run time of the probe's eBPF
	// program in ns (the kernel's bpf_stats).
	ProgNS float64
	// Rate is, for KindPrintf, the events per second the traced loop
	// fired over its whole run (its mean_ns).
	Rate float64
	// Exit is, for KindAttach, the seconds from SIGINT to the tool's
	// exit; Cut says the tool was still running exitBound after SIGINT
	// and was killed.
	Exit float64
	Cut  bool
	// Ready and Fence are, for KindRegtest, the seconds from the tool's
	// start to BEGIN's line and to the workload's last message, and
	// Messages the message lines it printed.
	Ready, Fence float64
	Messages     int
	// Loop is, for KindPrintf and KindProbe, what the traced loop's main
	// thread said its loop cost it.
	Loop LoopCost
}

// Stats are the medians of a tool's runs of a case.
type Stats struct {
	Runs   int     `json:"runs"`
	Wall   float64 `json:"wall_seconds"`
	MaxRSS int64   `json:"max_rss_bytes"`
	Value  float64 `json:"value"`
	Lost   int64   `json:"lost_events"`
	// ProgNS is the median of the runs' ProgNS (KindHit).
	ProgNS float64 `json:"bpf_ns_per_run,omitempty"`
	// Rate is the median of the runs' Rate (KindPrintf).
	Rate float64 `json:"events_per_second,omitempty"`
	// Exit is the median of the runs' Exit (KindAttach), exitBound's
	// seconds for a run cut there; Cut counts such runs.
	Exit float64 `json:"exit_seconds,omitempty"`
	Cut  int     `json:"exit_cut_runs,omitempty"`
	// Ready, Fence and Messages are the medians of the runs'
	// (KindRegtest).
	Ready    float64 `json:"ready_seconds,omitempty"`
	Fence    float64 `json:"last_message_seconds,omitempty"`
	Messages int64   `json:"messages,omitempty"`
	// Min and Max are the smallest and largest Value of the runs.
	Min float64 `json:"min_value"`
	Max float64 `json:"max_value"`
	// Err is why the tool could not run the case ("" when it could).
	Err string `json:"error,omitempty"`
}

// Result is a case's outcome for both tools.
type Result struct {
	Case     string  `json:"case"`
	Kind     Kind    `json:"kind"`
	Unit     string  `json:"unit"`
	Bpftrace Stats   `json:"bpftrace"`
	Gotrace  Stats   `json:"gotrace"`
	Untraced float64 `json:"untraced_ns_per_iteration,omitempty"`
	// TimeRatio and RSSRatio are gotrace/bpftrace of the case's measure
	// and of the peak RSS, 0 when either tool failed.
	TimeRatio  float64 `json:"time_ratio"`
	RSSRatio   float64 `json:"rss_ratio"`
	TimeTarget float64 `json:"time_target,omitempty"`
	RSSTarget  float64 `json:"rss_target,omitempty"`
}

func main() {
	n := flag.Int("n", 11, "runs of each tool per case")
	only := flag.String("only", "", "run only the cases whose name contains `NAME`")
	jsonOut := flag.String("json", "", "also write the results as JSON to `FILE`")
	flag.Parse()
	if err := run(*n, *only, *jsonOut, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		os.Exit(1)
	}
}

func run(n int, only, jsonOut string, w io.Writer) error {
	if n < 1 {
		return fmt.Errorf("-n must be at least 1, not %d", n)
	}
	var selected []Case
	for _, c := range cases() {
		if strings.Contains(c.Name, only) {
			selected = append(selected, c)
		}
	}
	if len(selected) == 0 {
		return fmt.Errorf("no case matches -only %q", only)
	}
	if os.Geteuid() != 0 {
		return errors.New("must run as root: both tools load eBPF programs")
	}
	bpftrace, err := exec.LookPath("bpftrace")
	if err != nil {
		return fmt.Errorf("find bpftrace: %w", err)
	}
	dir, err := os.MkdirTemp("", "gotrace-bench-")
	if err != nil {
		return fmt.Errorf("make work directory: %w", err)
	}
	defer os.RemoveAll(dir)
	gotrace, loop, err := build(dir)
	if err != nil {
		return err
	}
	if slices.ContainsFunc(selected, func(c Case) bool { return c.Kind == KindHit }) {
		stats, err := ebpf.EnableStats(uint32(unix.BPF_STATS_RUN_TIME))
		if err != nil {
			return fmt.Errorf("enable eBPF run-time statistics: %w", err)
		}
		defer stats.Close()
	}
	fmt.Fprintf(w, "gotrace vs bpftrace, median of %d runs each, interleaved\n\n", n)
	if slices.ContainsFunc(selected, func(c Case) bool { return strings.HasPrefix(c.Name, "startup") }) {
		if err := printFloor(w, dir, n); err != nil {
			return err
		}
	}

	var results []Result
	for _, c := range selected {
		if c.Kind == KindProbe {
			if err := probeEffect(w, n, c, tools{gotrace: gotrace, bpftrace: bpftrace, loop: loop, dir: dir}); err != nil {
				return err
			}
			continue
		}
		r := Result{Case: c.Name, Kind: c.Kind, Unit: unit(c.Kind), TimeTarget: c.TimeTarget, RSSTarget: c.RSSTarget}
		if c.Kind == KindHit {
			r.Untraced, err = untraced(loop, n, c.Env)
			if err != nil {
				return err
			}
		}
		target, err := startTarget(c, dir)
		if err != nil {
			return err
		}
		if slices.Contains(c.Args, "NATS") {
			if natsBus, err = startNATS(dir); err != nil {
				return err
			}
		}
		var bRuns, gRuns []Run
		var bErr, gErr error
		for i := 0; i < n; i++ {
			// Alternate which tool goes first.
			order := []bool{true, false}
			if i%2 == 1 {
				order = []bool{false, true}
			}
			for _, isB := range order {
				switch {
				case isB && bErr == nil:
					var run Run
					if run, bErr = measure(bpftrace, loop, c, dir, target); bErr == nil {
						bRuns = append(bRuns, run)
					}
				case !isB && gErr == nil:
					var run Run
					if run, gErr = measure(gotrace, loop, c, dir, target); gErr == nil {
						gRuns = append(gRuns, run)
					}
				}
			}
			if bErr != nil && gErr != nil {
				break
			}
		}
		if target != nil {
			target.Process.Kill()
			target.Wait()
		}
		if natsBus != nil {
			natsBus.stop()
			natsBus = nil
		}
		r.Bpftrace = summarize(bRuns, bErr, c.Kind, r.Untraced)
		r.Gotrace = summarize(gRuns, gErr, c.Kind, r.Untraced)
		if r.Bpftrace.Err == "" && r.Gotrace.Err == "" {
			r.TimeRatio = ratio(r.Gotrace.measureOf(c.Kind), r.Bpftrace.measureOf(c.Kind))
			r.RSSRatio = ratio(float64(r.Gotrace.MaxRSS), float64(r.Bpftrace.MaxRSS))
		}
		results = append(results, r)
		printResult(w, r)
	}
	if len(results) > 0 {
		printTable(w, results)
	}
	if jsonOut != "" {
		b, err := json.MarshalIndent(results, "", "  ")
		if err != nil {
			return fmt.Errorf("encode results: %w", err)
		}
		if err := os.WriteFile(jsonOut, append(b, '\n'), 0o644); err != nil {
			return fmt.Errorf("write results: %w", err)
		}
	}
	return nil
}

// build compiles gotrace and the loop program into dir.
func build(dir string) (gotrace, loop string, err error) {
	gotrace = filepath.Join(dir, "gotrace")
	// Static, as hack/demo.sh builds it: a cgo build also pays the
	// dynamic loader at every start (about 8 ms here).
	cmd := exec.Command("go", "build", "-o", gotrace, "github.com/gotrace/gotrace/cmd/gotrace")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", "", fmt.Errorf("build gotrace (run bench from inside the module): %w\n%s", err, out)
	}
	if err := buildNATSHelper(gotrace); err != nil {
		return "", "", err
	}
	src := filepath.Join(dir, "loop.c")
	if err := os.WriteFile(src, loopSource, 0o644); err != nil {
		return "", "", fmt.Errorf("write loop.c: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "Sleep.java"), []byte(sleepJava), 0o644); err != nil {
		return "", "", fmt.Errorf("write Sleep.java: %w", err)
	}
	rssHelper = filepath.Join(dir, "rss")
	if err := os.WriteFile(rssHelper+".c", rssSource, 0o644); err != nil {
		return "", "", fmt.Errorf("write rss.c: %w", err)
	}
	if out, err := exec.Command("gcc", "-O2", "-Wall", "-o", rssHelper, rssHelper+".c").CombinedOutput(); err != nil {
		return "", "", fmt.Errorf("build rss with gcc: %w\n%s", err, out)
	}
	loop = filepath.Join(dir, "loop")
	out, err = exec.Command("gcc", "-O2", "-Wall", "-o", loop, src).CombinedOutput()
	if err != nil {
		return "", "", fmt.Errorf("build loop with gcc (needs systemtap-sdt-dev): %w\n%s", err, out)
	}
	return gotrace, loop, nil
}

// unit names what a case's measure is in.
func unit(k Kind) string {
	switch k {
	case KindHit:
		return "ns/hit"
	case KindPrintf, KindProbe:
		return "lines"
	case KindPrintMap:
		return "s"
	case KindAttach:
		return "s to ready"
	case KindRegtest:
		return "s CPU"
	}
	return "s"
}

var (
	nsPerIteration = regexp.MustCompile(`(?m)^iterations=\d+ ns_per_iteration=([0-9.]+)`)
	meanNS         = regexp.MustCompile(`(?m)^iterations=\d+ ns_per_iteration=[0-9.]+ mean_ns=([0-9.]+)`)
	doneNS         = regexp.MustCompile(`(?m)^done ns=(\d+)$`)
	lostEvents     = regexp.MustCompile(`(?m)^Lost (\d+) events$`)
	printfLine     = regexp.MustCompile(`^\d+ [a-z0-9]+\n$`)
	burstLine      = regexp.MustCompile(`^[a-z0-9]+ \d+ [a-z0-9]+ \d+ (\\x[0-9a-f]{2}){32}$`)
)

// untraced returns the median ns per iteration of the loop run n times on
// its own, with the case's environment env (LOOP_SYSCALL).
func untraced(loop string, n int, env []string) (float64, error) {
	var v []float64
	for i := 0; i < n; i++ {
		cmd := exec.Command(loop, strconv.Itoa(hitIterations))
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.Output()
		if err != nil {
			return 0, fmt.Errorf("run loop untraced: %w", err)
		}
		m := nsPerIteration.FindSubmatch(out)
		if m == nil {
			return 0, fmt.Errorf("run loop untraced: no ns_per_iteration in %q", out)
		}
		f, _ := strconv.ParseFloat(string(m[1]), 64)
		v = append(v, f)
	}
	return median(v), nil
}

// startTarget starts the process a KindAttach case traces and waits for
// its first line; it returns nil for other cases.
func startTarget(c Case, dir string) (*exec.Cmd, error) {
	if len(c.Target) == 0 {
		return nil, nil
	}
	var argv []string
	for _, a := range c.Target {
		argv = append(argv, strings.ReplaceAll(a, "DIR", dir))
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", argv[0], err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", argv[0], err)
	}
	if _, err := bufio.NewReader(out).ReadString('\n'); err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		return nil, fmt.Errorf("start %s: no line from it: %w", argv[0], err)
	}
	return cmd, nil
}

// measureAttach runs tool on a KindAttach case: the time until its
// "ready" line, a second of tracing, then the time from SIGINT to its
// exit, cut at exitBound. A tool cut there is killed and reaped in the
// background, so that the bench goes on while the kernel tears its
// probes down.
func measureAttach(cmd *exec.Cmd) (Run, error) {
	name := filepath.Base(cmd.Path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return Run{}, fmt.Errorf("start %s: %w", name, err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return Run{}, fmt.Errorf("start %s: %w", name, err)
	}
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if sc.Text() == "ready" {
				close(ready)
				break
			}
		}
		io.Copy(io.Discard, out)
	}()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	var r Run
	select {
	case <-ready:
		r.Value = time.Since(start).Seconds()
	case err := <-exited:
		return Run{}, fmt.Errorf("%s exited before it was ready: %v: %s", name, err, firstLine(stderr.String()))
	case <-time.After(5 * time.Minute):
		cmd.Process.Kill()
		return Run{}, fmt.Errorf("%s not ready after 5 minutes", name)
	}
	time.Sleep(time.Second)
	interrupted := time.Now()
	cmd.Process.Signal(os.Interrupt)
	select {
	case err := <-exited:
		r.Exit = time.Since(interrupted).Seconds()
		if err != nil {
			return Run{}, fmt.Errorf("%w: %s", err, firstLine(stderr.String()))
		}
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			r.MaxRSS = ru.Maxrss * 1024
		}
	case <-time.After(exitBound):
		r.Exit, r.Cut = exitBound.Seconds(), true
		cmd.Process.Kill()
	}
	r.Wall = time.Since(start)
	return r, nil
}

// measure runs tool on c once in dir and takes its measures; target is
// the process a KindAttach case traces.
func measure(tool, loop string, c Case, dir string, target *exec.Cmd) (Run, error) {
	out := filepath.Join(dir, "out.txt")
	defer os.Remove(out)
	capture := filepath.Join(dir, "out.cap")
	defer os.Remove(capture)
	bpftrace := filepath.Base(tool) == "bpftrace"
	var args []string
	for _, a := range c.Args {
		switch a {
		case "OUT":
			args = append(args, out)
		case "NATS":
			if bpftrace {
				args = append(args, "-o", out)
			} else {
				args = append(args, natsBus.args()...)
			}
		case "CAPTURE":
			if bpftrace {
				args = append(args, "-o", out)
			} else {
				args = append(args, "-w", capture)
			}
		case "DRYRUN":
			if bpftrace {
				args = append(args, "--emit-elf", filepath.Join(dir, "out.elf"))
			} else {
				args = append(args, "--dry-run")
			}
		case "PID":
			args = append(args, strconv.Itoa(target.Process.Pid))
		case "SCRIPT":
			script := filepath.Join(dir, c.Name+".bt")
			if err := os.WriteFile(script, []byte(strings.ReplaceAll(c.Script, "LOOP", loop)), 0o644); err != nil {
				return Run{}, fmt.Errorf("write script: %w", err)
			}
			args = append(args, script)
		default:
			args = append(args, strings.ReplaceAll(a, "LOOP", loop))
		}
	}
	if c.Kind == KindRegtest {
		return measureRegtest(tool, dir)
	}
	cmd := exec.Command(tool, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), c.Env...)
	if c.Kind == KindAttach {
		return measureAttach(cmd)
	}
	rssOut := filepath.Join(dir, "rss.txt")
	defer os.Remove(rssOut)
	cmd = exec.Command(rssHelper, append([]string{tool}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), append(c.Env, "RSS_OUT="+rssOut)...)
	var stdout lineFilter
	var stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	var watch *progWatch
	if c.Kind == KindHit {
		watch = watchPrograms(5 * time.Millisecond)
	}
	start := time.Now()
	err := cmd.Start()
	if err != nil {
		if watch != nil {
			watch.Stop()
		}
		return Run{}, fmt.Errorf("start %s: %w", filepath.Base(tool), err)
	}
	done := time.AfterFunc(5*time.Minute, func() { cmd.Process.Kill() })
	err = cmd.Wait()
	end := time.Now()
	done.Stop()
	var progNS float64
	if watch != nil {
		progNS, _ = watch.Stop()
	}
	if err != nil {
		return Run{}, fmt.Errorf("%w: %s", err, firstLine(stderr.String()))
	}
	r := Run{Wall: end.Sub(start), ProgNS: progNS}
	if r.MaxRSS, r.Wall, err = readReport(rssOut); err != nil {
		return Run{}, fmt.Errorf("%s: %w", filepath.Base(tool), err)
	}
	for _, m := range lostEvents.FindAllSubmatch(stdout.kept.Bytes(), -1) {
		n, _ := strconv.ParseInt(string(m[1]), 10, 64)
		r.Lost += n
	}
	for _, m := range lostEvents.FindAllSubmatch(stderr.Bytes(), -1) {
		n, _ := strconv.ParseInt(string(m[1]), 10, 64)
		r.Lost += n
	}
	if slices.Contains(c.Args, "CAPTURE") && !bpftrace {
		// Replaying is not part of the measure: the capture is done.
		if b, err := exec.Command(tool, "replay", "-o", out, capture).CombinedOutput(); err != nil {
			return Run{}, fmt.Errorf("replay capture: %w: %s", err, b)
		}
	}
	if slices.Contains(c.Args, "NATS") && !bpftrace {
		n, err := natsBus.delivered()
		if err != nil {
			return Run{}, err
		}
		stdout.printfLines += n
	}
	if slices.Contains(c.Args, "OUT") || slices.Contains(c.Args, "CAPTURE") || slices.Contains(c.Args, "NATS") && bpftrace {
		lines, lost, err := countFile(out)
		if err != nil {
			return Run{}, err
		}
		stdout.printfLines += lines
		if !slices.Contains(c.Args, "CAPTURE") || bpftrace {
			// Under -w gotrace reports them on stderr, counted above.
			r.Lost += lost
		}
	}
	switch c.Kind {
	case KindHit:
		m := nsPerIteration.FindSubmatch(stdout.kept.Bytes())
		if m == nil {
			return Run{}, fmt.Errorf("no ns_per_iteration line from the traced loop: %s", firstLine(stderr.String()))
		}
		r.Value, _ = strconv.ParseFloat(string(m[1]), 64)
	case KindPrintf, KindProbe:
		r.Value = float64(stdout.printfLines)
		if m := meanNS.FindSubmatch(stdout.kept.Bytes()); m != nil {
			if ns, _ := strconv.ParseFloat(string(m[1]), 64); ns > 0 {
				r.Rate = 1e9 / ns
			}
		}
		r.Loop = parseLoopCost(stdout.kept.Bytes())
	case KindPrintMap:
		m := doneNS.FindSubmatch(stdout.kept.Bytes())
		if m == nil {
			return Run{}, fmt.Errorf("no done line from the traced loop: %s", firstLine(stderr.String()))
		}
		ns, _ := strconv.ParseInt(string(m[1]), 10, 64)
		r.Value = end.Sub(time.Unix(0, ns)).Seconds()
		if keys := stdout.mapLines; keys != c.Keys {
			return Run{}, fmt.Errorf("printed %d map keys, want %d", keys, c.Keys)
		}
	case KindWall:
		r.Value = r.Wall.Seconds()
	}
	return r, nil
}

// lineFilter takes a tool's standard output line by line and keeps only
// what measure reads: the lines that are neither printf output nor map
// entries, which it counts. Keeping all of the printf case's half million
// lines would grow the bench's own memory, and a child process starts with
// its parent's resident set as its peak RSS (os/exec forks with vfork).
type lineFilter struct {
	kept                  bytes.Buffer
	partial               []byte
	printfLines, mapLines int
}

func (f *lineFilter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			f.partial = append(f.partial, p...)
			break
		}
		line := append(f.partial, p[:i+1]...)
		f.partial = f.partial[:0]
		p = p[i+1:]
		switch {
		case printfLine.Match(line):
			f.printfLines++
		case bytes.HasPrefix(line, []byte("@[")):
			f.mapLines++
		default:
			f.kept.Write(line)
		}
	}
	return n, nil
}

// countFile counts the burst's printf lines in a tool's -o file and the
// events its "Lost N events" lines report.
func countFile(name string) (lines int, lost int64, err error) {
	f, err := os.Open(name)
	if err != nil {
		return 0, 0, fmt.Errorf("read output: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if burstLine.Match(sc.Bytes()) {
			lines++
		} else if m := lostEvents.FindSubmatch(sc.Bytes()); m != nil {
			n, _ := strconv.ParseInt(string(m[1]), 10, 64)
			lost += n
		}
	}
	if err := sc.Err(); err != nil {
		return 0, 0, fmt.Errorf("read output: %w", err)
	}
	return lines, lost, nil
}

// firstLine returns the first line of s that is not bpftrace's RLIMIT
// warning, for error messages.
func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if l != "" && !strings.Contains(l, "RLIMIT_MEMLOCK") {
			return l
		}
	}
	return "(no output on stderr)"
}

// summarize takes the medians of runs; for KindHit the untraced loop's
// time per iteration is subtracted from the value.
func summarize(runs []Run, err error, k Kind, untraced float64) Stats {
	if err != nil {
		return Stats{Runs: len(runs), Err: err.Error()}
	}
	var wall, value, progNS, rate, exit, ready, fence []float64
	var rss, lost, messages []int64
	cut := 0
	for _, r := range runs {
		exit = append(exit, r.Exit)
		ready = append(ready, r.Ready)
		fence = append(fence, r.Fence)
		messages = append(messages, int64(r.Messages))
		if r.Cut {
			cut++
		}
		wall = append(wall, r.Wall.Seconds())
		progNS = append(progNS, r.ProgNS)
		rate = append(rate, r.Rate)
		value = append(value, r.Value)
		rss = append(rss, r.MaxRSS)
		lost = append(lost, r.Lost)
	}
	s := Stats{Runs: len(runs), Wall: median(wall), Value: median(value), MaxRSS: medianInt(rss), Lost: medianInt(lost), ProgNS: median(progNS), Rate: median(rate),
		Min: slices.Min(value), Max: slices.Max(value), Exit: median(exit), Cut: cut,
		Ready: median(ready), Fence: median(fence), Messages: medianInt(messages)}
	if k == KindHit {
		s.Value -= untraced
	}
	return s
}

// measureOf returns the number the time ratio is taken of: the value, or
// the wall time for KindWall.
func (s Stats) measureOf(k Kind) float64 {
	if k == KindWall {
		return s.Wall
	}
	return s.Value
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	v = slices.Clone(v)
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

func medianInt(v []int64) int64 {
	f := make([]float64, len(v))
	for i, x := range v {
		f[i] = float64(x)
	}
	return int64(median(f))
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// printResult prints one line as soon as a case is done, so a long run
// shows progress.
func printResult(w io.Writer, r Result) {
	fmt.Fprintf(w, "done %-16s bpftrace %s  gotrace %s\n", r.Case, brief(r.Bpftrace, r.Kind), brief(r.Gotrace, r.Kind))
}

func brief(s Stats, k Kind) string {
	if s.Err != "" {
		return "n/a: " + s.Err
	}
	b := formatMeasure(s.measureOf(k), k) + " " + mib(s.MaxRSS)
	if k == KindPrintf {
		b += fmt.Sprintf(" %.0f events/s, %.2f s, %d lost", s.Rate, s.Wall, s.Lost)
	}
	if k == KindAttach {
		b += ", exit " + exitCell(s)
	}
	if k == KindRegtest {
		b += fmt.Sprintf(" CPU, ready %.3f s, last message %.3f s, exit %.3f s, %d messages", s.Ready, s.Fence, s.Exit, s.Messages)
	}
	return b
}

// measureCell is a table's cell for a tool's measure: for printf, the
// median lines with the fewest and most of the runs.
func measureCell(s Stats, k Kind) string {
	switch k {
	case KindPrintf:
		return fmt.Sprintf("%.0f (%.0f-%.0f) lines", s.Value, s.Min, s.Max)
	case KindAttach:
		return fmt.Sprintf("ready %.3f s (%.3f-%.3f), exit %s", s.Value, s.Min, s.Max, exitCell(s))
	case KindRegtest:
		return fmt.Sprintf("CPU %.3f s (%.3f-%.3f), ready %.3f s, last message %.3f s, exit %.3f s", s.Value, s.Min, s.Max, s.Ready, s.Fence, s.Exit)
	}
	return formatMeasure(s.measureOf(k), k)
}

// formatMeasure prints a case's measure in its unit.
func formatMeasure(v float64, k Kind) string {
	switch k {
	case KindHit:
		return fmt.Sprintf("%.0f ns/hit", v)
	case KindPrintf:
		return fmt.Sprintf("%.0f lines", v)
	}
	return fmt.Sprintf("%.3f s", v)
}

// exitCell is a KindAttach case's median exit time, "> 20 s" when most
// runs were cut at exitBound.
func exitCell(s Stats) string {
	if s.Cut > s.Runs/2 {
		return fmt.Sprintf("> %.0f s (%d of %d runs)", exitBound.Seconds(), s.Cut, s.Runs)
	}
	return fmt.Sprintf("%.3f s", s.Exit)
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

// printTable prints the summary table.
func printTable(w io.Writer, results []Result) {
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "case\tbpftrace\tgotrace\tratio\ttarget\tbpftrace RSS\tgotrace RSS\tratio\ttarget\tlost (b/g)\t")
	for _, r := range results {
		cell := func(s Stats) (string, string) {
			if s.Err != "" {
				return "n/a", "n/a"
			}
			return measureCell(s, r.Kind), mib(s.MaxRSS)
		}
		bm, brss := cell(r.Bpftrace)
		gm, grss := cell(r.Gotrace)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d/%d\t\n", r.Case, bm, gm,
			ratioCell(r.TimeRatio), targetCell(r.TimeTarget), brss, grss,
			ratioCell(r.RSSRatio), targetCell(r.RSSTarget), r.Bpftrace.Lost, r.Gotrace.Lost)
	}
	tw.Flush()
	for _, r := range results {
		if r.Kind == KindHit && r.Untraced > 0 {
			fmt.Fprintf(w, "\nhit-* cases: ns a probe hit adds to the loop's %.1f ns/iteration untraced.\n", r.Untraced)
			break
		}
	}
	printAboveEmpty(w, results)
	for _, r := range results {
		for _, s := range []struct {
			tool string
			st   Stats
		}{{"bpftrace", r.Bpftrace}, {"gotrace", r.Gotrace}} {
			if s.st.Err != "" {
				fmt.Fprintf(w, "%s %s: n/a: %s\n", r.Case, s.tool, s.st.Err)
			}
		}
	}
}

// aboveEmptyTarget is the most a hit case's cost above the empty body may
// be, as a ratio of bpftrace's cost above its empty body.
const aboveEmptyTarget = 0.6

// printAboveEmpty prints, when hit-empty ran, what each other hit case
// costs above the empty body: in the loop's ns per iteration and in the
// eBPF program's own mean run time.
func printAboveEmpty(w io.Writer, results []Result) {
	i := slices.IndexFunc(results, func(r Result) bool { return r.Case == "hit-empty" })
	if i < 0 || results[i].Bpftrace.Err != "" || results[i].Gotrace.Err != "" {
		return
	}
	empty := results[i]
	fmt.Fprintf(w, "\nhit-* cases above hit-empty: loop ns per hit, and eBPF program ns per run (bpf_stats); empty body: loop %.0f/%.0f, program %.0f/%.0f ns (b/g)\n",
		empty.Bpftrace.Value, empty.Gotrace.Value, empty.Bpftrace.ProgNS, empty.Gotrace.ProgNS)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "case\tloop b\tloop g\tratio\tprog b\tprog g\tratio\ttarget\t")
	for _, r := range results {
		if r.Kind != KindHit || r.Case == empty.Case || r.Bpftrace.Err != "" || r.Gotrace.Err != "" {
			continue
		}
		lb, lg := r.Bpftrace.Value-empty.Bpftrace.Value, r.Gotrace.Value-empty.Gotrace.Value
		pb, pg := r.Bpftrace.ProgNS-empty.Bpftrace.ProgNS, r.Gotrace.ProgNS-empty.Gotrace.ProgNS
		fmt.Fprintf(tw, "%s\t%.0f\t%.0f\t%s\t%.0f\t%.0f\t%s\t%s\t\n", r.Case, lb, lg, ratioCell(ratio(lg, lb)),
			pb, pg, ratioCell(ratio(pg, pb)), targetCell(aboveEmptyTarget))
	}
	tw.Flush()
}

func ratioCell(r float64) string {
	if r == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2fx", r)
}

func targetCell(t float64) string {
	if t == 0 {
		return ""
	}
	return fmt.Sprintf("<=%.2fx", t)
}
