package attach

// Kernel functions: kprobes and kretprobes (perf-event kprobes, refused
// where the kernel has none), kfuncs and kretfuncs (fentry and fexit
// programs through BPF trampolines).

import (
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"

	"github.com/gotrace/gotrace/internal/capability"
	"github.com/gotrace/gotrace/lang"
	"github.com/gotrace/gotrace/runtime/plan"
)

// KernelFunc attaches the kprobe, kretprobe, kfunc or kretfunc program
// prog of site s to its kernel function. A refusal names what the kernel
// lacks: kprobes (CONFIG_KPROBES) or BPF trampolines for fentry and fexit
// programs.
func KernelFunc(s plan.Site, prog *ebpf.Program) ([]link.Link, error) {
	a := s.Attachment
	var l link.Link
	var err error
	switch a.Kind {
	case lang.ProbeKprobe:
		l, err = link.Kprobe(a.Symbol, prog, nil)
	case lang.ProbeKretprobe:
		l, err = link.Kretprobe(a.Symbol, prog, nil)
	default:
		l, err = link.AttachTracing(link.TracingOptions{Program: prog})
	}
	if err == nil {
		return []link.Link{l}, nil
	}
	switch {
	case (a.Kind == lang.ProbeKprobe || a.Kind == lang.ProbeKretprobe) && !capability.Of(capability.Kprobes).Available:
		return nil, fmt.Errorf("attach %s: %s: %w", a.ProbeName, capability.Of(capability.Kprobes).NotAvailable(), err)
	case a.Kind == lang.ProbeKfunc || a.Kind == lang.ProbeKretfunc:
		return nil, fmt.Errorf("attach %s: the kernel refuses fentry/fexit programs: %w", a.ProbeName, err)
	}
	return nil, fmt.Errorf("attach %s: %w", a.ProbeName, err)
}
