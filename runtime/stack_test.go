package runtime

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gotrace/gotrace/internal/fixture"
	"github.com/gotrace/gotrace/internal/testenv"
)

// TestRunUstack traces the -O0 fixture, which keeps frame pointers: a
// ustack printed while it runs names the whole call chain down to libc,
// and the map key's stack, printed after it exited, is addresses.
func TestRunUstack(t *testing.T) {
	testenv.RequireRoot(t)
	bin := fixture.Private(t, "bitcoind-O0")
	src := fmt.Sprintf(`usdt:%s:validation:block_connected { printf("%%s|\n", ustack); @[ustack(2)] = count(); }`, bin)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, stderr, err := runScript(t, ctx, src, Options{Command: quietCommand(bin, "--rounds 1 --blocks 2 --linger-ms 500"), Quiet: true})
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	stack, maps, ok := strings.Cut(out, "|\n")
	if !ok {
		t.Fatalf("output %q has no stack", out)
	}
	var names []string
	for _, line := range strings.Split(strings.Trim(stack, "\n"), "\n") {
		name, ok := strings.CutPrefix(line, "        ")
		sym, _, _ := strings.Cut(name, "+")
		if !ok || !strings.Contains(name, "+") {
			t.Errorf("frame %q is not an indented sym+off", line)
		}
		names = append(names, sym)
	}
	want := []string{"emit_validation_block_connected", "tp_block_connected", "CChainState::ConnectBlock(CBlock const&, BlockValidationState&, CBlockIndex*, CCoinsViewCache&, CChainParams const&, bool)", "phase_blocks", "run", "main"}
	if len(names) < len(want) || strings.Join(names[:len(want)], ";") != strings.Join(want, ";") {
		t.Errorf("frames %q, want them to start with %q", names, want)
	}
	if !strings.Contains(maps, "@[\n    0x") || !strings.Contains(maps, "\n]: 2\n") {
		t.Errorf("maps %q: want one stack of addresses counted twice", maps)
	}
}

// TestRunUstackMatchesBpftrace runs ustack in printf, print, map keys and
// values under gotrace and bpftrace, as text and as JSON: the outputs
// must be the same once addresses (ASLR) and the fixture's path are
// masked.
func TestRunUstackMatchesBpftrace(t *testing.T) {
	bpftrace := testenv.RequireBpftrace(t)
	bin := fixture.Private(t, "bitcoind-O0")
	src := fmt.Sprintf(`usdt:%s:validation:block_connected {
  printf("%%s|\n", ustack);
  printf("%%s|\n", ustack(perf, 3));
  print(ustack(1));
  @[ustack] = count();
  @p[ustack(perf, 2), 7] = count();
  @v = ustack(3);
}`, bin)
	args := "--rounds 1 --blocks 2 --linger-ms 1000 --output /dev/null"
	mask := regexp.MustCompile(`[0-9a-f]{12}|` + regexp.QuoteMeta(bin))
	for _, format := range []string{"text", "json"} {
		t.Run(format, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			out, stderr, err := runScript(t, ctx, src, Options{Command: bin + " " + args, Format: format})
			if err != nil {
				t.Fatalf("%v\n%s", err, stderr)
			}
			ref, err := exec.CommandContext(ctx, bpftrace, "-f", format, "-e", src, "-c", bin+" "+args).Output()
			if err != nil {
				t.Fatalf("bpftrace: %v", err)
			}
			got, want := mask.ReplaceAllString(out, "X"), mask.ReplaceAllString(string(ref), "X")
			if got != want {
				t.Errorf("gotrace printed\n%s\nbpftrace printed\n%s", got, want)
			}
			if !strings.Contains(got, "tp_block_connected+") {
				t.Errorf("no named frame in\n%s", got)
			}
		})
	}
}

// TestRunKstack samples kernel stacks with profile, as bpftrace's
// tutorial does, while this process makes system calls, and checks the
// keys have bpftrace's shape: a frame a line, "sym+off", indented four
// spaces, or in perf mode a tab, the address and "sym+off".
func TestRunKstack(t *testing.T) {
	testenv.RequireRoot(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for ctx.Err() == nil {
			_, _ = os.ReadFile("/proc/self/status")
		}
	}()
	out, stderr, err := runScript(t, context.Background(), `profile:hz:499 { @[kstack(3)] = count(); @p[kstack(perf, 2)] = count(); } interval:ms:500 { exit(); }`, Options{Quiet: true})
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	frame := `[\w.$]+\+\d+`
	for _, re := range []string{
		`(?m)^@\[\n(    ` + frame + `\n){1,3}\]: \d+$`,
		`(?m)^@p\[\n(\tffffffff[0-9a-f]{8} ` + frame + `\n){1,2}\]: \d+$`,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("no key matches %s in:\n%s", re, out)
		}
	}
}
