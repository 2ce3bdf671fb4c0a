package main

import (
	"bytes"
	"context"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	goruntime "runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/gotrace/gotrace/internal/testenv"
)

// heavyInits are packages whose initialisers must not run in gotrace: what
// they set up only --metrics or the manual page's generator needed, and
// every start of gotrace paid for it (issue 24). A prefix ending in "/"
// names a module's every package.
var heavyInits = []string{
	"github.com/prometheus/",           // client_golang's registry and collectors
	"google.golang.org/protobuf/",      // the registry of every message type
	"github.com/russross/blackfriday/", // markdown tables: 214 KB, 762 allocations
	"github.com/cpuguy83/go-md2man/",
	"github.com/spf13/cobra/doc",
	"go.yaml.in/yaml/",
	"github.com/cilium/ebpf/rlimit", // creates a BPF map to probe the kernel
	"expvar",
	"runtime/metrics",
	// --metrics' HTTP server, TLS and web configuration run in the
	// gotrace-metrics process: in gotrace they cost 2.2 MiB of peak RSS
	// and 35 initialisers (net/http alone), 4.9 MiB and 72 with
	// exporter-toolkit.
	"net/http",
	"crypto/tls",
	"crypto/x509",
	"golang.org/x/net/",
	"golang.org/x/crypto/",
	"log/slog",
	"html/template",
	// lang's scanner used participle's lexer package for its token and
	// position types only: its initialiser compiled a regular expression
	// (0.27-0.35 ms), and it linked text/scanner.
	"github.com/alecthomas/participle/",
	"text/scanner",
}

// Bounds on what every initialiser together allocates, and gotrace's own
// packages among them, in bytes and allocations rather than time, which
// the machine's load changes. When heavyInits still ran, the total was
// 652 KB in 3,654 allocations; without them, 133 KB in 825 (lang's parser
// tables 14 KB of it); with lang's and ptregs' tables as data, 90 KB in
// 564, 4.5 KB of it gotrace's own. Most of what is left is other modules'
// (encoding/xml's entity table, linked by cilium/ebpf's test utilities,
// 18.8 KB; demangle's 12 KB; cilium/ebpf/features' 11 KB; unicode's
// 11 KB for regexp).
const (
	maxInitBytes    = 100 << 10
	maxInitAllocs   = 650
	maxOwnInitBytes = 8 << 10
)

// initLine is one line of GODEBUG=inittrace=1.
var initLine = regexp.MustCompile(`^init (\S+) @[0-9.]+ ms, [0-9.]+ ms clock, (\d+) bytes, (\d+) allocs$`)

// TestStartupInit runs the built gotrace with GODEBUG=inittrace=1 and
// fails when the initialiser of a heavy dependency runs or the
// initialisers allocate more than the bounds. Go runs every linked
// package's initialiser whatever the command, so --version shows the ones
// a plain script pays for.
func TestStartupInit(t *testing.T) {
	bin := buildGotrace(t)
	cmd := exec.Command(bin, "--version")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if out, err := cmd.Output(); err != nil || !strings.HasPrefix(string(out), "gotrace ") {
		t.Fatalf("gotrace --version: %v, printed %q\n%s", err, out, stderr.String())
	}
	var inits, bytesTotal, allocsTotal, ownBytes int
	for line := range strings.Lines(stderr.String()) {
		m := initLine.FindStringSubmatch(strings.TrimSuffix(line, "\n"))
		if m == nil {
			continue
		}
		inits++
		pkg := m[1]
		n, _ := strconv.Atoi(m[2])
		allocs, _ := strconv.Atoi(m[3])
		bytesTotal += n
		allocsTotal += allocs
		if strings.HasPrefix(pkg, "github.com/gotrace/gotrace/") || pkg == "main" {
			ownBytes += n
		}
		for _, heavy := range heavyInits {
			if pkg == heavy || strings.HasSuffix(heavy, "/") && strings.HasPrefix(pkg, heavy) || strings.HasPrefix(pkg, heavy+"/") {
				t.Errorf("the initialiser of %s runs at every start of gotrace (%s bytes, %s allocations): keep the package out of the binary", pkg, m[2], m[3])
			}
		}
	}
	if inits == 0 {
		t.Fatalf("no initialiser in GODEBUG=inittrace=1's output:\n%s", stderr.String())
	}
	t.Logf("%d initialisers: %d bytes in %d allocations, %d bytes of them gotrace's own", inits, bytesTotal, allocsTotal, ownBytes)
	if bytesTotal > maxInitBytes || allocsTotal > maxInitAllocs {
		t.Errorf("the initialisers allocate %d bytes in %d allocations, over %d bytes or %d allocations: GODEBUG=inittrace=1 gotrace --version says which", bytesTotal, allocsTotal, maxInitBytes, maxInitAllocs)
	}
	if ownBytes > maxOwnInitBytes {
		t.Errorf("gotrace's own initialisers allocate %d bytes, over %d: build big tables when first used (sync.OnceValue) or as arrays of constants", ownBytes, maxOwnInitBytes)
	}
}

