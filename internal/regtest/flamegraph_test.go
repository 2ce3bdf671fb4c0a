package regtest_test

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gotrace/gotrace/internal/regtest"
	"github.com/gotrace/gotrace/internal/testenv"
	"github.com/gotrace/gotrace/runtime/flamegraph"
)

// reindexBlocks is the length of the chain TestFlameGraphReindex
// reindexes: enough blocks for a drawing, few enough to mine quickly.
const reindexBlocks = 120

// stoppedChain starts a node, mines blocks on it (to an anyone-can-spend
// script) and stops it, for a test that reindexes that chain.
func stoppedChain(t *testing.T, blocks int) *regtest.Node {
	t.Helper()
	n := regtest.New(t, regtest.Options{})
	n.Start(t)
	n.WaitReady(t)
	start := time.Now()
	n.CLI(t, "generatetodescriptor", strconv.Itoa(blocks), "raw(51)")
	t.Logf("mined %d blocks in %v", blocks, time.Since(start).Round(time.Millisecond))
	n.Stop(t)
	return n
}

// runToEnd runs gotrace with args (and env added to its environment)
// until it ends, within regtest.Deadline, and returns what it printed.
func runToEnd(t *testing.T, env []string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), regtest.Deadline)
	defer cancel()
	cmd := exec.CommandContext(ctx, gotrace(t), args...)
	cmd.Env = append(cmd.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("gotrace %s: the run did not end within %v:\n%s", strings.Join(args, " "), regtest.Deadline, out)
	}
	if err != nil {
		t.Fatalf("gotrace %s: %v:\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// TestFlameGraphReindex draws a flame graph of the real bitcoind while it
// reindexes its chain state (-reindex-chainstate, stopping at the tip):
// the stacks of validation:block_connected by thread, which fires once
// per block in Chainstate::ConnectBlock, so the drawing holds every block
// under the thread that connects them. docs/flamegraph.md shows the
// profile of such a run (profile:hz:99).
func TestFlameGraphReindex(t *testing.T) {
	testenv.RequireRoot(t)
	n := stoppedChain(t, reindexBlocks)
	drawing := filepath.Join(t.TempDir(), "reindex.svg")
	command := strings.Join(n.Command("-reindex-chainstate", fmt.Sprintf("-stopatheight=%d", reindexBlocks)), " ")
	// The stacks are only map keys, printed after the node exited: their
	// frames are named from the mappings the kernel's records told while
	// it ran (runtime/symbols' Track).
	src := fmt.Sprintf(`usdt:%s:validation:block_connected { @[comm, ustack] = count(); }`, n.Bitcoind)
	runToEnd(t, nil, "flamegraph", "-q", "-o", drawing, "-c", command, "-e", src)
	stacks, err := flamegraph.ReadFile(drawing)
	if err != nil {
		t.Fatal(err)
	}
	var total uint64
	for _, s := range stacks {
		total += s.Weight
		t.Logf("%d %s", s.Weight, strings.Join(s.Frames, ";"))
		connect := slices.ContainsFunc(s.Frames, func(f string) bool { return strings.HasPrefix(f, "Chainstate::ConnectBlock(") })
		if !connect || s.Frames[0] == "" {
			t.Errorf("stack %v: want a thread, then Chainstate::ConnectBlock", s.Frames)
		}
	}
	if total != reindexBlocks {
		t.Errorf("%d blocks drawn, want %d", total, reindexBlocks)
	}
}

// profileReindexTries bounds how many reindexes TestProfileReindexEhFrame
// samples before it gives up: a sample lands in Chainstate::ConnectTip by
// chance, so the test waits for that event over whole reindexes rather
// than for a length of time.
const profileReindexTries = 10

// TestProfileReindexEhFrame samples the real bitcoind (a Release build,
// no frame pointers) with profile while it reindexes its chain state,
// its user stacks walked by the BPF program with .eh_frame rules
// (stack_unwind = eh_frame), and waits for a sample taken under
// Chainstate::ConnectTip (which calls ConnectBlock; blocks with only a
// coinbase spend more of it reading and flushing than connecting): that
// stack must name the chain from the thread function through
// Chainstate::ActivateBestChain, as docs/flamegraph.md's drawing shows.
// The frame-pointer walk gives two or three frames there. Below the
// thread function (libstdc++'s routine, libc's start_thread) the walk
// needs the libraries' tables, which a reindex this short can outrun
// (issue 26's note), so those frames are logged, not required.
func TestProfileReindexEhFrame(t *testing.T) {
	testenv.RequireRoot(t)
	n := stoppedChain(t, reindexBlocks)
	command := strings.Join(n.Command("-reindex-chainstate", fmt.Sprintf("-stopatheight=%d", reindexBlocks), "-printtoconsole=0"), " ")
	src := `profile:hz:2999 /pid == cpid/ { @[comm, ustack] = count(); }`
	for try := 1; try <= profileReindexTries; try++ {
		out := runToEnd(t, []string{"BPFTRACE_STACK_UNWIND=eh_frame"}, "-q", "-f", "folded", "-c", command, "-e", src)
		for _, line := range strings.Split(string(out), "\n") {
			// The count follows the last space; C++ names hold spaces.
			i := strings.LastIndex(line, " ")
			if i < 0 {
				continue
			}
			stack := line[:i]
			frames := strings.Split(stack, ";")
			if !slices.ContainsFunc(frames, hasPrefix("Chainstate::ConnectTip(")) {
				continue
			}
			for _, want := range []string{"b-initload", "util::TraceThread(", "node::ImportBlocks(", "Chainstate::ActivateBestChain(", "Chainstate::ActivateBestChainStep(", "Chainstate::ConnectTip("} {
				if !slices.ContainsFunc(frames, hasPrefix(want)) {
					t.Errorf("a sample under ConnectTip lacks %s: %s", want, stack)
				}
			}
			t.Logf("reindex %d: %s", try, stack)
			return
		}
		t.Logf("reindex %d: no sample under Chainstate::ConnectTip yet", try)
	}
	t.Fatalf("%d reindexes sampled at 2999 Hz and none under Chainstate::ConnectTip", profileReindexTries)
}

// hasPrefix is strings.HasPrefix with the prefix bound, for slices'
// ContainsFunc.
func hasPrefix(prefix string) func(string) bool {
	return func(s string) bool { return strings.HasPrefix(s, prefix) }
}
