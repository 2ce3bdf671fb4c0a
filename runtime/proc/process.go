package proc

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Descendants returns the PIDs of root's descendants, read from every
// thread's children in /proc.
func Descendants(root int) []int {
	var out []int
	queue := []int{root}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
		if err != nil {
			continue
		}
		for _, task := range tasks {
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", pid, task.Name()))
			if err != nil {
				continue
			}
			for _, w := range strings.Fields(string(b)) {
				if c, err := strconv.Atoi(w); err == nil {
					out = append(out, c)
					queue = append(queue, c)
				}
			}
		}
	}
	return out
}

// Gone reports whether pid has exited.
func Gone(pid int) bool {
	return syscall.Kill(pid, 0) == syscall.ESRCH
}

// NameNote is " (comm)" for process pid, or nothing once it is gone.
func NameNote(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	if err != nil {
		return ""
	}
	return " (" + strings.TrimSpace(string(b)) + ")"
}

// ExitedNote says why process pid maps nothing when it has exited: ": it
// has exited and is a zombie ...", or "" for a live process.
func ExitedNote(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ": it has exited"
	}
	// The state follows the command name, which is in parentheses and
	// may itself hold ") ".
	_, rest, ok := strings.Cut(string(b[bytes.LastIndexByte(b, ')')+1:]), " ")
	if !ok || rest == "" {
		return ""
	}
	switch rest[0] {
	case 'Z':
		return ": it has exited (a zombie that its parent has not reaped)"
	case 'X':
		return ": it has exited"
	}
	return ""
}

// Process is a running process that a trace watches (-p), held by a
// pidfd: its exit is seen even when its PID is reused.
type Process struct {
	// PID is the process's ID.
	PID int
	fd  int
}

// OpenProcess opens process pid for watching.
func OpenProcess(pid int) (*Process, error) {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		// bpftrace's words.
		return nil, fmt.Errorf("failed to open process %d: %w", pid, err)
	}
	return &Process{PID: pid, fd: fd}, nil
}

// Exited returns a channel closed when the process exits. The goroutine
// that watches gives up when stop is closed.
func (p *Process) Exited(stop <-chan struct{}) <-chan struct{} {
	gone := make(chan struct{})
	go func() {
		fds := []unix.PollFd{{Fd: int32(p.fd), Events: unix.POLLIN}}
		for {
			select {
			case <-stop:
				return
			default:
			}
			n, err := unix.Poll(fds, 200)
			if err != nil && !errors.Is(err, syscall.EINTR) {
				return
			}
			if n > 0 {
				close(gone)
				return
			}
		}
	}()
	return gone
}

// Close lets the process go: its pidfd is closed.
func (p *Process) Close() error {
	if err := unix.Close(p.fd); err != nil {
		return fmt.Errorf("close pidfd of process %d: %w", p.PID, err)
	}
	return nil
}
