package runtime

// Kernel functions: kprobes and kretprobes (perf-event kprobes, refused
// where the kernel has none), kfuncs and kretfuncs (fentry and fexit
// programs through BPF trampolines).

import (
	"fmt"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"

	"github.com/gotrace/gotrace/codegen"
	"github.com/gotrace/gotrace/internal/capability"
	"github.com/gotrace/gotrace/lang"
)

// attachKernelFunc attaches a kprobe, kretprobe, kfunc or kretfunc program
// to its kernel function. A refusal names what the kernel lacks: kprobes
// (CONFIG_KPROBES) or BPF trampolines for fentry and fexit programs.
func attachKernelFunc(a *codegen.Attachment, prog *ebpf.Program) (link.Link, error) {
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
		return l, nil
	}
	switch {
	case (a.Kind == lang.ProbeKprobe || a.Kind == lang.ProbeKretprobe) && !capability.Of(capability.Kprobes).Available:
		return nil, fmt.Errorf("attach %s: %s: %w", a.ProbeName, capability.Of(capability.Kprobes).NotAvailable(), err)
	case a.Kind == lang.ProbeKfunc || a.Kind == lang.ProbeKretfunc:
		return nil, fmt.Errorf("attach %s: the kernel refuses fentry/fexit programs: %w", a.ProbeName, err)
	}
	return nil, fmt.Errorf("attach %s: %w", a.ProbeName, err)
}

// kernelFuncLoadError turns the kernel's refusal to load the program of a
// kfunc or kretfunc attach point into an error at that attach point,
// saying that it is fentry/fexit programs the kernel refuses (this
// project's kernels refuse them with EPERM, even to root); other errors
// are returned as they are.
func kernelFuncLoadError(spec *codegen.Spec, err error) error {
	for _, a := range spec.Attachments {
		if (a.Kind == lang.ProbeKfunc || a.Kind == lang.ProbeKretfunc) && strings.Contains(err.Error(), "program "+a.Program+":") {
			return lang.ErrorList{{Span: a.ProbePos, Msg: fmt.Sprintf("%s: the kernel refuses to load fentry/fexit programs (kfunc, kretfunc): %v", a.ProbeName, err)}}
		}
	}
	return err
}