// startupBPF bounds the bpf() commands of one BEGIN { exit(); }: the
// trace's five maps (events and control rings, counters, start time, exit
// flag) and cilium/ebpf's feature probes (two maps; a program each for
// object names, bpf_probe_read_kernel and test runs) beside BEGIN's own
// program. No BTF: a program without callbacks is loaded without line
// info, which cost a BTF object and seven BTF feature probes. Each is a
// system call and a kernel object that every start pays for (issue 24).
var startupBPF = map[string]int{
	"BPF_MAP_CREATE": 7,
	"BPF_PROG_LOAD":  4,
	"BPF_BTF_LOAD":   0,
}

// startupFiles are the only files one BEGIN { exit(); } may open, each
// with how often at most and who opens it: a file read at every start
// costs its system calls and page faults whatever the script (issue 24).
var startupFiles = map[string]struct {
	times int
	who   string
}{
	"/sys/kernel/mm/transparent_hugepage/hpage_pmd_size": {1, "Go's runtime"},
	"/proc/self/cgroup":                    {1, "Go's runtime (GOMAXPROCS from the CPU quota)"},
	"/proc/self/mountinfo":                 {2, "Go's runtime (the CPU quota) and cilium/ebpf (bpffs tokens)"},
	"/sys/fs/cgroup/cpu/cpu.cfs_quota_us":  {1, "Go's runtime"},
	"/sys/fs/cgroup/cpu/cpu.cfs_period_us": {1, "Go's runtime"},
	"/sys/fs/cgroup/cpu.max":               {1, "Go's runtime, cgroup v2"},
	"/proc/self/fd":                        {1, "load's file limit (reserveFiles)"},
	"/sys/devices/system/cpu/possible":     {1, "cilium/ebpf"},
	// Not /proc/self/task: the readers' weight (proc.Favour) is raised
	// only for a trace that goes on after BEGIN, and not given back at
	// the end, as gotrace exits (Options.LastTrace).
}

// Bounds on what gotrace's set-up allocates for a command line without
// help or a subcommand (--version): the root command and its flags, not
// cobra's tree of subcommands (addCommandTree), 17.5 KB in 104
// allocations, where building the tree too took 65 KB in 300.
const (
	maxSetupBytes  = 32 << 10
	maxSetupAllocs = 200
)

// TestStartupSetup runs gotrace --version in the test's process and fails
// when its set-up allocates more than maxSetupBytes or maxSetupAllocs: a
// regression such as the subcommands built again at every start.
func TestStartupSetup(t *testing.T) {
	// The first run pays for what is done once per process.
	run([]string{"--version"}, io.Discard, io.Discard)
	var bytes, allocs uint64 = math.MaxUint64, math.MaxUint64
	// The least of three, as another goroutine of the test binary may
	// allocate meanwhile.
	for range 3 {
		var before, after goruntime.MemStats
		goruntime.ReadMemStats(&before)
		if code := run([]string{"--version"}, io.Discard, io.Discard); code != 0 {
			t.Fatalf("gotrace --version: exit %d", code)
		}
		goruntime.ReadMemStats(&after)
		bytes = min(bytes, after.TotalAlloc-before.TotalAlloc)
		allocs = min(allocs, after.Mallocs-before.Mallocs)
	}
	t.Logf("gotrace --version allocates %d bytes in %d allocations", bytes, allocs)
	if bytes > maxSetupBytes || allocs > maxSetupAllocs {
		t.Errorf("gotrace --version allocates %d bytes in %d allocations, over %d bytes or %d: does every start build what only help or a subcommand uses (addCommandTree)?", bytes, allocs, maxSetupBytes, maxSetupAllocs)
	}
}

