package regtest_test

import (
	"strings"
	"testing"
)

// TestUstackEhFrame traces the real bitcoind (a Release build, without
// frame pointers) with issue 26's script under stack_unwind=eh_frame: the
// stacks of validation:block_connected, printed after bitcoin-cli stop has
// ended the node, go from the block's connection through the RPC that
// generated it down to the thread's start, where the frame-pointer walk
// stops after three frames (TestUstackAfterStop). The three blocks come
// through one call chain, so they are one key counted 3 (an RPC per
// block would not be: generatetodescriptor mines them in one call).
func TestUstackEhFrame(t *testing.T) {
	stacks := blockStacks(t, `config = { stack_unwind = eh_frame } usdt:%s:validation:block_connected { @[ustack] = count(); printf("block\n"); }`)
	total := 0
	for stack, count := range stacks {
		total += count
		t.Logf("%d x%s", count, stack)
		// Stable names along the chain, in order: the probe's function,
		// the validation of the new block, the mining RPC, the RPC
		// server's worker and the thread's start.
		rest := stack
		for _, w := range []string{
			"Chainstate::ConnectBlock(", "Chainstate::ConnectTip(", "Chainstate::ActivateBestChainStep(",
			"Chainstate::ActivateBestChain(", "ChainstateManager::ProcessNewBlock(", "generateBlocks(",
			"HTTPWorkQueue", "start_thread",
		} {
			i := strings.Index(rest, w)
			if i < 0 {
				t.Errorf("stack %q: no frame %s... after the ones before it", stack, w)
				break
			}
			rest = rest[i:]
		}
	}
	if total != 3 || len(stacks) != 1 {
		t.Errorf("the stacks count %d blocks in %d keys, want 3 in 1: %v", total, len(stacks), stacks)
	}
}
