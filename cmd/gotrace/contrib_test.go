package main

// Bitcoin Core's own contrib/tracing bpftrace scripts on a real regtest
// node, under bpftrace 0.17 and gotrace at once.

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gotrace/gotrace/internal/regtest"
	"github.com/gotrace/gotrace/internal/testenv"
)

// contribScript is one of Bitcoin Core's contrib/tracing bpftrace scripts
// and how TestContribScripts compares the two tools' outputs of it.
type contribScript struct {
	name string
	// args are the script's positional parameters.
	args []string
	// ready matches the line BEGIN prints, which both tools print once
	// every probe is attached.
	ready string
	// drop matches lines left out of the comparison, mask parts of lines
	// replaced by <masked>; each says why where it is set.
	drop, mask []*regexp.Regexp
	// expect are lines gotrace's output must have, each at least once:
	// the workload's events.
	expect []string
}

// contribScripts are the four bpftrace scripts of Bitcoin Core v29.2's
// contrib/tracing, with what contribWorkload makes them print.
var contribScripts = []contribScript{
	{
		name: "connectblock_benchmark",
		// From height 2 to contribHeight, logging blocks that take more than 0 ms
		// to connect. The script exits by itself when the last block is
		// connected.
		args:  []string{"2", strconv.Itoa(contribHeight), "0"},
		ready: `^ConnectBlock benchmark between height 2 and \d+ inclusive$`,
		// The BENCH lines sum what was connected in each second of the
		// tool's own interval timer, which starts when the tool attaches:
		// two tools split the same blocks into different seconds.
		drop: []*regexp.Regexp{regexp.MustCompile(`^BENCH `)},
		// "Took N ms" subtracts two nsecs each tool reads in its own
		// program at the same two events, microseconds apart, and
		// divides by 1e9 (the script prints seconds as "ms"): a sum that
		// crosses a whole second in one tool and not the other would
		// differ by one.
		mask: []*regexp.Regexp{regexp.MustCompile(`^Took \d+ ms`)},
		expect: []string{
			`^Starting Connect Block Benchmark between height 2 and \d+\.$`,
			`^Took \d+ ms to connect the blocks between height 2 and \d+\.$`,
			`^@durations: $`,
		},
	},
	{
		name:  "log_p2p_connections",
		ready: `^Logging opened, closed, misbehaving, and evicted P2P connections$`,
		expect: []string{
			`^OUTBOUND conn to 127\.0\.0\.1:\d+: id=\d+, type=manual, network=0, total=1$`,
			`^INBOUND conn from 127\.0\.0\.1:\d+: id=\d+, type=inbound, network=0, total=\d+$`,
			// A header of a block it invalidated, from a peer that sends
			// new blocks as compact blocks or as headers.
			`^MISBEHAVING conn id=\d+, message='invalid header (received|via cmpctblock)'$`,
			`^EVICTED conn to 127\.0\.0\.1:\d+: id=\d+, type=inbound, network=0, established=\d+$`,
			`^CLOSED conn to 127\.0\.0\.1:\d+: id=\d+, type=manual, network=0, established=\d+$`,
		},
	},
	{
		name:  "log_p2p_traffic",
		ready: `^Logging P2P traffic$`,
		expect: []string{
			`^outbound 'version' msg to peer \d+ \(manual, 127\.0\.0\.1:\d+\) with 102 bytes$`,
			`^inbound 'version' msg from peer \d+ \(inbound, 127\.0\.0\.1:\d+\) with 102 bytes$`,
			`^inbound 'block' msg from peer \d+ \(manual, 127\.0\.0\.1:\d+\) with \d+ bytes$`,
		},
	},
	{
		name:  "log_utxos",
		ready: `^OP +Outpoint +Value +Height +Coinbase$`,
		expect: []string{
			`^Added   [0-9a-f]{64}:0 +5000000000 +1 Yes$`,
			`^Spent   [0-9a-f]{64}:0 +5000000000 +\d+ Yes$`,
		},
	},
}

// contribHeight is the height of the workload's last block.
const contribHeight = 104

// contribDir returns Bitcoin Core's contrib/tracing directory of the
// shared material (regtest.Dir: ../shared/bitcoin-core beside the
// repository).
func contribDir(t *testing.T) string {
	t.Helper()
	core, err := regtest.Dir()
	if err != nil {
		testenv.Unavailable(t, "Bitcoin Core: %v", err)
	}
	dir := filepath.Join(core, "contrib", "tracing")
	testenv.RequireFile(t, dir)
	return dir
}

// pointedScript copies the script at path into a temporary file with its
// probes pointed at bitcoind: Bitcoin Core's contrib scripts name
// ./build/bin/bitcoind, the project's scripts ./bitcoind, both relative
// to where the tracer runs.
func pointedScript(t *testing.T, path, probePath, bitcoind string) string {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	prefix := "usdt:" + probePath + ":"
	if !strings.Contains(string(src), prefix) {
		t.Fatalf("%s names no probe %s...", path, prefix)
	}
	script := filepath.Join(t.TempDir(), filepath.Base(path))
	if err := os.WriteFile(script, []byte(strings.ReplaceAll(string(src), prefix, "usdt:"+bitcoind+":")), 0o644); err != nil {
		t.Fatal(err)
	}
	return script
}