// bpfCmd and openPath pick a bpf() command and an opened path out of
// strace's lines.
var (
	bpfCmd   = regexp.MustCompile(`\bbpf\((BPF_[A-Z_]+)`)
	openPath = regexp.MustCompile(`\bopenat\([^,]+, "([^"]+)"`)
)

// TestStartupSyscalls runs BEGIN { exit(); } under strace and fails when
// it creates more BPF objects than startupBPF allows, opens a file that
// startupFiles does not name or raises the readers' weight. Counted, not timed: a feature probe or a
// file read added to every start would otherwise only show as a slower
// start on a quiet machine.
func TestStartupSyscalls(t *testing.T) {
	testenv.RequireRoot(t)
	straceTool := testenv.RequireTool(t, "strace")
	bin := buildStaticGotrace(t)
	log := filepath.Join(t.TempDir(), "strace.log")
	cmd := exec.Command(straceTool, "-f", "-qq", "-o", log, "-e", "trace=bpf,openat,setpriority", bin, "-e", "BEGIN { exit(); }")
	if out, err := cmd.CombinedOutput(); err != nil {
		testenv.Unavailable(t, "strace gotrace -e 'BEGIN { exit(); }': %v\n%s", err, out)
	}
	trace, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	opened := map[string]int{}
	weights := 0
	for line := range strings.Lines(string(trace)) {
		if m := bpfCmd.FindStringSubmatch(line); m != nil {
			counts[m[1]]++
		}
		if strings.Contains(line, "setpriority(") {
			weights++
		}
		if m := openPath.FindStringSubmatch(line); m != nil {
			opened[m[1]]++
		}
	}
	t.Logf("bpf commands %v; files opened %v", counts, opened)
	if counts["BPF_PROG_LOAD"] == 0 {
		t.Fatalf("no BPF_PROG_LOAD in strace's log: did the trace run?\n%s", trace)
	}
	for cmd, limit := range startupBPF {
		if counts[cmd] > limit {
			t.Errorf("BEGIN { exit(); } makes %d %s calls, over %d: a new feature probe or map at every start?", counts[cmd], cmd, limit)
		}
	}
	if weights > 0 {
		t.Errorf("BEGIN { exit(); } makes %d setpriority calls: the readers' weight is for a trace that goes on after BEGIN (startReaders)", weights)
	}
	for path, n := range opened {
		allowed, ok := startupFiles[path]
		switch {
		case !ok:
			t.Errorf("BEGIN { exit(); } opens %s (%d times), which no start needed: read it only for the scripts that use it, or name it in startupFiles with why", path, n)
		case n > allowed.times:
			t.Errorf("BEGIN { exit(); } opens %s %d times, over %d (%s)", path, n, allowed.times, allowed.who)
		}
	}
}

// TestSignalContext checks that the signals signalContext catches on a
// goroutine of its own (so that parsing the command line overlaps the
// catching) are caught once signalsCaught returns: SIGHUP then cancels
// the context instead of ending the process.
func TestSignalContext(t *testing.T) {
	ctx, stop := signalContext(true)
	defer stop()
	signalsCaught(ctx)
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	<-ctx.Done()
	if cause := context.Cause(ctx); cause != context.Canceled {
		t.Errorf("SIGHUP ended the context with %v, want %v", cause, context.Canceled)
	}
	// Without signalContext there is nothing to wait for.
	signalsCaught(context.Background())
}
