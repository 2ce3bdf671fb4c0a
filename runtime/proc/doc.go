// Package proc owns the processes of a trace, apart from what is traced
// in them:
//
//   - the -c command: split into words, looked up on PATH, started held
//     at a gate program until the probes are attached, run as its user
//     (RunAs), released, and ended with its descendants (Child);
//   - the processes it starts (Family, polled for its descendants);
//   - the -p process, watched through a pidfd until it exits (Process);
//   - what /proc says of a process (Descendants, Gone, NameNote,
//     ExitedNote);
//   - gotrace's own process: what it may do with eBPF (Privileges) and
//     the scheduling weight of its threads while the readers run (Favour).
//
// The -c child never runs gotrace's own code after the fork: Go's fork
// makes it the command's user and executes the gate (gate.go), a static
// program of a few dozen instructions in a sealed memfd, which waits on a
// pipe and then execs the command. A probe that filters on the child's
// PID sees nothing of gotrace's start-up, and no binary that imports proc
// needs an init hook for it.
//
// proc knows nothing of scripts, programs or probes: it must not import
// lang, codegen, usdt, cilium/ebpf or the runtime that calls it, and
// takes and returns only PIDs, paths, commands and plain values
// (TestDependencies checks its imports). Attaching probes to a process
// stays with the runtime.
package proc