// TestContribScripts runs the bpftrace scripts of Bitcoin Core's
// contrib/tracing, read from ../shared/bitcoin-core/contrib/tracing with
// only the binary's path changed, under bpftrace 0.17 and under gotrace.
// All eight runs trace the same regtest node at once (-p), through one
// workload (contribWorkload), so that both tools see the very same
// events: no peer id, port or hash differs between them, and only what
// each tool's own clock adds needs a mask. bpftrace 0.17 reads per-CPU
// perf buffers, whose lines from two CPUs may interleave in another order
// than gotrace's single ring buffer: the outputs are compared as sets of
// lines (with their counts).
func TestContribScripts(t *testing.T) {
	bpftrace := testenv.RequireBpftrace(t)
	gotrace := buildGotrace(t)
	dir := contribDir(t)
	miner, node := minerNode(t), startNode(t, "maxconnections=40")
	type runs struct{ bpftrace, gotrace *attachedRun }
	started := make([]runs, len(contribScripts))
	for i, s := range contribScripts {
		script := pointedScript(t, filepath.Join(dir, s.name+".bt"), "./build/bin/bitcoind", node.Bitcoind)
		started[i] = runs{
			bpftrace: startAttached(t, bpftrace, node.PID(), script, s.args...),
			gotrace:  startAttached(t, gotrace, node.PID(), script, s.args...),
		}
	}
	for i, s := range contribScripts {
		ready := regexp.MustCompile("(?m)" + s.ready)
		started[i].bpftrace.waitFor(t, ready)
		started[i].gotrace.waitFor(t, ready)
	}
	connections := started[slices.IndexFunc(contribScripts, func(s contribScript) bool { return s.name == "log_p2p_connections" })]
	contribWorkload(t, miner, node, func(re *regexp.Regexp) {
		connections.bpftrace.waitFor(t, re)
		connections.gotrace.waitFor(t, re)
	})
	// A traced process that exits ends both tools' -p runs: every event
	// has fired by then, and each tool prints what its buffers hold.
	node.Stop(t)
	for i, s := range contribScripts {
		t.Run(s.name, func(t *testing.T) {
			want := started[i].bpftrace.wait(t)
			got := started[i].gotrace.wait(t)
			for _, e := range s.expect {
				if !regexp.MustCompile("(?m)" + e).MatchString(got) {
					t.Errorf("gotrace printed no line matching %s", e)
				}
			}
			wantLines, gotLines := s.normalize(want), s.normalize(got)
			order := "in the same order"
			if !slices.Equal(wantLines, gotLines) {
				order = "in another order"
			}
			slices.Sort(wantLines)
			slices.Sort(gotLines)
			if !slices.Equal(wantLines, gotLines) {
				t.Errorf("%s", lineDiff("lines", wantLines, gotLines))
			} else {
				t.Logf("%d lines, the same in both, %s", len(wantLines), order)
			}
		})
	}
}

// normalize drops and masks out's lines as the script says.
func (s contribScript) normalize(out string) []string {
	var lines []string
	for _, line := range strings.Split(out, "\n") {
		if slices.ContainsFunc(s.drop, func(re *regexp.Regexp) bool { return re.MatchString(line) }) {
			continue
		}
		for _, re := range s.mask {
			line = re.ReplaceAllString(line, "<masked>")
		}
		lines = append(lines, line)
	}
	return lines
}

// contribWorkload drives the node through what the four scripts trace:
// it syncs 101 blocks from the miner (messages, block_connected, UTXO
// adds), takes an inbound connection from it, gets one of its
// transactions and the block that confirms it (UTXO spends), sees two
// headers on a block it invalidated (misbehaving, both connections),
// reconsiders it (to contribHeight) and evicts inbound connections of
// sockets that say nothing. waitConnection waits until both tools'
// log_p2p_connections runs print a line that matches.
func contribWorkload(t *testing.T, miner, node *regtest.Node, waitConnection func(*regexp.Regexp)) {
	t.Helper()
	node.Connect(t, miner)
	waitHeight(t, node, minerBlocks)
	miner.Connect(t, node)
	waitConnection(regexp.MustCompile(`(?m)^INBOUND conn from`))

	txid := miner.SendToAddress(t, miner.NewAddress(t), "1")
	waitMempool(t, node, txid)
	hash := miner.Generate(t, 1)[0]
	waitHeight(t, node, minerBlocks+1)

	node.CLI(t, "invalidateblock", hash)
	miner.Generate(t, 1)
	waitConnection(regexp.MustCompile(`(?m)^MISBEHAVING conn id=\d+, message='invalid header `))
	// The node forgot the header it refused: the next block's
	// announcement makes it ask for both.
	node.CLI(t, "reconsiderblock", hash)
	miner.Generate(t, 1)
	waitHeight(t, node, contribHeight)

	// maxconnections=40 leaves 29 inbound slots. Eviction protects up
	// to 20 peers by network group, ping time, transactions and blocks
	// relayed, and half of the rest by uptime; 36 silent sockets fill
	// the slots and make the node evict one for each newcomer.
	var socks []net.Conn
	t.Cleanup(func() {
		for _, c := range socks {
			c.Close()
		}
	})
	for range 36 {
		c, err := net.DialTimeout("tcp", node.Addr(), 10*time.Second)
		if err != nil {
			t.Fatalf("connect to the node: %v", err)
		}
		socks = append(socks, c)
	}
	waitConnection(regexp.MustCompile(`(?m)^EVICTED conn to `))
}

