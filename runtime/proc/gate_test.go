package proc

import (
	"debug/elf"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/gotrace/gotrace/internal/testenv"
)

// gateRunners returns, for each gate program this host can run, the
// command prefix that runs it: none for this machine's own, Debian's
// qemu-user emulator for the other (installed by hack/setup.sh).
func gateRunners(t *testing.T) map[elf.Machine][]string {
	t.Helper()
	emulators := map[elf.Machine]string{elf.EM_X86_64: "qemu-x86_64", elf.EM_AARCH64: "qemu-aarch64"}
	runners := map[elf.Machine][]string{}
	for machine := range gateCodes {
		if machine == gateMachine {
			runners[machine] = nil
			continue
		}
		runners[machine] = []string{testenv.RequireTool(t, emulators[machine])}
	}
	return runners
}

// gateRun is one run of a gate program with its three descriptors.
type gateRun struct {
	cmd    *exec.Cmd
	gate   *os.File
	report *os.File
	out    *strings.Builder
}

// startGate runs the gate program for machine from a file, through
// runner, with the command path and argv after it.
func startGate(t *testing.T, machine elf.Machine, runner []string, argv ...string) *gateRun {
	t.Helper()
	prog, err := gateELF(machine)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "gate")
	if err := os.WriteFile(path, prog, 0o755); err != nil {
		t.Fatal(err)
	}
	self, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer self.Close()
	gateR, gateW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer gateR.Close()
	reportR, reportW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer reportW.Close()
	// The gate's own argv[0] is the command's path, as StartChild passes
	// it; qemu-user sets it with -0.
	cmd := &exec.Cmd{Path: path, Args: argv}
	if len(runner) > 0 {
		cmd = exec.Command(runner[0], append(append(runner[1:], "-0", argv[0], path), argv[1:]...)...)
	}
	r := &gateRun{cmd: cmd, gate: gateW, report: reportR, out: &strings.Builder{}}
	r.cmd.Env = []string{"GATE_TEST=through"}
	r.cmd.Stdout, r.cmd.Stderr = r.out, r.out
	r.cmd.ExtraFiles = []*os.File{gateR, reportW, self}
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		gateW.Close()
		reportR.Close()
		r.cmd.Process.Kill()
		r.cmd.Wait()
	})
	var ready [1]byte
	if _, err := io.ReadFull(reportR, ready[:]); err != nil || ready[0] != gateReady {
		t.Fatalf("gate not ready: %q, %v", ready, err)
	}
	return r
}

// exitCode waits for the gate's process and returns its exit status.
func (r *gateRun) exitCode(t *testing.T) int {
	t.Helper()
	err := r.cmd.Wait()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatal(err)
	}
	return r.cmd.ProcessState.ExitCode()
}

// TestGateProgram runs each gate program (see gate.go): released, it
// executes the command with the command's argv and the environment and no
// descriptor of its own; closed, it exits 1 without running it; a failed
// execve is reported with its errno and status 127.
func TestGateProgram(t *testing.T) {
	sh := testenv.RequireTool(t, "sh")
	for machine, runner := range gateRunners(t) {
		t.Run(machine.String(), func(t *testing.T) {
			t.Run("released", func(t *testing.T) {
				script := `echo "$0 $1 $GATE_TEST"; for fd in 3 4 5; do [ -e /proc/$$/fd/$fd ] && echo "fd $fd inherited"; done; exit 7`
				r := startGate(t, machine, runner, sh, "sh", "-c", script, "zero", "first")
				if _, err := r.gate.Write([]byte{1}); err != nil {
					t.Fatal(err)
				}
				if b, _ := io.ReadAll(r.report); len(b) != 0 {
					t.Errorf("report after a successful exec: %q", b)
				}
				if code := r.exitCode(t); code != 7 {
					t.Errorf("exit status %d, want the command's 7; output %q", code, r.out)
				}
				if got, want := r.out.String(), "zero first through\n"; got != want {
					t.Errorf("output %q, want %q", got, want)
				}
			})
			t.Run("closed", func(t *testing.T) {
				r := startGate(t, machine, runner, sh, "sh", "-c", "echo ran")
				r.gate.Close()
				if code := r.exitCode(t); code != 1 || r.out.Len() != 0 {
					t.Errorf("exit status %d, output %q: want 1 and nothing run", code, r.out)
				}
			})
			t.Run("exec fails", func(t *testing.T) {
				bad := filepath.Join(t.TempDir(), "bad")
				if err := os.WriteFile(bad, []byte("\x00\x01 not a program"), 0o755); err != nil {
					t.Fatal(err)
				}
				r := startGate(t, machine, runner, bad, "bad")
				if _, err := r.gate.Write([]byte{1}); err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(r.report)
				if len(b) != 4 || syscall.Errno(binary.NativeEndian.Uint32(b)) != syscall.ENOEXEC {
					t.Errorf("report %q, want ENOEXEC", b)
				}
				if code := r.exitCode(t); code != 127 {
					t.Errorf("exit status %d, want 127", code)
				}
			})
		})
	}
}

// TestGateFile checks the memfd the -c child executes: this machine's
// gate program, sealed against writes, executable by anyone.
func TestGateFile(t *testing.T) {
	f, err := gateFile()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o555 {
		t.Errorf("mode %v, want r-xr-xr-x", st.Mode())
	}
	if _, err := f.WriteAt([]byte{0}, 0); err == nil {
		t.Error("the gate program can be written after sealing")
	}
	e, err := elf.NewFile(f)
	if err != nil {
		t.Fatal(err)
	}
	if e.Machine != gateMachine || e.Type != elf.ET_EXEC {
		t.Errorf("machine %v type %v, want %v ET_EXEC", e.Machine, e.Type, gateMachine)
	}
}
