// Package attach owns the attach mechanisms: it executes the sites of a
// probe plan (runtime/plan) on the kernel. Site is the one entry: a group
// of sites (one site, or one attachment's locations in one file) and its
// loaded program in, the mechanism of their kind chosen, links out. A
// file per mechanism: uprobe_multi.go (one uprobe_multi link per program
// and file, and the choice of the uprobes' mode and of the spec to load
// for it, Loadable), uprobe.go (a perf-event uprobe per site),
// tracepoint.go, profile.go (profile, software and hardware probes on perf
// events, opened by perf.go), watchpoint.go (hardware breakpoints) and
// kprobe.go (kprobes, kretprobes, kfuncs and kretfuncs); gotrace's own
// sites (plan.Site.Own) go through Own, on the tracepoint and perf-event
// uprobe mechanisms. Each returns its links, and writes its notes (-v)
// and warnings to the run's Target.
//
// It resolves nothing: a site says where it goes, and nothing here reads
// a script, matches a name or decides what a probe means. When each site
// is attached is the plan's (plan.Site.When); loading the programs and
// keeping the links are the runtime's.
package attach
