package regtest_test

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gotrace/gotrace/internal/regtest"
	"github.com/gotrace/gotrace/internal/testenv"
	"github.com/gotrace/gotrace/runtime/flamegraph"
)

// reindexBlocks is the length of the chain TestFlameGraphReindex
// reindexes: enough blocks for a drawing, few enough to mine quickly.
const reindexBlocks = 120

// TestFlameGraphReindex draws a flame graph of the real bitcoind while it
// reindexes its chain state (-reindex-chainstate, stopping at the tip):
// the stacks of validation:block_connected by thread, which fires once
// per block in Chainstate::ConnectBlock, so the drawing holds every block
// under the thread that connects them. docs/flamegraph.md shows the
// profile of such a run (profile:hz:99).
func TestFlameGraphReindex(t *testing.T) {
	testenv.RequireRoot(t)
	n := regtest.New(t, regtest.Options{})
	n.Start(t)
	n.WaitReady(t)
	n.CLI(t, "generatetodescriptor", fmt.Sprint(reindexBlocks), "raw(51)")
	n.Stop(t)

	drawing := filepath.Join(t.TempDir(), "reindex.svg")
	command := strings.Join(n.Command("-reindex-chainstate", fmt.Sprintf("-stopatheight=%d", reindexBlocks)), " ")
	// The stacks are only map keys, printed after the node exited: their
	// frames are named from the mappings the kernel's records told while
	// it ran (runtime/symbols' Track).
	src := fmt.Sprintf(`usdt:%s:validation:block_connected { @[comm, ustack] = count(); }`, n.Bitcoind)
	ctx, cancel := context.WithTimeout(context.Background(), regtest.Deadline)
	defer cancel()
	cmd := exec.CommandContext(ctx, gotrace(t), "flamegraph", "-q", "-o", drawing, "-c", command, "-e", src)
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("gotrace flamegraph: the reindex did not end within %v:\n%s", regtest.Deadline, out)
	}
	if err != nil {
		t.Fatalf("gotrace flamegraph: %v:\n%s", err, out)
	}
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
