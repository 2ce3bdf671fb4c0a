package runtime

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	goruntime "runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gotrace/gotrace/internal/fixture"
	"github.com/gotrace/gotrace/internal/settings"
	"github.com/gotrace/gotrace/internal/testenv"
	"github.com/gotrace/gotrace/lang"
	"github.com/gotrace/gotrace/usdt"
)

// syncBuffer is an io.Writer safe for the tracer's goroutines that can
// tell when a string has appeared.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
	// watch is closed once the output contains want.
	want  string
	watch chan struct{}
}

func newSyncBuffer(want string) *syncBuffer {
	return &syncBuffer{want: want, watch: make(chan struct{})}
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n, err := b.buf.Write(p)
	if b.want != "" && strings.Contains(b.buf.String(), b.want) {
		close(b.watch)
		b.want = ""
	}
	return n, err
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// compileScript parses and checks src.
func compileScript(t *testing.T, src string) (*lang.Program, *lang.Info) {
	t.Helper()
	return checkScript(t, src, lang.Config{})
}

// checkScript parses src, resolves it and checks it with cfg, and returns
// it with what the checker recorded about it.
func checkScript(t *testing.T, src string, cfg lang.Config) (*lang.Program, *lang.Info) {
	t.Helper()
	p, err := lang.Parse("test.bt", src)
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	info, err := lang.Analyze(p, cfg, nil)
	if err != nil {
		t.Fatalf("check: %v", err)
	}
	return p, info
}

// runScript runs src to its end with opts (Out and Err are filled in) and
// returns what it printed.
func runScript(t *testing.T, ctx context.Context, src string, opts Options) (string, string, error) {
	t.Helper()
	p, info := checkScript(t, src, lang.Config{Params: opts.Params, Unsafe: opts.Unsafe, Child: opts.Command != "", Host: NewHost(opts.PID, opts.Command)})
	out, errOut := newSyncBuffer(""), newSyncBuffer("")
	opts.Out, opts.Err = out, errOut
	err := Run(ctx, p, info, opts)
	checkNoBPFFiles(t)
	return out.String(), errOut.String(), err
}

// checkNoBPFFiles fails t when this process still holds a BPF program,
// map or link, or a perf event (a uprobe), after Run returned.
func checkNoBPFFiles(t *testing.T) {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	for _, fd := range fds {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name()))
		if err != nil {
			continue
		}
		for _, kind := range []string{"bpf-map", "bpf-prog", "bpf_link", "perf_event", "bpf-link"} {
			if strings.Contains(target, kind) {
				t.Errorf("after Run, fd %s is still open: %s", fd.Name(), target)
			}
		}
	}
}

func TestRunBeginExit(t *testing.T) {
	testenv.RequireRoot(t)
	out, _, err := runScript(t, context.Background(), `BEGIN { printf("hello %d\n", 42); @x = 5; @c = count(); exit(); } END { printf("bye\n"); }`, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Attaching 2 probes...\nhello 42\nbye\n", "@c: 1\n", "@x: 5\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("output %q does not contain %q", out, want)
		}
	}
	if strings.Index(out, "@c: 1") > strings.Index(out, "@x: 5") {
		t.Errorf("maps not printed in name order:\n%s", out)
	}
}

// TestRunReadersWaitInPoller checks that the ring-buffer readers, while
// no record comes, wait in Go's poller ("IO wait") and not in a system
// call, where each kept a thread and its P until sysmon took the P back:
// with only as many Ps as CPUs, Run's goroutine then waited up to 10 ms
// at exit() (issue 24). Read from the goroutines' states, not timed.
func TestRunReadersWaitInPoller(t *testing.T) {
	testenv.RequireRoot(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var states []string
	attached := func() {
		defer cancel()
		deadline := time.Now().Add(time.Minute)
		for {
			states = readerStates()
			if len(states) == 2 && states[0] == "IO wait" && states[1] == "IO wait" {
				return
			}
			if time.Now().After(deadline) {
				return
			}
			goruntime.Gosched()
		}
	}
	if _, _, err := runScript(t, ctx, `interval:s:3600 { printf("never\n"); }`, Options{Attached: attached}); err != nil {
		t.Fatal(err)
	}
	if len(states) != 2 || states[0] != "IO wait" || states[1] != "IO wait" {
		t.Errorf("the readers' states while the rings stay empty = %q, want both \"IO wait\"", states)
	}
}

// readerStates returns the scheduling states of the goroutines reading a
// ring ("IO wait", "syscall", "runnable" ...), from a dump of every
// goroutine.
func readerStates() []string {
	buf := make([]byte, 1<<20)
	buf = buf[:goruntime.Stack(buf, true)]
	var states []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if !strings.Contains(g, "(*tracer).read(") {
			continue
		}
		head, _, _ := strings.Cut(g, "\n")
		_, state, _ := strings.Cut(head, "[")
		state, _, _ = strings.Cut(state, "]")
		state, _, _ = strings.Cut(state, ",")
		states = append(states, state)
	}
	return states
}

