package symbols

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"slices"
	"testing"

	"github.com/gotrace/gotrace/runtime/proc"
	"github.com/gotrace/gotrace/usdt"
)

// echoEnv, set, makes the test binary echo its standard input instead of
// running tests ("wrapper": through a child of its own), for startEcho.
const echoEnv = "GOTRACE_SYMBOLS_TEST_ECHO"

// TestMain runs the tests, or echoes as startEcho's child.
func TestMain(m *testing.M) {
	switch os.Getenv(echoEnv) {
	case "":
	case "wrapper":
		// A wrapper, as runuser is for gotrace -c: the echo runs in a
		// child of its own, on the same standard input and output.
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), echoEnv+"=1")
		cmd.Stdin, cmd.Stdout = os.Stdin, os.Stdout
		if cmd.Run() != nil {
			os.Exit(1)
		}
		os.Exit(0)
	default:
		_, _ = io.Copy(os.Stdout, os.Stdin)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestMappingsOutliveProcess captures a process while it runs and reads
// its mappings after it exited: they are the ones it had. A thread id never
// captured gives none, and its frames count as unmapped.
func TestMappingsOutliveProcess(t *testing.T) {
	cmd, pid := startEcho(t, "1")
	s := New(0, nil, &usdt.Files{})
	if !s.Capture(pid) {
		t.Fatalf("Capture(%d) of a running process failed", pid)
	}
	live := ProcessMappings(pid)
	if len(live) == 0 {
		t.Fatalf("no mappings read of running process %d", pid)
	}
	stopEcho(t, cmd)
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

// TestRefreshFindsChildren captures a wrapper process: Refresh captures
// the child it started too, whose stacks are the ones traced.
func TestRefreshFindsChildren(t *testing.T) {
	cmd, pid := startEcho(t, "wrapper")
	s := New(0, nil, &usdt.Files{})
	if !s.Capture(pid) {
		t.Fatalf("Capture(%d) of a running process failed", pid)
	}
	kids := proc.Descendants(pid)
	if len(kids) != 1 {
		t.Fatalf("wrapper %d has children %v, want one", pid, kids)
	}
	s.Refresh()
	s.mu.Lock()
	_, ok := s.procs.latest[kids[0]]
	s.mu.Unlock()
	if !ok {
		t.Errorf("Refresh did not capture the wrapper's child %d", kids[0])
	}
	stopEcho(t, cmd)
}

// startEcho starts the test binary as an echo in mode (see TestMain) and
// returns it once it has echoed a line: whatever it maps at start is
// mapped then. Its standard input is closed when t ends.
func startEcho(t *testing.T, mode string) (*echoProcess, int) {
	t.Helper()
	return startEchoAt(t, os.Args[0], mode)
}

// startEchoAt is startEcho of the test binary at path (a link to it).
func startEchoAt(t *testing.T, path, mode string) (*echoProcess, int) {
	t.Helper()
	cmd := exec.Command(path, "-test.run=^$")
	cmd.Env = append(os.Environ(), echoEnv+"="+mode)
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
	e := &echoProcess{cmd: cmd, stdin: stdin}
	t.Cleanup(func() {
		stdin.Close()
		_ = cmd.Wait()
	})
	if _, err := io.WriteString(stdin, "ready\n"); err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || line != "ready\n" {
		t.Fatalf("the child echoed %q, %v", line, err)
	}
	return e, cmd.Process.Pid
}

// echoProcess is a running echo of startEcho.
type echoProcess struct {
	cmd   *exec.Cmd
	stdin io.Closer
}

// stopEcho ends e and reaps it.
func stopEcho(t *testing.T, e *echoProcess) {
	t.Helper()
	e.stdin.Close()
	if err := e.cmd.Wait(); err != nil {
		t.Fatalf("child: %v", err)
	}
}
