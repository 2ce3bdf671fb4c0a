package runtime

// Kernel functions: kprobes and kretprobes (perf-event kprobes, refused
// where the kernel has none), kfuncs and kretfuncs (fentry and fexit
// programs through BPF trampolines).

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"

	"github.com/gotrace/gotrace/codegen"
	"github.com/gotrace/gotrace/internal/capability"
	"github.com/gotrace/gotrace/lang"
	"github.com/gotrace/gotrace/runtime/symbols"
	"github.com/gotrace/gotrace/runtime/tracefs"
)

// traceableFunctions returns the kernel functions kprobes can attach to,
// in tracefs's available_filter_functions order: the list bpftrace
// matches kprobe wildcards and -l against. A function of a module is
// listed by its name alone, without the "[module]" the file adds.
func traceableFunctions() ([]string, error) {
	dir, err := tracefs.Find(os.Geteuid() == 0)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(filepath.Join(dir, "available_filter_functions"))
	if err != nil {
		return nil, fmt.Errorf("read traceable kernel functions: %w", err)
	}
	var names []string
	for _, line := range strings.Split(string(b), "\n") {
		if name, _, _ := strings.Cut(line, " "); name != "" {
			names = append(names, name)
		}
	}
	return names, nil
}

// kernelFunctionNames returns the names of /proc/kallsyms, in its order.
func kernelFunctionNames() ([]string, error) {
	syms, err := symbols.KernelSymbols()
	if err != nil {
		return nil, err
	}
	names := make([]string, len(syms))
	for i, s := range syms {
		names[i] = s.Name
	}
	return names, nil
}

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
		return nil, fmt.Errorf("attach %s: %s: %w", a.ProbeName, notAvailable(capability.Of(capability.Kprobes)), err)
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
			return spanError(a.ProbePos, "", "%s: the kernel refuses to load fentry/fexit programs (kfunc, kretfunc): %v", a.ProbeName, err)
		}
	}
	return err
}
