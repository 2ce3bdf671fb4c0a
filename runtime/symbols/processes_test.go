package symbols

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"slices"
	"testing"

	"github.com/gotrace/gotrace/usdt"
)

// echoEnv, set, makes the test binary echo its standard input instead of
// running tests: TestMappingsOutliveProcess's child.
const echoEnv = "GOTRACE_SYMBOLS_TEST_ECHO"

// TestMain runs the tests, or echoes as TestMappingsOutliveProcess's
// child.
func TestMain(m *testing.M) {
	if os.Getenv(echoEnv) != "" {
		_, _ = io.Copy(os.Stdout, os.Stdin)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestMappingsOutliveProcess captures a process while it runs and reads
// its mappings after it exited: they are the ones it had. A thread id never
// captured gives none, and its frames count as unmapped.
func TestMappingsOutliveProcess(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), echoEnv+"=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		_ = cmd.Wait()
	})
	// A line echoed says the child runs its own code: whatever it maps
	// at start is mapped.
	if _, err := io.WriteString(stdin, "ready\n"); err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || line != "ready\n" {
		t.Fatalf("the child echoed %q, %v", line, err)
	}
	pid := cmd.Process.Pid
	s := New(0, nil, &usdt.Files{})
	if !s.Capture(pid) {
		t.Fatalf("Capture(%d) of a running process failed", pid)
	}
	live := ProcessMappings(pid)
	if len(live) == 0 {
		t.Fatalf("no mappings read of running process %d", pid)
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v", err)
	}
	if len(ProcessMappings(pid)) != 0 {
		t.Fatalf("process %d still has mappings after it was reaped", pid)
	}
	s.mu.Lock()
	kept, ok := s.mappings(pid)
	s.mu.Unlock()
	if !ok || !slices.Equal(kept, live) {
		t.Errorf("mappings after exit: %v, %v; want the %d captured", len(kept), ok, len(live))
	}
	// A pid above pid_max never ran.
	frames := s.UserFrames(1 << 23)
	for _, addr := range []uint64{0x401000, 0x401010} {
		if _, _, ok := frames(addr); ok {
			t.Errorf("frame %#x of a process never seen is named", addr)
		}
	}
	if n := s.Unmapped(); n != 2 {
		t.Errorf("Unmapped() = %d, want 2", n)
	}
}