func TestRunQuiet(t *testing.T) {
	testenv.RequireRoot(t)
	out, _, err := runScript(t, context.Background(), `BEGIN { printf("only\n"); exit(); }`, Options{Quiet: true})
	if err != nil {
		t.Fatal(err)
	}
	// bpftrace 0.17 ends every trace with two newlines, maps or not.
	if out != "only\n\n\n" {
		t.Errorf("output %q, want only the printf and two newlines", out)
	}
}

// TestRunCommand traces the fixture started with -c: the probes are
// attached before it runs, so every semaphore-guarded event fires, and
// the trace ends when it exits.
func TestRunCommand(t *testing.T) {
	testenv.RequireRoot(t)
	bin := fixture.Private(t, "bitcoind")
	summary := filepath.Join(t.TempDir(), "summary")
	src := fmt.Sprintf(`
usdt:%[1]s:net:outbound_message { @out[str(arg3)] = count(); }
usdt:%[1]s:validation:block_connected { printf("block %%d\n", arg1); }
END { printf("end\n"); }`, bin)
	// sh execs the fixture in place, so the PID gotrace filters on stays
	// the same and the fixture's summary lands in a file.
	cmd := fmt.Sprintf(`sh -c 'exec %s --linger-ms 0 > %s'`, bin, summary)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, stderr, err := runScript(t, ctx, src, Options{Command: cmd})
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if ctx.Err() != nil {
		t.Fatal("the trace did not end when the command exited")
	}
	var blocks strings.Builder
	for h := 800000; h < 800006; h++ {
		fmt.Fprintf(&blocks, "block %d\n", h)
	}
	if !strings.Contains(out, "Attaching 3 probes...\n"+blocks.String()+"end\n") {
		t.Errorf("output:\n%s\nwant the 6 blocks in order, then end", out)
	}
	for _, want := range []string{"@out[ping]: 12\n", "@out[getdata]: 38\n", "@out[inv]: 32\n", "@out[headers]: 18\n", "@out[version]: 4\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("output:\n%s\ndoes not contain %q", out, want)
		}
	}
	b, err := os.ReadFile(summary)
	if err != nil {
		t.Fatal(err)
	}
	s, err := fixture.ParseSummary(string(b))
	if err != nil {
		t.Fatal(err)
	}
	if c := s.Probes["net:outbound_message"]; c.Fired != c.Attempted || c.Fired != 128 {
		t.Errorf("net:outbound_message attempted %d, fired %d: want 128 and 128", c.Attempted, c.Fired)
	}
	if c := s.Probes["net:inbound_message"]; c.Fired != 0 {
		t.Errorf("net:inbound_message fired %d times without a probe attached", c.Fired)
	}
}

// startFixture starts the fixture (or another program) bin with args and
// returns it and its standard output; it is killed when t ends.
func startFixture(t *testing.T, bin string, args ...string) (*exec.Cmd, *syncBuffer) {
	t.Helper()
	out := newSyncBuffer("")
	cmd := exec.Command(bin, args...)
	cmd.Stdout = out
	cmd.Stderr = out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	return cmd, out
}

// waitSummary waits for the fixture started by startFixture to exit and
// returns the summary it printed.
func waitSummary(t *testing.T, cmd *exec.Cmd, fout *syncBuffer) *fixture.Summary {
	t.Helper()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("fixture: %v\n%s", err, fout)
	}
	s, err := fixture.ParseSummary(fout.String())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestRunPIDExit traces a running fixture with -p until exit(): the
