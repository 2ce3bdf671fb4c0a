// Package memlock lifts the memory lock limit that kernels before 5.11
// charge BPF maps and programs to, before anything is loaded.
//
// It does what cilium/ebpf's rlimit.RemoveMemlock does without that
// package, whose initialiser creates a BPF map at every start of a binary
// that links it, to find out which kind of kernel it runs on (0.7 ms of
// each gotrace start, issue 24). Later kernels account BPF memory to the
// memory cgroup and ignore the limit, so raising it there is harmless.
package memlock

import "golang.org/x/sys/unix"

// Raise lifts RLIMIT_MEMLOCK to infinity, or where that is refused (no
// CAP_SYS_RESOURCE) the soft limit to the hard one. Loading may work
// either way, so it reports nothing.
func Raise() {
	inf := unix.Rlimit{Cur: unix.RLIM_INFINITY, Max: unix.RLIM_INFINITY}
	if unix.Setrlimit(unix.RLIMIT_MEMLOCK, &inf) == nil {
		return
	}
	var lim unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_MEMLOCK, &lim) == nil && lim.Cur < lim.Max {
		_ = unix.Setrlimit(unix.RLIMIT_MEMLOCK, &unix.Rlimit{Cur: lim.Max, Max: lim.Max})
	}
}
