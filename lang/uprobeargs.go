package lang

// This file types the args of a uprobe: the parameters of the function it
// attaches to, from the debug information (DWARF) of its file, as bpftrace
// 0.17 reads them with libdw.

import (
	"errors"
	"fmt"
	"strings"
)

// DebugInfoHost is a Host that reads the debug information of uprobe
// targets. lang opens no file: the caller reads the DWARF.
type DebugInfoHost interface {
	// FuncParams returns the parameters of function in the ELF file path
	// as a record (Tracepoint of category "uprobe"), each field the
	// register that passes it (Offset in pt_regs), with the structs and
	// unions their types name, or an error that says why there are none.
	FuncParams(path, function string) (*Tracepoint, []*StructDef, error)
	// Structs returns the struct or union called name that the ELF file
	// path's DWARF defines, first, with those its members name; none
	// where the file has no such definition.
	Structs(path, name string) []*StructDef
}

// ErrMixedArgs is bpftrace 0.17's refusal of a uprobe whose wildcard
// matches functions whose parameters differ, which one args cannot type.
var ErrMixedArgs = errors.New("Probe has attach points with mixed arguments")

// UprobeCategory is the Category of the record of a uprobe's function:
// its fields are the parameters, each read from the register that passes
// it (an 8-byte slot of the program's context, pt_regs).
const UprobeCategory = "uprobe"

// IsUprobeFunc reports whether tp is the record of a user function's
// parameters (DebugInfoHost).
func (tp *Tracepoint) IsUprobeFunc() bool { return tp.Category == UprobeCategory }

// resolveUprobeArgs finds the parameters of the function a uprobe attach
// point names, for a probe that reads args, and records the structs they
// name in info.
func resolveUprobeArgs(p *Program, ap *AttachPoint, host DebugInfoHost, info *Info) error {
	if ap.Func == "" || strings.ContainsAny(ap.Target, "*?[") {
		return fmt.Errorf("args of a uprobe needs a function of one file, the file named without a wildcard: %s", ap.Raw)
	}
	rec, structs, err := host.FuncParams(ap.Target, ap.Func)
	if errors.Is(err, ErrMixedArgs) {
		return err
	}
	if err != nil {
		return fmt.Errorf("args of %s: %w", ap.Raw, err)
	}
	ap.Tracepoints = []*Tracepoint{rec}
	info.addTargetStructs(p, structs)
	return nil
}

// resolveCastStructs looks up, in the DWARF of the uprobe's file, the
// structs the probe casts to that the script does not define, as bpftrace
// 0.17 does: (struct Foo *)arg0 without a struct Foo in the script.
func resolveCastStructs(p *Program, pr *Probe, ap *AttachPoint, host DebugInfoHost, info *Info) {
	InspectProbe(pr, func(n Node) {
		cast, ok := n.(*Cast)
		if !ok {
			return
		}
		t := cast.To
		for t.Kind == KindPointer && t.Elem != nil {
			t = *t.Elem
		}
		if t.Kind != KindStruct || info.StructDef(p, t.Struct) != nil {
			return
		}
		info.addTargetStructs(p, host.Structs(ap.Target, t.Struct))
	})
}

// usesArgs reports whether the probe reads the args builtin.
func usesArgs(pr *Probe) bool {
	found := false
	InspectProbe(pr, func(n Node) {
		if b, ok := n.(*Builtin); ok && b.ID == VarArgs {
			found = true
		}
	})
	return found
}

// uprobeArgsUnresolved reports whether the probe is a uprobe whose
// function's parameters Resolve looked for and did not find (it reported
// why), so that args is not typed again as a pointer to nothing.
func (c *checker) uprobeArgsUnresolved() bool {
	if _, reads := c.cfg.Host.(DebugInfoHost); !reads {
		return false
	}
	for _, ap := range c.attach {
		if ap.Kind == ProbeUprobe && len(ap.Tracepoints) == 0 {
			return true
		}
	}
	return false
}
