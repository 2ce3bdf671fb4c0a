package runtime

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/cilium/ebpf/btf"

	"github.com/gotrace/gotrace/internal/capability"
	"github.com/gotrace/gotrace/lang/attachpoint"
	"github.com/gotrace/gotrace/runtime/plan"
	"github.com/gotrace/gotrace/runtime/tracefs"
	"github.com/gotrace/gotrace/usdt"
)

// iterProbes are the iterators bpftrace 0.17 lists when the kernel has
// their BTF function, with the arguments -lv prints for them.
var iterProbes = []struct {
	name string
	args []string
}{
	{"task", []string{"struct task_struct * task"}},
	{"task_file", []string{"struct task_struct * task", "int fd", "struct file * file"}},
}

// ListKernel prints the kernel probes that pattern (explicit: given on
// the command line, even empty) names, as bpftrace
// 0.17's -l does, and reports whether pattern is about kernel probes at
// all (false: the caller lists user-space probes). An empty pattern or
// one without a colon searches every kind: hardware and software print
// the pattern itself in place of events (0.17 does), iterators and
// tracepoints whose names (not categories) match. An explicit empty
// pattern matches nothing. verbose (-lv) adds the arguments of
// iterators and the fields of tracepoints. Patterns are globs.
func ListKernel(w io.Writer, pattern string, explicit, verbose bool) (bool, error) {
	if explicit && pattern == "" {
		return true, nil
	}
	fields, err := attachpoint.Split(pattern)
	if err != nil {
		return false, nil
	}
	if pattern == "" || len(fields) == 1 {
		search := pattern
		if search == "" {
			search = "*"
		}
		fmt.Fprintf(w, "hardware:%s:\n", search)
		listIters(w, search, verbose)
		fmt.Fprintf(w, "software:%s:\n", search)
		return true, listTracepoints(w, "*", search, verbose)
	}
	typ := fields[0]
	if strings.ContainsAny(typ, "*?") {
		return listKernelKinds(w, fields, verbose)
	}
	// argCount is bpftrace's error for a pattern of kind typ without the
	// fields it takes.
	argCount := func(want string) error {
		return &usdt.PatternError{Pattern: pattern, Msg: attachpoint.ArgCountError(typ, want).Error()}
	}
	kind, _ := attachpoint.LookupKind(typ)
	switch kind {
	case attachpoint.Tracepoint:
		if len(fields) != 3 {
			return true, argCount("2 arguments")
		}
		return true, listTracepoints(w, fields[1], fields[2], verbose)
	case attachpoint.Kfunc, attachpoint.Kretfunc:
		if len(fields) != 2 {
			return true, argCount("1 argument")
		}
		return true, listKernelFuncs(w, kind, fields[1], verbose)
	case attachpoint.Kprobe, attachpoint.Kretprobe:
		if len(fields) != 2 {
			return true, argCount("1 argument")
		}
		if r := capability.Of(capability.Kprobes); !r.Available && !r.Unknown {
			return true, &usdt.PatternError{Pattern: pattern, Msg: r.NotAvailable()}
		}
		return true, listKprobes(w, kind, fields[1])
	case attachpoint.Watchpoint:
		// Nothing to list: 0.17 asks for the three fields of a script's
		// watchpoint.
		return true, argCount("3 arguments")
	}
	name, _ := attachpoint.Unattached(typ)
	if kind == attachpoint.Software || kind == attachpoint.Hardware {
		name = kind.String()
	}
	switch name {
	case "software", "hardware":
		fmt.Fprintf(w, "%s:%s:\n", name, fields[1])
		return true, nil
	case "iter":
		listIters(w, fields[1], verbose)
		return true, nil
	}
	return false, nil
}

// listKernelKinds lists, for a pattern whose probe type is a glob
// (bpftrace's "*ware:*"), each kernel kind the glob names as -l lists it
// by name, and reports whether that was all: false when the glob names no
// kernel kind or names a user-space kind too, which the caller lists.
func listKernelKinds(w io.Writer, fields []string, verbose bool) (bool, error) {
	typ, listed := fields[0], false
	for _, k := range []attachpoint.Kind{attachpoint.Hardware, attachpoint.Software} {
		if attachpoint.Glob.Match(typ, k.String()) && len(fields) == 2 {
			fmt.Fprintf(w, "%s:%s:\n", k, fields[1])
			listed = true
		}
	}
	if attachpoint.Glob.Match(typ, attachpoint.Tracepoint.String()) && len(fields) == 3 {
		if err := listTracepoints(w, fields[1], fields[2], verbose); err != nil {
			return true, err
		}
		listed = true
	}
	return listed && len(attachpoint.WildcardUserKinds(typ)) == 0, nil
}

