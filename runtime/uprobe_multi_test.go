package runtime

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gotrace/gotrace/internal/fixture"
	"github.com/gotrace/gotrace/internal/testenv"
	"github.com/gotrace/gotrace/usdt"
)

// uprobeModes are the two ways of attaching usdt and uprobe programs,
// each tested: uprobe_multi links where the kernel has them, and the
// perf-event uprobes of older kernels.
var uprobeModes = []struct {
	name    string
	disable bool
	// verbose is what -v says of the mode.
	verbose string
}{
	{"uprobe_multi", false, "with one uprobe_multi link"},
	{"perf_event", true, "uprobes: one perf-event uprobe per location (uprobe_multi disabled)"},
}

// TestUprobeModesLocations counts every hit of a USDT probe with two
// locations (the dupsite fixture: one semaphore, each location with its
// own argument operands read through its cookie) and of a wildcard
// uprobe over two functions.
func TestUprobeModesLocations(t *testing.T) {
	testenv.RequireRoot(t)
	bin := fixture.Private(t, "bitcoind-dupsite")
	for _, mode := range uprobeModes {
		t.Run(mode.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			// The uprobes go to the build without semaphores, where the
			// fixture calls its probe functions unguarded: in the others
			// a uprobe at a USDT location's address (these functions
			// start with their probe) cannot have another semaphore than
			// the USDT probe's, and the kernel refuses it.
			usdtSrc := fmt.Sprintf(`usdt:%s:net:outbound_message { @out = count(); @types[str(arg3)] = count(); }`, bin)
			out, stderr, err := runScript(t, ctx, usdtSrc, Options{Command: quietCommand(bin, "--linger-ms 0"), NoUprobeMulti: mode.disable, Verbose: true})
			if err != nil {
				t.Fatalf("%v\n%s", err, stderr)
			}
			for _, want := range []string{"Attaching 2 probes...\n", "@out: 128\n", "@types[ping]: 12\n", "@types[getdata]: 38\n"} {
				if !strings.Contains(out, want) {
					t.Errorf("output\n%s\nlacks %q", out, want)
				}
			}
			nosem := fixture.Build(t, "bitcoind-nosem")
			uprobeSrc := fmt.Sprintf(`uprobe:%s:emit_net_*bound_message { @sites[func] = count(); }`, nosem)
			uout, ustderr, err := runScript(t, ctx, uprobeSrc, Options{Command: quietCommand(nosem, "--linger-ms 0"), NoUprobeMulti: mode.disable})
			if err != nil {
				t.Fatalf("%v\n%s", err, ustderr)
			}
			for _, want := range []string{"Attaching 2 probes...\n", "@sites[emit_net_outbound_message]: 128\n", "@sites[emit_net_inbound_message]: "} {
				if !strings.Contains(uout, want) {
					t.Errorf("output\n%s\nlacks %q", uout, want)
				}
			}
			if !strings.Contains(stderr, mode.verbose) {
				t.Errorf("-v output\n%s\nlacks %q", stderr, mode.verbose)
			}
		})
	}
}

// TestUprobeModesPID traces one of two processes of the same binary with
// -p: only that one gets breakpoints and is counted, and its semaphores
// are raised while traced and back to zero after.
func TestUprobeModesPID(t *testing.T) {
	testenv.RequireRoot(t)
	bin := fixture.Private(t, "bitcoind-nosem")
	probes, err := usdt.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	var site uint64
	for _, p := range probes {
		if p.Provider == "net" && p.Name == "outbound_message" {
			site = p.Locations[0].Offset
		}
	}
	if site == 0 {
		t.Fatal("no net:outbound_message in the fixture")
	}
	for _, mode := range uprobeModes {
		t.Run(mode.name, func(t *testing.T) {
			start := filepath.Join(t.TempDir(), "start")
			traced, tout := startFixture(t, bin, "--wait-file", start, "--wait-timeout-ms", "90000", "--linger-ms", "0")
			other, oout := startFixture(t, bin, "--wait-file", start, "--wait-timeout-ms", "90000", "--linger-ms", "0")
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			// Release both once every probe is attached (a breakpoint in
			// the text comes before a perf-event uprobe's program does).
			attached := func() {
				if b, err := readMem(traced.Process.Pid, bin, site, 1, true); err != nil || b[0] != 0xcc {
					t.Errorf("the traced process has no breakpoint (%v)", err)
				}
				if b, err := readMem(other.Process.Pid, bin, site, 1, true); err != nil || b[0] == 0xcc {
					t.Errorf("the untraced process has a breakpoint too (%v)", err)
				}
				os.WriteFile(start, nil, 0o644)
			}
			src := fmt.Sprintf(`usdt:%s:net:outbound_message { @out = count(); }`, bin)
			out, stderr, err := runScript(t, ctx, src, Options{PID: traced.Process.Pid, NoUprobeMulti: mode.disable, Attached: attached})
			if err != nil {
				t.Fatalf("%v\n%s", err, stderr)
			}
			waitSummary(t, traced, tout)
			waitSummary(t, other, oout)
			if !strings.Contains(out, "@out: 128\n") {
				t.Errorf("output\n%s\nwant the traced process's 128 messages alone", out)
			}
		})
	}
}
