package plan

import (
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/gotrace/gotrace/internal/fixture"
	"github.com/gotrace/gotrace/internal/settings"
	"github.com/gotrace/gotrace/lang"
	"github.com/gotrace/gotrace/runtime/proc"
	"github.com/gotrace/gotrace/usdt"
)

// makeIn makes the plan of the script src for a run on in, with a
// usdt.Files closed when the test ends.
func makeIn(t *testing.T, src string, in Input) (*Plan, error) {
	t.Helper()
	p, info := analyzed(t, src)
	files := &usdt.Files{}
	t.Cleanup(func() { files.Close() })
	in.Files = files
	return Make(p, info, in)
}

// TestMissingProbePolicy checks what an attach point that matches
// nothing does to the plan: a pattern that matches nothing is bpftrace's
// "No probes to attach"; one probe or function misspelt is a positioned
// error with the closest name as a hint; next to a probe that exists it
// is an error by default, a warning with MissingWarn and nothing with
// MissingIgnore.
func TestMissingProbePolicy(t *testing.T) {
	bin := fixture.Build(t, "bitcoind")
	misspelt := fmt.Sprintf(`usdt:%s:net:inbound_mesage, BEGIN { exit(); }`, bin)
	for _, tc := range []struct {
		name, src string
		policy    settings.MissingProbes
		// msg and hint are the one error's, "" for none; warning is
		// what is written to Warnings.
		msg, hint, warning string
	}{
		{"pattern", fmt.Sprintf(`usdt:%s:net:no_such_* { exit(); }`, bin), settings.MissingError, "No probes to attach", "", ""},
		{"usdt probe", fmt.Sprintf(`usdt:%s:net:inbound_mesage { exit(); }`, bin), settings.MissingError,
			"usdt probe net:inbound_mesage not found in " + bin, "did you mean net:inbound_message?", ""},
		{"function", fmt.Sprintf(`uprobe:%s:mian { exit(); }`, bin), settings.MissingError,
			"function mian not found in " + bin, "did you mean main?", ""},
		{"next to BEGIN", misspelt, settings.MissingError, "usdt probe net:inbound_mesage not found in " + bin, "did you mean net:inbound_message?", ""},
		{"next to BEGIN, warn", misspelt, settings.MissingWarn, "", "", "test.bt:1:1-"},
		{"next to BEGIN, ignore", misspelt, settings.MissingIgnore, "", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var warnings strings.Builder
			_, err := makeIn(t, tc.src, Input{MissingProbes: tc.policy, Warnings: &warnings})
			var l lang.ErrorList
			switch {
			case tc.msg == "No probes to attach":
				if !errors.Is(err, ErrNoProbes) || err.Error() != tc.msg {
					t.Errorf("error %v, want %s", err, tc.msg)
				}
			case tc.msg != "":
				if !errors.As(err, &l) || len(l) != 1 || l[0].Msg != tc.msg || l[0].Hint != tc.hint || l[0].Span.Start.Col != 1 {
					t.Errorf("error %#v, want a positioned %q with hint %q", err, tc.msg, tc.hint)
				}
			case err != nil:
				t.Errorf("error %v, want none", err)
			}
			switch {
			case tc.warning == "" && warnings.Len() > 0:
				t.Errorf("warnings %q, want none", warnings.String())
			case tc.warning != "" && (!strings.Contains(warnings.String(), tc.warning) || !strings.Contains(warnings.String(), "WARNING: usdt probe net:inbound_mesage not found in "+bin+"\n")):
				t.Errorf("warnings %q, want a positioned warning", warnings.String())
			}
		})
	}
}

// TestPIDUnmapped checks that -p with a process that does not map a usdt
// or uprobe attach point's file is an error naming both.
func TestPIDUnmapped(t *testing.T) {
	bin := fixture.Build(t, "bitcoind")
	sleep := startProcess(t, "sleep", "60")
	for _, probe := range []string{"usdt:%s:net:inbound_message", "uprobe:%s:main"} {
		src := fmt.Sprintf(probe+" { @ = count(); }", bin)
		_, err := makeIn(t, src, Input{PID: sleep})
		var l lang.ErrorList
		want := fmt.Sprintf("process %d (sleep) does not map %s: its probes would never fire", sleep, bin)
		if !errors.As(err, &l) || len(l) != 1 || l[0].Msg != want {
			t.Errorf("%s: error %v, want %q", src, err, want)
		}
	}
}

// TestPIDZombie names why a usdt probe without a path finds nothing in a
// -p process that has exited but is not reaped yet, where it asked for the
// -p that was given.
func TestPIDZombie(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Not reaped until Wait: a zombie once it has exited.
	t.Cleanup(func() { cmd.Wait() })
	for deadline := time.Now().Add(30 * time.Second); proc.ExitedNote(cmd.Process.Pid) == ""; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("true did not exit in 30 s")
		}
	}
	_, err := makeIn(t, `usdt::net:inbound_message { exit(); }`, Input{PID: cmd.Process.Pid})
	want := "maps no files to look for usdt probes in: it has exited (a zombie that its parent has not reaped)"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Make: %v, want %q", err, want)
	}
}

// startProcess starts the command name with args, killed and reaped when
// the test ends, and returns its PID.
func startProcess(t *testing.T, name string, args ...string) int {
	t.Helper()
	cmd := exec.Command(name, args...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd.Process.Pid
}