// listIters prints the iterators whose name matches pattern.
func listIters(w io.Writer, pattern string, verbose bool) {
	spec, err := btf.LoadKernelSpec()
	if err != nil {
		return
	}
	for _, it := range iterProbes {
		var fn *btf.Func
		if spec.TypeByName("bpf_iter_"+it.name, &fn) != nil || !attachpoint.Glob.Match(pattern, it.name) {
			continue
		}
		fmt.Fprintf(w, "iter:%s\n", it.name)
		if verbose {
			for _, a := range it.args {
				fmt.Fprintf(w, "    %s\n", a)
			}
		}
	}
}

// listKprobes prints the functions of tracefs's available_filter_functions
// (those the kernel can probe) whose name matches pattern, as kprobe or
// kretprobe probes (kind), sorted and each once, as bpftrace 0.17 lists
// them (the file is in address order and may name a static function
// twice; compared in the emulated x86-64, internal/vmtest).
func listKprobes(w io.Writer, kind attachpoint.Kind, pattern string) error {
	funcs, err := plan.TraceableFunctions()
	if err != nil {
		return fmt.Errorf("list %s probes: %w", kind, err)
	}
	funcs = slices.Clone(funcs)
	slices.Sort(funcs)
	for _, name := range slices.Compact(funcs) {
		if attachpoint.Glob.Match(pattern, name) {
			fmt.Fprintf(w, "%s:%s\n", kind, name)
		}
	}
	return nil
}

// listKernelFuncs prints the kernel functions of the kernel's BTF whose
// name matches pattern, as kfunc or kretfunc probes (kind), in BTF order;
// verbose adds each parameter and, for kretfunc, the return value, as
// "    TYPE NAME". bpftrace 0.17 lists none on kernels that refuse fentry
// programs.
func listKernelFuncs(w io.Writer, kind attachpoint.Kind, pattern string, verbose bool) error {
	spec, err := btf.LoadKernelSpec()
	if err != nil {
		return fmt.Errorf("list %s probes: %w", kind, err)
	}
	seen := map[string]bool{}
	for t, err := range spec.All() {
		if err != nil {
			return fmt.Errorf("list %s probes: %w", kind, err)
		}
		fn, ok := t.(*btf.Func)
		if !ok || seen[fn.Name] || !attachpoint.Glob.Match(pattern, fn.Name) {
			continue
		}
		seen[fn.Name] = true
		fmt.Fprintf(w, "%s:%s\n", kind, fn.Name)
		proto, ok := fn.Type.(*btf.FuncProto)
		if !verbose || !ok {
			continue
		}
		for _, p := range proto.Params {
			fmt.Fprintf(w, "    %s %s\n", cTypeName(p.Type), p.Name)
		}
		if _, void := proto.Return.(*btf.Void); kind == attachpoint.Kretfunc && !void {
			fmt.Fprintf(w, "    %s retval\n", cTypeName(proto.Return))
		}
	}
	return nil
}

// cTypeName spells a BTF type as C declares it, with const but without
// the other qualifiers, as bpftrace 0.17 lists them: "struct file *",
// "size_t", "const char *".
func cTypeName(t btf.Type) string {
	switch t := t.(type) {
	case *btf.Pointer:
		return cTypeName(t.Target) + " *"
	case *btf.Const:
		return "const " + cTypeName(t.Type)
	case *btf.Volatile:
		return cTypeName(t.Type)
	case *btf.Restrict:
		return cTypeName(t.Type)
	case *btf.TypeTag:
		return cTypeName(t.Type)
	case *btf.Struct:
		return "struct " + t.Name
	case *btf.Union:
		return "union " + t.Name
	case *btf.Enum:
		return "enum " + t.Name
	case *btf.Void:
		return "void"
	case *btf.FuncProto:
		return "void (*)()"
	}
	return t.TypeName()
}

// listTracepoints prints the tracepoints whose category and name match.
func listTracepoints(w io.Writer, category, name string, verbose bool) error {
	dir, err := tracefs.Find(os.Geteuid() == 0)
	if err != nil {
		return err
	}
	events, err := tracefs.Events(dir)
	if err != nil {
		return err
	}
	for _, ev := range events {
		if !attachpoint.Glob.Match(category, ev.Category) || !attachpoint.Glob.Match(name, ev.Name) {
			continue
		}
		fmt.Fprintf(w, "tracepoint:%s\n", ev)
		if !verbose {
			continue
		}
		f, err := tracefs.ReadFormat(dir, ev)
		if err != nil {
			continue
		}
		var b strings.Builder
		for _, fl := range f.Fields {
			if !fl.Common {
				fmt.Fprintf(&b, "    %s\n", fl.Decl())
			}
		}
		io.WriteString(w, b.String())
	}
	return nil
}