// minerBlocks is how many blocks minerNode mines: 101 make the first
// coinbase spendable.
const minerBlocks = 101

// startNode starts a regtest node with bitcoin.conf lines args and waits
// for its RPC.
func startNode(t *testing.T, args ...string) *regtest.Node {
	t.Helper()
	n := regtest.New(t, regtest.Options{Args: args})
	n.Start(t)
	n.WaitReady(t)
	return n
}

// minerNode starts a node with a wallet and minerBlocks blocks.
func minerNode(t *testing.T) *regtest.Node {
	t.Helper()
	n := startNode(t)
	n.CreateWallet(t)
	n.Generate(t, minerBlocks)
	return n
}

// waitHeight waits until the node's chain is height blocks long.
func waitHeight(t *testing.T, n *regtest.Node, height int) {
	t.Helper()
	waitRPC(t, fmt.Sprintf("height %d", height), func() bool { return n.CLI(t, "getblockcount") == strconv.Itoa(height) })
}

// waitMempool waits until the node's mempool holds txid.
func waitMempool(t *testing.T, n *regtest.Node, txid string) {
	t.Helper()
	waitRPC(t, "transaction "+txid+" in the mempool", func() bool {
		_, err := n.CLIErr("getmempoolentry", txid)
		return err == nil
	})
}

// waitRPC asks done, an RPC of a node, until it holds, or fails t after
// regtest.Deadline.
func waitRPC(t *testing.T, what string, done func() bool) {
	t.Helper()
	for deadline := time.Now().Add(regtest.Deadline); !done(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no %s after %v", what, regtest.Deadline)
		}
	}
}

// attachedRun is a tool tracing a running process (-p), its standard
// output going to a file.
type attachedRun struct {
	name string
	out  string
	done chan error
}

// attachedDeadline bounds every wait for a tracer: to attach, to print a
// line, to exit after its target.
const attachedDeadline = 90 * time.Second

// startAttached starts tool on script with -p pid and the script's
// arguments; the run is killed at the test's end if it still runs.
func startAttached(t *testing.T, tool string, pid int, script string, args ...string) *attachedRun {
	t.Helper()
	r := &attachedRun{name: filepath.Base(tool) + " " + filepath.Base(script),
		out: filepath.Join(t.TempDir(), "out"), done: make(chan error, 1)}
	f, err := os.Create(r.out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	argv := append([]string{"-p", strconv.Itoa(pid), script}, args...)
	if len(args) > 0 {
		// Positional parameters after "--", so that a negative one is
		// no flag to either tool.
		argv = append([]string{"-p", strconv.Itoa(pid), script, "--"}, args...)
	}
	cmd := exec.Command(tool, argv...)
	cmd.Stdout = f
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", r.name, err)
	}
	go func() {
		err := cmd.Wait()
		if err != nil {
			err = fmt.Errorf("%w: %s", err, stderr.String())
		}
		r.done <- err
	}()
	t.Cleanup(func() { cmd.Process.Kill() })
	return r
}

// read returns what the run printed so far.
func (r *attachedRun) read() string {
	b, _ := os.ReadFile(r.out)
	return string(b)
}

// waitFor waits until the run's output matches re.
func (r *attachedRun) waitFor(t *testing.T, re *regexp.Regexp) {
	t.Helper()
	r.waitUntil(t, "a line that matches "+re.String(), re.MatchString)
}

// waitUntil waits until done holds for the run's output; what says what
// it waits for.
func (r *attachedRun) waitUntil(t *testing.T, what string, done func(out string) bool) {
	t.Helper()
	for deadline := time.Now().Add(attachedDeadline); !done(r.read()); time.Sleep(20 * time.Millisecond) {
		select {
		case err := <-r.done:
			r.done <- err
			t.Fatalf("%s exited (%v) before printing %s:\n%s", r.name, err, what, r.read())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s printed no %s in %v:\n%s", r.name, what, attachedDeadline, r.read())
		}
	}
}

// wait waits for the run to end by itself (its script's exit(), or its
// target's) and returns its output; an error exit fails t.
func (r *attachedRun) wait(t *testing.T) string {
	t.Helper()
	select {
	case err := <-r.done:
		r.done <- err
		if err != nil {
			t.Fatalf("%s: %v", r.name, err)
		}
	case <-time.After(attachedDeadline):
		t.Fatalf("%s still runs %v after its target stopped", r.name, attachedDeadline)
	}
	return r.read()
}
