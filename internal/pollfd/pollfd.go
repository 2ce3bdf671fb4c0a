// Package pollfd puts a kernel object's descriptor in Go's poller, so that
// a goroutine waits for it to become readable without a thread or a P of
// its own. It owns only that: what the descriptor is (a BPF ring buffer,
// a perf event) and what readable means are the caller's.
package pollfd

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// Dup returns a non-blocking duplicate of fd as a file that Go's poller
// waits on (epoll takes ring buffer maps and perf events), named name. The
// caller closes it; fd stays the caller's.
func Dup(fd int, name string) (*os.File, error) {
	dup, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("duplicate %s descriptor: %w", name, err)
	}
	if err := unix.SetNonblock(dup, true); err != nil {
		unix.Close(dup)
		return nil, fmt.Errorf("make %s descriptor non-blocking: %w", name, err)
	}
	// os.NewFile registers a non-blocking descriptor with the poller.
	return os.NewFile(uintptr(dup), name), nil
}
