package lang

// This file types the args and retval of kfunc and kretfunc probes
// (fentry and fexit programs): the parameters of the kernel function, from
// its prototype in the kernel's BTF.

import (
	"errors"
	"fmt"
	"strings"

	"github.com/cilium/ebpf/btf"

	"github.com/gotrace/gotrace/lang/attachpoint"
)

// kfuncCategory is the Category of the records of kernel functions: a
// kfunc probe's args is a record as a tracepoint's is, its fields the
// function's parameters, each in an 8-byte slot of the program's context
// (an array of u64 in the order of the parameters).
const kfuncCategory = "kfunc"

// IsKernelFunc reports whether tp is the record of a kernel function's
// parameters rather than of a tracepoint.
func (tp *Tracepoint) IsKernelFunc() bool { return tp.Category == kfuncCategory }

// resolveKfunc finds the kernel functions a kfunc or kretfunc attach
// point names (wildcards match every function of the BTF) and types
// their parameters and return value.
func resolveKfunc(ap *AttachPoint, kernel Kernel) error {
	spec, err := kernel.Types()
	if err != nil {
		return fmt.Errorf("kfunc/kretfunc need the kernel's BTF: %w", err)
	}
	var fns []*btf.Func
	if strings.Contains(ap.Func, "*") {
		seen := map[string]bool{}
		for t, err := range spec.All() {
			if err != nil {
				return fmt.Errorf("read the kernel's BTF: %w", err)
			}
			fn, ok := t.(*btf.Func)
			if ok && !seen[fn.Name] && attachpoint.Star.Match(ap.Func, fn.Name) {
				seen[fn.Name] = true
				fns = append(fns, fn)
			}
		}
	} else {
		var fn *btf.Func
		if err := spec.TypeByName(ap.Func, &fn); err != nil {
			if errors.Is(err, btf.ErrNotFound) {
				return fmt.Errorf("kernel function not found in BTF: %s", ap.Func)
			}
			return fmt.Errorf("look up %s in the kernel's BTF: %w", ap.Func, err)
		}
		fns = append(fns, fn)
	}
	if len(fns) == 0 {
		return fmt.Errorf("no kernel function matches %s", ap.Func)
	}
	for _, fn := range fns {
		rec, err := kfuncRecord(fn)
		if err != nil {
			return err
		}
		ap.Tracepoints = append(ap.Tracepoints, rec)
	}
	return nil
}

// kfuncRecord describes the parameters of fn as a record, and for
// kretfunc its return value, in the slot after them.
func kfuncRecord(fn *btf.Func) (*Tracepoint, error) {
	proto, ok := fn.Type.(*btf.FuncProto)
	if !ok {
		return nil, fmt.Errorf("kernel function %s has no prototype in BTF", fn.Name)
	}
	rec := &Tracepoint{Category: kfuncCategory, Name: fn.Name}
	for i, p := range proto.Params {
		rec.Fields = append(rec.Fields, kfuncSlot(p.Name, i, p.Type))
	}
	if _, void := btf.UnderlyingType(proto.Return).(*btf.Void); !void {
		ret := kfuncSlot("retval", len(proto.Params), proto.Return)
		rec.Retval = &ret
	}
	return rec, nil
}

// kfuncSlot is the field of parameter (or return value) number i of
// type t: its 8-byte slot, typed as a kernel struct's member of type t.
func kfuncSlot(name string, i int, t btf.Type) TracepointField {
	typ := kernelType(btf.UnderlyingType(t))
	signed := typ.Kind == KindInt && typ.Signed
	return TracepointField{Name: name, Offset: 8 * i, Size: 8, Signed: signed, Type: typ}
}

// kernelFuncBuiltin types the builtins whose type depends on the kernel:
// func, a kernel address (ksym) in kprobes and kfuncs, and retval in a
// kretfunc, the function's return type (of its first function where a
// wildcard matched several). ok is false for the others.
func (c *checker) kernelFuncBuiltin(e *Builtin) (Type, bool) {
	if c.probe == nil || len(c.attach) == 0 {
		return Type{}, false
	}
	ap := c.attach[0]
	switch {
	case e.ID == VarFunc && kernelFuncKind(ap.Kind):
		return Type{Kind: KindKsym}, true
	case e.ID == VarRetval && ap.Kind == ProbeKretfunc && len(ap.Tracepoints) > 0 && ap.Tracepoints[0].Retval != nil:
		return c.resolve(ap.Tracepoints[0].Retval.Type), true
	}
	return Type{}, false
}

// kernelFuncKind reports whether probes of kind k run at a kernel
// function's entry or return.
func kernelFuncKind(k ProbeKind) bool {
	return k == ProbeKprobe || k == ProbeKretprobe || k == ProbeKfunc || k == ProbeKretfunc
}
