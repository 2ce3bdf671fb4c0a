package proc

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"syscall"
	"time"
)

// Child is a -c command that has been started but waits, in the gate
// program (gate.go), to exec until Release is called.
type Child struct {
	cmd *exec.Cmd
	// gate lets the command run (one byte) or stops it (closed).
	gate *os.File
	// report says whether the command's execve failed (see gate.go).
	report *os.File
	// Path is the resolved executable; PID is the process that becomes it.
	Path string
	PID  int
	// done is closed when the command has exited.
	done chan struct{}
}

// StartChild starts command held at the gate, to run as the user as
// chooses (see RunAs), and returns once the gate waits: from then on nothing of
// gotrace runs in the child. The command is split into words the way a
// shell would (quotes and backslashes, no expansions) and its first word
// is looked up on PATH. The child shares gotrace's standard input, output
// and error, as with bpftrace (-o redirects only the trace). It gets
// childSignal when gotrace dies: the kernel keeps the request across the
// change of user, which Go's fork makes before it, and across both execs.
func StartChild(command string, as RunAs) (*Child, error) {
	argv, path, err := lookCommand(command)
	if err != nil {
		return nil, err
	}
	cred, err := as.credential()
	if err != nil {
		return nil, err
	}
	prog, err := gateFile()
	if err != nil {
		return nil, err
	}
	defer prog.Close()
	gateR, gateW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("create pipe: %w", err)
	}
	defer gateR.Close()
	reportR, reportW, err := os.Pipe()
	if err != nil {
		gateW.Close()
		return nil, fmt.Errorf("create pipe: %w", err)
	}
	defer reportW.Close()
	env := os.Environ()
	attr := &syscall.SysProcAttr{Pdeathsig: childSignal}
	if cred != nil {
		env = cred.env(env)
		attr.Credential = cred.sys()
	}
	// A command named by a path is executed by that path, as bpftrace
	// does: the kernel's exec events (sched_process_exec's filename) show
	// it as written.
	execPath := path
	if strings.Contains(argv[0], "/") {
		execPath = argv[0]
	}
	cmd := &exec.Cmd{
		Path:        fmt.Sprintf("/proc/self/fd/%d", selfFD),
		Args:        append([]string{execPath}, argv...),
		Env:         env,
		Stdin:       os.Stdin,
		Stdout:      os.Stdout,
		Stderr:      os.Stderr,
		ExtraFiles:  []*os.File{gateR, reportW, prog},
		SysProcAttr: attr,
	}
	c := &Child{cmd: cmd, gate: gateW, report: reportR, Path: path, done: make(chan struct{})}
	started := make(chan error)
	go func() {
		// The death signal comes when the thread that forked the child
		// ends, not the process: this goroutine keeps its thread until
		// the child is gone.
		goruntime.LockOSThread()
		defer goruntime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		cmd.Wait()
		close(c.done)
	}()
	if err := <-started; err != nil {
		gateW.Close()
		reportR.Close()
		return nil, fmt.Errorf("start command: %w", err)
	}
	c.PID = cmd.Process.Pid
	// Only the child may hold the write end now, so that the read below
	// ends if the gate dies before it is ready.
	reportW.Close()
	var ready [1]byte
	if n, _ := io.ReadFull(reportR, ready[:]); n != 1 || ready[0] != gateReady {
		c.Terminate(0)
		return nil, fmt.Errorf("start command %s: the child exited before it was ready", path)
	}
	return c, nil
}

// Release lets the child exec the command and waits for the execve's
// outcome: the command's error if it failed, in which case the child
// exits with status 127 (a shell's "cannot execute").
func (c *Child) Release() error {
	_, err := c.gate.Write([]byte{1})
	c.gate.Close()
	if err != nil {
		return fmt.Errorf("start command: %w", err)
	}
	var errno [4]byte
	n, _ := io.ReadFull(c.report, errno[:])
	c.report.Close()
	if n == len(errno) {
		return fmt.Errorf("execute %s: %w", c.Path, syscall.Errno(binary.NativeEndian.Uint32(errno[:])))
	}
	return nil
}

// Exited is closed when the child has exited (and been reaped).
func (c *Child) Exited() <-chan struct{} { return c.done }

// Terminate ends a child that is held at the gate or still running when
// the trace ends, as bpftrace does: SIGTERM, then SIGKILL after grace. The
// processes it started get the same signals, as a shell that runs
// ./bitcoind without exec would leave it running. It waits for the child
// to be gone.
func (c *Child) Terminate(grace time.Duration) {
	c.gate.Close()
	c.report.Close()
	select {
	case <-c.done:
		return
	default:
	}
	tree := Descendants(c.PID)
	signal := func(sig syscall.Signal) {
		c.cmd.Process.Signal(sig)
		for _, pid := range tree {
			syscall.Kill(pid, sig)
		}
	}
	signal(syscall.SIGTERM)
	select {
	case <-c.done:
		return
	case <-time.After(grace):
	}
	signal(syscall.SIGKILL)
	<-c.done
}

// CommandPath returns the absolute path of the executable a -c command
// runs: its first word, looked up on PATH.
func CommandPath(command string) (string, error) {
	_, path, err := lookCommand(command)
	return path, err
}

// lookCommand splits a -c command into words (see splitCommand) and looks
// its first word up on PATH, returning the words and the absolute path of
// the executable.
func lookCommand(command string) (argv []string, path string, err error) {
	argv, err = splitCommand(command)
	if err != nil {
		return nil, "", fmt.Errorf("parse command %q: %w", command, err)
	}
	if len(argv) == 0 {
		return nil, "", errors.New("parse command: the command is empty")
	}
	path, err = exec.LookPath(argv[0])
	if err != nil {
		return nil, "", fmt.Errorf("failed to fork child: path '%s' does not exist or is not executable", argv[0])
	}
	if path, err = filepath.Abs(path); err != nil {
		return nil, "", fmt.Errorf("resolve path %s: %w", argv[0], err)
	}
	return argv, path, nil
}

// splitCommand splits a command line into words as a POSIX shell does,
// handling single quotes, double quotes and backslashes, but no variables,
// globs or other expansions.
func splitCommand(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, errors.New("unterminated single quote")
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case c == '"':
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\\\"$`\n", s[i+1]) >= 0 {
					i++
				}
				cur.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, errors.New("unterminated double quote")
			}
			inWord = true
		case c == '\\':
			if i+1 < len(s) {
				i++
				cur.WriteByte(s[i])
			}
			inWord = true
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}
