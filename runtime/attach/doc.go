// Package attach owns the attach mechanisms: it executes the sites of a
// probe plan (runtime/plan) on the kernel, a file per mechanism:
// uprobe_multi.go (one uprobe_multi link per program and file),
// uprobe.go (a perf-event uprobe per site), tracepoint.go, profile.go
// (profile, software and hardware probes on perf events, opened by
// perf.go), watchpoint.go (hardware breakpoints) and kprobe.go (kprobes,
// kretprobes, kfuncs and kretfuncs). Each takes a site and a loaded
// program and returns its links.
//
// It resolves nothing: a site says where it goes, and nothing here reads
// a script, matches a name or decides what a probe means. Loading the
// programs, choosing when to attach what and keeping the links are the
// runtime's.
package attach