// fixture waits for every semaphore before it starts and checks after its
// run that gotrace's detach brought them all back to zero.
func TestRunPIDExit(t *testing.T) {
	testenv.RequireRoot(t)
	bin := fixture.Private(t, "bitcoind")
	cmd, fout := startFixture(t, bin, "--wait-attach", "all", "--wait-detach", "all", "--linger-ms", "0")
	src := fmt.Sprintf(`
usdt:%[1]s:net:* { @msgs[probe] = count(); }
usdt:%[1]s:validation:* ,usdt:%[1]s:mempool:*, usdt:%[1]s:coin_selection:* { @other = count(); }
usdt:%[1]s:utxocache:* { if (arg1 == 3) { printf("final flush\n"); exit(); } }`, bin)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, stderr, err := runScript(t, ctx, src, Options{PID: cmd.Process.Pid})
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	s := waitSummary(t, cmd, fout)
	if len(s.SemaEnd) == 0 {
		t.Fatalf("fixture reported no semaphores:\n%s", fout)
	}
	for probe, n := range s.SemaEnd {
		if n != 0 {
			t.Errorf("semaphore of %s is %d after gotrace ended", probe, n)
		}
	}
	if !strings.Contains(out, "final flush\n") {
		t.Errorf("output:\n%s\nmisses the final flush", out)
	}
	if c := s.Probes["net:outbound_message"]; c.Fired != 128 {
		t.Errorf("net:outbound_message fired %d times, want 128", c.Fired)
	}
}

// TestRunPIDSignal ends a -p trace the way SIGINT does (the context is
// cancelled) while the process keeps running: END runs, maps are printed,
// and the process's semaphores go back to zero.
func TestRunPIDSignal(t *testing.T) {
	testenv.RequireRoot(t)
	bin := fixture.Private(t, "bitcoind")
	cmd, fout := startFixture(t, bin, "--wait-attach", "net:inbound_message", "--wait-detach", "net:inbound_message", "--linger-ms", "0", "--rounds", "20", "--rate", "500")
	p, info := compileScript(t, fmt.Sprintf(`usdt:%s:net:inbound_message { @in = count(); @n = @n + 1; if (@n == 50) { printf("fifty\n"); } } END { printf("end\n"); }`, bin))
	out, errOut := newSyncBuffer("fifty\n"), newSyncBuffer("")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, p, info, Options{PID: cmd.Process.Pid, Out: out, Err: errOut}) }()
	select {
	case <-out.watch:
	case err := <-done:
		t.Fatalf("Run ended early: %v\n%s%s", err, out, errOut)
	case <-time.After(30 * time.Second):
		t.Fatalf("no 50 inbound messages in 30 s:\n%s%s", out, errOut)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	checkNoBPFFiles(t)
	// The fixture is still running: its semaphore must read zero now.
	probes, err := usdt.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	semaphores := 0
	for _, pr := range probes {
		if pr.Provider == "net" && pr.Name == "inbound_message" {
			sem := memAt(t, cmd.Process.Pid, bin, pr.Locations[0].SemaphoreOffset, 2, false)
			if v := binary.LittleEndian.Uint16(sem); v != 0 {
				t.Errorf("semaphore of net:inbound_message reads %d in the running fixture after Run", v)
			}
			semaphores++
		}
	}
	if semaphores != 1 {
		t.Errorf("found %d net:inbound_message probes in the fixture, want 1", semaphores)
	}
	if !strings.Contains(out.String(), "end\n") || !strings.Contains(out.String(), "@in: ") {
		t.Errorf("output %q lacks END's printf or the map", out)
	}
	s := waitSummary(t, cmd, fout)
	if n, ok := s.SemaEnd["net:inbound_message"]; !ok || n != 0 {
		t.Errorf("semaphore of net:inbound_message is %d (reported: %v) after gotrace ended", n, ok)
	}
	if c := s.Probes["net:inbound_message"]; c.Fired == 0 || c.Fired >= c.Attempted {
		t.Errorf("net:inbound_message fired %d of %d times: want some, not all", c.Fired, c.Attempted)
	}
}

