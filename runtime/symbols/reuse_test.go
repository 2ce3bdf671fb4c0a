package symbols

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/gotrace/gotrace/internal/testenv"
	"github.com/gotrace/gotrace/usdt"
)

// TestReusedPID runs a process, lets it exit, and gives its pid to a
// process of another file (through ns_last_pid): a stack each recorded
// is named through its own process's mappings, the old one's through its
// file though the new one runs under the pid. The old process is known
// from a /proc capture, or only from the kernel's mapping records.
func TestReusedPID(t *testing.T) {
	testenv.RequireRoot(t)
	echo := buildEcho(t)
	other := filepath.Join(filepath.Dir(echo), "other")
	if err := os.Link(echo, other); err != nil {
		t.Fatalf("link %s: %v", other, err)
	}
	for _, tracked := range []bool{false, true} {
		t.Run(fmt.Sprintf("tracked=%v", tracked), func(t *testing.T) {
			s := New(0, nil, &usdt.Files{})
			if tracked {
				if err := s.Track(0); err != nil {
					testenv.Unavailable(t, "mapping records: %v", err)
				}
				t.Cleanup(func() { s.Close() })
			}
			first, pid := startEchoAt(t, echo, "")
			firstAddr := symbolAddress(t, echo, pid, "echo_loop")
			if !tracked && !s.Capture(pid) {
				t.Fatalf("Capture(%d) of a running process failed", pid)
			}
			stopEcho(t, first)
			second := startEchoAsPID(t, other, pid)
			secondAddr := symbolAddress(t, other, pid, "echo_loop")
			if firstAddr == secondAddr {
				t.Fatalf("both processes have echo_loop at %#x: address space layout randomisation is off", firstAddr)
			}
			if !tracked && !s.Capture(pid) {
				t.Fatalf("Capture(%d) of a running process failed", pid)
			}
			for _, tc := range []struct {
				what string
				addr uint64
				file string
			}{{"the process that exited", firstAddr, echo}, {"the process that has its pid now", secondAddr, other}} {
				sym, file, ok := s.StackFrames(pid, []uint64{tc.addr})(tc.addr)
				if !ok || sym != "echo_loop+0" || file != tc.file {
					t.Errorf("a stack of %s (%d): frame %#x named %q in %q, %v; want echo_loop+0 in %s", tc.what, pid, tc.addr, sym, file, ok, tc.file)
				}
			}
			stopEcho(t, second)
		})
	}
}

// startEchoAsPID starts the echo program at path as process pid, which
// is free (testenv.TakePID).
func startEchoAsPID(t *testing.T, path string, pid int) *echoProcess {
	t.Helper()
	var taken *echoProcess
	testenv.TakePID(t, pid, func() int {
		e, got := startEchoAt(t, path, "")
		if got == pid {
			taken = e
		} else {
			stopEcho(t, e)
		}
		return got
	})
	return taken
}
