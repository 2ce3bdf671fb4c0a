package main

import (
	"context"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gotrace/gotrace/internal/fixture"
	"github.com/gotrace/gotrace/internal/testenv"
	"github.com/gotrace/gotrace/runtime/flamegraph"
)

// drawDeadline bounds a drawing test's trace: the fixture fires its
// probes within seconds, even on a loaded machine.
const drawDeadline = 3 * time.Minute

// fixtureCommand runs the fixture until its third block is connected,
// then lingers until the trace (which exits at that block) stops it: the
// stacks are printed while it lives, so their frames have names.
const fixtureCommand = "./bitcoind --rounds 1 --blocks 3 --linger-ms 600000 --wait-attach block_connected --output fixture.out"

// blockStacks counts the stacks of validation:block_connected and ends
// the trace at the third.
const blockStacks = `usdt:./bitcoind:validation:block_connected { @[ustack] = count(); @n++; if (@n == 3) { exit(); } }`

// runGotrace runs gotrace with args in dir and returns its standard
// output, failing t on an error or after drawDeadline.
func runGotrace(t *testing.T, gotrace, dir string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), drawDeadline)
	defer cancel()
	cmd := exec.CommandContext(ctx, gotrace, args...)
	cmd.Dir = dir
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if ctx.Err() != nil {
		t.Fatalf("gotrace %s: no end after %v\n%s", strings.Join(args, " "), drawDeadline, stderr.String())
	}
	if err != nil {
		t.Fatalf("gotrace %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}

// readDrawing reads the stacks back from a flame graph file.
func readDrawing(t *testing.T, path string) []flamegraph.Stack {
	t.Helper()
	stacks, err := flamegraph.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return stacks
}

// TestFlameGraphFixture draws the stacks of the -O0 fixture's
// block_connected probe live (SVG) and from a capture (HTML): one stack
// of weight 3 from main to the probe's function, the same in both, and
// the trace's other output printed as text.
func TestFlameGraphFixture(t *testing.T) {
	testenv.RequireRoot(t)
	dir := filepath.Dir(fixture.Private(t, "bitcoind-O0"))
	gotrace := gotraceCommand(t)

	out := runGotrace(t, gotrace, dir, "flamegraph", "-o", "live.svg", "-c", fixtureCommand, "-e", blockStacks)
	if !strings.Contains(out, "@n: 3\n") {
		t.Errorf("the trace's text output lacks @n:\n%s", out)
	}
	live := readDrawing(t, filepath.Join(dir, "live.svg"))
	if len(live) != 1 {
		t.Fatalf("stacks %v, want one", live)
	}
	frames := live[0].Frames
	if live[0].Weight != 3 || !slices.Contains(frames, "main") || frames[len(frames)-1] != "emit_validation_block_connected" {
		t.Errorf("stack %v, want main ... emit_validation_block_connected with weight 3", live[0])
	}

	runGotrace(t, gotrace, dir, "-w", "blocks.gtc", "-c", fixtureCommand, "-e", blockStacks)
	runGotrace(t, gotrace, dir, "flamegraph", "-o", "replayed.html", "blocks.gtc")
	replayed := readDrawing(t, filepath.Join(dir, "replayed.html"))
	if !slices.EqualFunc(live, replayed, func(a, b flamegraph.Stack) bool {
		return a.Weight == b.Weight && slices.Equal(a.Frames, b.Frames)
	}) {
		t.Errorf("the capture's flame graph has %v, the live one %v", replayed, live)
	}
}
