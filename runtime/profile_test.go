package runtime

import (
	"context"
	"regexp"
	"strconv"
	"testing"

	"github.com/gotrace/gotrace/internal/testenv"
	"github.com/gotrace/gotrace/runtime/attach"
)

// TestRunProfile samples every CPU with profile probes, by frequency and by
// period, and checks that the samples arrive in plausible numbers, under
// the probe's name, and that nothing is left attached.
func TestRunProfile(t *testing.T) {
	testenv.RequireRoot(t)
	cpus, err := attach.OnlineCPUs()
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		probe string
		// max is 1.5 times the samples 400 ms hold on all CPUs: the
		// probes are attached a little before the interval starts.
		max int
	}{
		{"profile:hz:200", 120 * len(cpus)},
		{"profile:ms:5", 120 * len(cpus)},
		{"profile:us:2500", 240 * len(cpus)},
	} {
		t.Run(tt.probe, func(t *testing.T) {
			out, stderr, err := runScript(t, context.Background(), tt.probe+` { @[probe] = count(); } interval:ms:400 { exit(); }`, Options{Quiet: true})
			if err != nil {
				t.Fatalf("%v\n%s", err, stderr)
			}
			m := regexp.MustCompile(`(?m)^@\[` + tt.probe + `\]: (\d+)$`).FindStringSubmatch(out)
			if m == nil {
				t.Fatalf("no samples of %s in the output:\n%s", tt.probe, out)
			}
			// A busy CPU takes them all; an idle one may take few.
			if n, _ := strconv.Atoi(m[1]); n < 10 || n > tt.max {
				t.Errorf("%d samples, want 10 to %d", n, tt.max)
			}
			checkNoBPFFiles(t)
		})
	}
}