// TestRunLostEvents fills a one-page ring buffer faster than it can be
// read: the records that did not fit are reported as "Lost N events", and
// the printed and lost records add up to all of them.
func TestRunLostEvents(t *testing.T) {
	testenv.RequireRoot(t)
	const n = 1000
	src := fmt.Sprintf(`BEGIN { $i = 0; while ($i < %d) { printf("record %%d of a ring buffer that is far too small\n", $i); $i++; } exit(); }`, n)
	out, _, err := runScript(t, context.Background(), src, Options{Values: settings.Values{PerfRBPages: 1}})
	if err != nil {
		t.Fatal(err)
	}
	printed := strings.Count(out, "record ")
	lost := 0
	for _, m := range regexp.MustCompile(`(?m)^Lost (\d+) events$`).FindAllStringSubmatch(out, -1) {
		k, _ := strconv.Atoi(m[1])
		lost += k
	}
	if lost == 0 || printed+lost != n {
		t.Errorf("%d records printed and %d reported lost, want some lost and %d in all\n%s", printed, lost, n, out)
	}
}

// TestRunMatchesBpftrace runs a script with every aggregation, print(),
// clear() and zero() on the fixture under gotrace and under bpftrace:
// the outputs must be the same, byte for byte, as text and as JSON.
func TestRunMatchesBpftrace(t *testing.T) {
	bpftrace := testenv.RequireBpftrace(t)
	bin := fixture.Private(t, "bitcoind")
	src := fmt.Sprintf(`
BEGIN { printf("start\n"); }
usdt:%[1]s:validation:block_connected {
  @dur_ms = hist(arg5 / 1000000);
  @lin = lhist(arg5 / 1000000, 0, 50, 10);
  @mn = min(arg5 / 1000000); @mx = max(arg5 / 1000000);
  @av = avg(arg2); @st = stats(arg2); @sm = sum(arg2);
  @height[arg1 %% 4] = sum(arg1);
}
usdt:%[1]s:mempool:added { @fees[arg1 %% 3] = sum(arg2); @z[1] = count(); }
usdt:%[1]s:coin_selection:selected_coins { print(@fees, 2); clear(@fees); zero(@z); printf("%%s\n", strftime("%%Y", nsecs)); }
END { printf("end\n"); }`, bin)
	// gotrace runs the fixture from a script, which execs it in place to
	// keep the PID, with its output thrown away; bpftrace 0.17 cannot (it
	// looks for the probes in the shell), so its output is filtered.
	wrapper := filepath.Join(t.TempDir(), "run.sh")
	if err := os.WriteFile(wrapper, []byte("exec "+bin+" --linger-ms 0 > /dev/null\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	command := "/bin/sh " + wrapper
	for _, format := range []string{"text", "json"} {
		t.Run(format, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			out, stderr, err := runScript(t, ctx, src, Options{Command: command, Format: format})
			if err != nil {
				t.Fatalf("%v\n%s", err, stderr)
			}
			b, err := exec.CommandContext(ctx, bpftrace, "-f", format, "-e", src, "-c", bin+" --linger-ms 0").Output()
			if err != nil {
				t.Fatalf("bpftrace: %v", err)
			}
			ref := fixtureLine.ReplaceAllString(string(b), "")
			if out != ref {
				t.Errorf("gotrace printed\n%s\nbpftrace printed\n%s", out, ref)
			}
		})
	}
}

// fixtureLine matches a line of the fixture's own output.
var fixtureLine = regexp.MustCompile(`(?m)^(READY|START|SUMMARY|probe|msg|peer|block|mempool|utxo|detach|END rc=).*\n`)

func TestRunInterval(t *testing.T) {
	testenv.RequireRoot(t)
	start := time.Now()
	out, _, err := runScript(t, context.Background(), `interval:ms:20 { @ticks = count(); if (@n++ == 4) { exit(); } }`, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 100*time.Millisecond {
		t.Errorf("5 ticks of 20 ms took %v", d)
	}
	if !strings.Contains(out, "@ticks: 5\n") {
		t.Errorf("output %q, want 5 ticks", out)
	}
}

// Interval programs of one period run in script order at each tick: the
// one after an exit() does not run (on tickers of their own, it printed in
// most runs; bpftrace never prints it).
func TestRunIntervalsInOrder(t *testing.T) {
	testenv.RequireRoot(t)
	for range 5 {
		out, _, err := runScript(t, context.Background(), `interval:ms:10 { printf("first\n"); exit(); } interval:ms:10 { printf("second\n"); }`, Options{Quiet: true})
		if err != nil {
			t.Fatal(err)
		}
		if out != "first\n\n\n" {
			t.Fatalf("output %q, want only the first interval's line", out)
		}
	}
}

// TestRunCountsLocations checks "Attaching N probes..." counts every
// location of a USDT probe, as bpftrace does: the dupsite fixture fires
// net:outbound_message from two sites that share one semaphore.
func TestRunCountsLocations(t *testing.T) {
	testenv.RequireRoot(t)
	bin := fixture.Private(t, "bitcoind-dupsite")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, stderr, err := runScript(t, ctx, fmt.Sprintf(`usdt:%s:net:outbound_message { @out = count(); } END { }`, bin), Options{Command: quietCommand(bin, "--linger-ms 0")})
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if !strings.HasPrefix(out, "Attaching 3 probes...\n") || !strings.Contains(out, "@out: 128\n") {
		t.Errorf("output %q, want 3 probes (2 sites and END) and 128 messages", out)
	}
}

// TestRunPIDAllObjects traces usdt::PROVIDER:NAME (no path) with -p: the
// probes are looked up in every object the process maps.
func TestRunPIDAllObjects(t *testing.T) {
	testenv.RequireRoot(t)
	bin := fixture.Private(t, "bitcoind")
	cmd, fout := startFixture(t, bin, "--wait-attach", "validation:block_connected", "--linger-ms", "0")
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(fout.String(), "WAIT") && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, stderr, err := runScript(t, ctx, `usdt::validation:block_connected { @blocks = count(); }`, Options{PID: cmd.Process.Pid})
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if !strings.Contains(out, "@blocks: 6\n") {
		t.Errorf("output %q, want 6 blocks", out)
	}
}

// quietCommand is a -c command that runs the fixture bin with args, its
// output thrown away, in the shell's own process (exec), so the PID that
// gotrace filters on stays the fixture's.
func quietCommand(bin, args string) string {
	return fmt.Sprintf("sh -c 'exec %s %s > /dev/null'", bin, args)
}

// TestRunRelativePath traces usdt:./bitcoind:... from the fixture's
// directory: the probe builtin names the file as the script does.
func TestRunRelativePath(t *testing.T) {
	testenv.RequireRoot(t)
	bin := fixture.Private(t, "bitcoind")
	t.Chdir(filepath.Dir(bin))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, stderr, err := runScript(t, ctx, `usdt:./bitcoind:net:outbound_message { @[probe] = count(); }`, Options{Command: quietCommand("./bitcoind", "--linger-ms 0")})
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if !strings.Contains(out, "@[usdt:./bitcoind:net:outbound_message]: 128\n") {
		t.Errorf("output %q, want the probe named usdt:./bitcoind:net:outbound_message", out)
	}
}

// TestRunUnsafeBuiltinsMatchBpftrace compares system(), cat() and time()
// with bpftrace's output, and cat()'s error for a missing file.
func TestRunUnsafeBuiltinsMatchBpftrace(t *testing.T) {
	bpftrace := testenv.RequireBpftrace(t)
	file := filepath.Join(t.TempDir(), "cat.txt")
	if err := os.WriteFile(file, []byte("no newline at the end"), 0o644); err != nil {
		t.Fatal(err)
	}
	src := fmt.Sprintf(`BEGIN { system("echo system %%d", 42); cat("%s"); printf("|\n"); cat("/no/such/file"); time("%%Y\n"); exit(); }`, file)
	out, stderr, err := runScript(t, context.Background(), src, Options{Unsafe: true})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bpftrace, "--unsafe", "-e", src)
	var refErr bytes.Buffer
	cmd.Stderr = &refErr
	ref, err := cmd.Output()
	if err != nil {
		t.Fatalf("bpftrace: %v", err)
	}
	if out != string(ref) {
		t.Errorf("gotrace printed %q, bpftrace %q", out, ref)
	}
	const catErr = "ERROR: failed to open file '/no/such/file': No such file or directory\n"
	if !strings.Contains(stderr, catErr) || !strings.Contains(refErr.String(), catErr) {
		t.Errorf("standard error of gotrace %q and of bpftrace %q, want both to hold %q", stderr, refErr.String(), catErr)
	}

	// cat() prints the first BPFTRACE_CAT_BYTES_MAX bytes (0.17's name;
	// max_cat_bytes in a config block).
	src = fmt.Sprintf(`BEGIN { cat("%s"); exit(); }`, file)
	out, stderr, err = runScript(t, context.Background(), src, Options{Unsafe: true, Values: settings.Values{CatBytesMax: 5}})
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	cmd = exec.Command(bpftrace, "-e", src)
	cmd.Env = append(os.Environ(), "BPFTRACE_CAT_BYTES_MAX=5")
	if ref, err = cmd.Output(); err != nil {
		t.Fatalf("bpftrace: %v", err)
	}
	if want := "Attaching 1 probe...\nno ne\n\n"; out != want || string(ref) != want {
		t.Errorf("with 5 bytes of cat(), gotrace printed %q, bpftrace %q, want %q", out, ref, want)
	}
}

// TestRunWeight checks the readers' raised weight: a command system()
// runs (from an interval probe, once every thread is favoured) has the
// nice value the test process had, not the readers', and the process has
// its own back after the run.
func TestRunWeight(t *testing.T) {
	testenv.RequireRoot(t)
	// getpriority returns 20 - nice.
	prio, err := unix.Getpriority(unix.PRIO_PROCESS, 0)
	if err != nil {
		t.Fatal(err)
	}
	out, stderr, err := runScript(t, context.Background(), `interval:ms:100 { system("cut -d' ' -f19 /proc/self/stat"); exit(); }`, Options{Unsafe: true})
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if want := fmt.Sprintf("probe...\n%d\n", 20-prio); !strings.Contains(out, want) {
		t.Errorf("system() printed %q, want its nice value %q", out, want)
	}
	if after, err := unix.Getpriority(unix.PRIO_PROCESS, 0); err != nil || after != prio {
		t.Errorf("nice value after the run %d (%v), want %d", 20-after, err, 20-prio)
	}
}

func TestRunCommandErrors(t *testing.T) {
	testenv.RequireRoot(t)
	for _, tc := range []struct {
		command, want string
	}{
		{"/no/such/command", "failed to fork child: path '/no/such/command' does not exist or is not executable"},
		{"echo 'unterminated", "unterminated single quote"},
	} {
		_, _, err := runScript(t, context.Background(), `BEGIN { exit(); }`, Options{Command: tc.command})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("-c %q: error %v, want %q", tc.command, err, tc.want)
		}
	}
}

// TestRunCommandNotStartedOnError checks that a -c command does not run
// when the trace fails before its probes are attached.
func TestRunCommandNotStartedOnError(t *testing.T) {
	testenv.RequireRoot(t)
	marker := filepath.Join(t.TempDir(), "ran")
	_, _, err := runScript(t, context.Background(), `usdt:/no/such/binary:p:n { }`, Options{Command: "touch " + marker})
	if err == nil {
		t.Fatal("a probe on a missing file gave no error")
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the command ran although the trace failed")
	}
}

// A BEGIN that calls exit() ends the trace before the -c command runs,
// as in bpftrace; END still runs.
func TestRunCommandNotStartedAfterBeginExit(t *testing.T) {
	testenv.RequireRoot(t)
	marker := filepath.Join(t.TempDir(), "ran")
	out, _, err := runScript(t, context.Background(), `BEGIN { printf("begin\n"); exit(); } END { printf("end\n"); }`, Options{Command: "touch " + marker, Quiet: true})
	if err != nil {
		t.Fatal(err)
	}
	if out != "begin\nend\n\n\n" {
		t.Errorf("output %q, want BEGIN's and END's lines", out)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the command ran although BEGIN called exit()")
	}
}
