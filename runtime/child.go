package runtime

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	goruntime "runtime"
	"strings"
	"syscall"
	"time"
)

// childEnv names the environment variable that turns a re-executed gotrace
// (or test binary) into the -c child: its value is the path of the command
// to run. The child waits on file descriptor 3 until the tracer has attached
// its probes, then replaces itself with the command, so the command's PID is
// known (and filtered on) before it runs a single instruction.
const childEnv = "GOTRACE_EXEC_CHILD"

func init() {
	path, ok := os.LookupEnv(childEnv)
	if !ok {
		return
	}
	// init runs on the main thread, the one that execs: the kernel keeps
	// the death signal (become) of the thread that calls execve.
	os.Exit(execChild(path, os.Args, os.NewFile(3, "gotrace-go")))
}

// execChild is the re-executed child: it waits for the go-ahead byte on gate,
// becomes the user credEnv names, if any, and then execs path with argv. It
// only returns on failure, with the exit status to use.
func execChild(path string, argv []string, gate *os.File) int {
	parent := os.Getppid()
	var b [1]byte
	if n, _ := gate.Read(b[:]); n != 1 {
		// The tracer gave up before attaching: do not run the command.
		return 1
	}
	gate.Close()
	if spec, ok := os.LookupEnv(credEnv); ok {
		if err := become(spec, parent); err != nil {
			fmt.Fprintf(os.Stderr, "ERROR: run %s: %v\n", path, err)
			return 126
		}
	}
	env := make([]string, 0, len(os.Environ()))
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, childEnv+"=") && !strings.HasPrefix(kv, credEnv+"=") {
			env = append(env, kv)
		}
	}
	err := syscall.Exec(path, argv, env)
	fmt.Fprintf(os.Stderr, "ERROR: execute %s: %v\n", path, err)
	return 127
}

// child is a -c command that has been started but waits to exec until
// release is called.
type child struct {
	cmd  *exec.Cmd
	gate *os.File
	// Path is the resolved executable; PID is the process that becomes it.
	Path string
	PID  int
	// done is closed when the command has exited.
	done chan struct{}
}

// startChild starts command held at the gate, to run as cred (nil: as
// gotrace). It is split into words the way a shell would (quotes and
// backslashes, no expansions) and its first word is looked up on PATH. The
// child shares gotrace's standard input, output and error, as with bpftrace
// (-o redirects only the trace). It gets childSignal when gotrace dies.
func startChild(command string, cred *credential) (*child, error) {
	argv, path, err := lookCommand(command)
	if err != nil {
		return nil, err
	}
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find own executable: %w", err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("create pipe: %w", err)
	}
	defer r.Close()
	env := os.Environ()
	if cred != nil {
		env = cred.env(env)
	}
	// A command named by a path is executed by that path, as bpftrace
	// does: the kernel's exec events (sched_process_exec's filename) show
	// it as written.
	execPath := path
	if strings.Contains(argv[0], "/") {
		execPath = argv[0]
	}
	cmd := &exec.Cmd{
		Path:        self,
		Args:        argv,
		Env:         append(env, childEnv+"="+execPath),
		Stdin:       os.Stdin,
		Stdout:      os.Stdout,
		Stderr:      os.Stderr,
		ExtraFiles:  []*os.File{r},
		SysProcAttr: &syscall.SysProcAttr{Pdeathsig: childSignal},
	}
	c := &child{cmd: cmd, gate: w, Path: path, done: make(chan struct{})}
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
		w.Close()
		return nil, fmt.Errorf("start command: %w", err)
	}
	c.PID = cmd.Process.Pid
	return c, nil
}

// release lets the child exec the command.
func (c *child) release() error {
	_, err := c.gate.Write([]byte{1})
	c.gate.Close()
	if err != nil {
		return fmt.Errorf("start command: %w", err)
	}
	return nil
}

// terminate ends a child that is held at the gate or still running when
// the trace ends, as bpftrace does: SIGTERM, then SIGKILL after grace. The
// processes it started get the same signals, as a shell that runs
// ./bitcoind without exec would leave it running. It waits for the child
// to be gone.
func (c *child) terminate(grace time.Duration) {
	c.gate.Close()
	select {
	case <-c.done:
		return
	default:
	}
	tree := descendants(c.PID)
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
	if path, err = absPath(path); err != nil {
		return nil, "", err
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
