package regtest_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/gotrace/gotrace/internal/regtest"
	"github.com/gotrace/gotrace/internal/testenv"
)

// TestUstackAfterStop traces the real bitcoind (a Release build, without
// frame pointers) with issue 26's script: the stacks of
// validation:block_connected in a map, printed after bitcoin-cli stop has
// ended the node. gotrace names them with the mappings it kept from while
// the node ran, where bpftrace 0.17 prints addresses. The printf of one
// frame makes the reader see the validation thread while it runs.
func TestUstackAfterStop(t *testing.T) {
	stacks := blockStacks(t, `usdt:%s:validation:block_connected { @[ustack(6)] = count(); printf("block %%s", ustack(1)); }`)
	total := 0
	for stack, count := range stacks {
		total += count
		t.Logf("%d x%s", count, stack)
		frames := strings.Split(strings.Trim(stack, "\n"), "\n")
		// The first three frames are right with or without frame
		// pointers: the probe's function, and the callers whose frames
		// the walk reads through rbp before it goes astray.
		want := []string{"Chainstate::ConnectBlock(", "Chainstate::ConnectTip(", "Chainstate::ActivateBestChainStep("}
		if len(frames) < len(want) {
			t.Errorf("stack %q: fewer than %d frames", stack, len(want))
			continue
		}
		for i, w := range want {
			if !strings.HasPrefix(strings.TrimSpace(frames[i]), w) {
				t.Errorf("frame %d is %q, want %s...", i, frames[i], w)
			}
		}
	}
	if total != 3 {
		t.Errorf("the stacks count %d blocks, want 3: %v", total, stacks)
	}
}

// blockStacks runs bitcoind under a trace of script (a format of the
// path of bitcoind) whose probe prints a line starting with "block" at
// each block connected, mines three blocks, stops the node and returns
// the map @ printed after it ended, stacks to counts.
func blockStacks(t *testing.T, script string) map[string]int {
	t.Helper()
	testenv.RequireRoot(t)
	n := regtest.New(t, regtest.Options{})
	tr := regtest.StartTrace(t, gotrace(t), "", "-q", "-c", strings.Join(n.Command(), " "), "-e", fmt.Sprintf(script, n.Bitcoind))
	n.WaitReady(t)
	n.CLI(t, "generatetodescriptor", "3", "raw(51)")
	tr.Await(t, "three block_connected", func(lines []string) bool { return len(prefixed(lines, "block")) >= 3 })
	n.Stop(t)
	tr.Wait(t)
	var stacks map[string]int
	if err := json.Unmarshal(tr.Map("@"), &stacks); err != nil {
		t.Fatalf("map @: %v (%s)", err, tr.Map("@"))
	}
	return stacks
}
