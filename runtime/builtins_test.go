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
)

// TestRunCpid checks that cpid is the PID of the -c command: the pid of
// the fixture in its own probe, and the same value in BEGIN.
func TestRunCpid(t *testing.T) {
	testenv.RequireRoot(t)
	bin := fixture.Private(t, "bitcoind")
	src := fmt.Sprintf(`
BEGIN { printf("begin %%d\n", cpid); }
usdt:%s:validation:block_connected { printf("probe %%d %%d\n", cpid, pid); exit(); }`, bin)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, stderr, err := runScript(t, ctx, src, Options{Command: quietCommand(bin, "--linger-ms 0"), Quiet: true})
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	var begin, cpid, pid int
	if _, err := fmt.Sscanf(out, "begin %d\nprobe %d %d\n", &begin, &cpid, &pid); err != nil {
		t.Fatalf("output %q: %v", out, err)
	}
	if cpid != pid || begin != pid || pid <= 1 {
		t.Errorf("output %q: want cpid in BEGIN and in the probe equal to the fixture's pid", out)
	}
	if strings.Count(out, "probe ") != 1 {
		t.Errorf("output %q: want one probe line", out)
	}
}

// TestRunSignal checks signal(): the -c fixture gets the signal in the
// probe that sends it. SIGTERM makes it stop early and say so in its
// summary; SIGKILL kills it before it writes one. Either way the trace
// ends with the command.
func TestRunSignal(t *testing.T) {
	testenv.RequireRoot(t)
	bin := fixture.Private(t, "bitcoind")
	for _, tc := range []struct {
		sig     string
		summary bool
	}{
		{`15`, true},
		{`"SIGTERM"`, true},
		{`"KILL"`, false},
	} {
		t.Run(tc.sig, func(t *testing.T) {
			summary := filepath.Join(t.TempDir(), "summary")
			src := fmt.Sprintf(`usdt:%s:validation:block_connected { printf("block %%d\n", arg1); signal(%s); }`, bin, tc.sig)
			cmd := fmt.Sprintf(`sh -c 'exec %s --linger-ms 0 > %s'`, bin, summary)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			out, stderr, err := runScript(t, ctx, src, Options{Command: cmd, Quiet: true, Unsafe: true})
			if err != nil {
				t.Fatalf("%v\n%s", err, stderr)
			}
			if ctx.Err() != nil {
				t.Fatal("the trace did not end when the command died")
			}
			// The two blank lines end every text trace, as in bpftrace.
			if out != "block 800000\n\n\n" {
				t.Errorf("output %q, want only the first block", out)
			}
			b, err := os.ReadFile(summary)
			if err != nil {
				t.Fatal(err)
			}
			s, err := fixture.ParseSummary(string(b))
			if !tc.summary {
				if err == nil {
					t.Errorf("the fixture printed a whole summary after SIGKILL:\n%s", b)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !s.Aborted {
				t.Errorf("the fixture was not aborted by the signal:\n%s", b)
			}
		})
	}
}
