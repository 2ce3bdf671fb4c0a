package lang

// This file types the args of tracepoint probes: the fields of each
// tracepoint's record, which the Host reads from its format file.

import (
	"fmt"
	"strings"
)

// TracepointHost is implemented by a Host that knows the kernel's
// tracepoints. Resolve asks it for the tracepoints each attach point
// names; without it, a tracepoint probe's args cannot be typed.
type TracepointHost interface {
	// Tracepoints returns the tracepoints category:name matches, where
	// both may hold * and ? wildcards, in bpftrace's order, or an error
	// when tracepoints cannot be read at all.
	Tracepoints(category, name string) ([]*Tracepoint, error)
	// IntTypedef returns the size and sign of the integer a kernel type
	// name (umode_t, pid_t) stands for, as the kernel's BTF defines it.
	IntTypedef(name string) (size int, signed bool, ok bool)
}

// Tracepoint is one kernel tracepoint and the fields of its record, or
// for kfunc and kretfunc probes a kernel function and its parameters
// (IsKernelFunc).
type Tracepoint struct {
	Category, Name string
	// Fields are the record's fields after the common ones, in order.
	Fields []TracepointField
	// Retval is a kernel function's return value, nil for a tracepoint
	// and for a function that returns void.
	Retval *TracepointField
}

// TracepointField is one field of a tracepoint's record, as its format
// file declares it.
type TracepointField struct {
	Name string
	// CType is the declared C type without the name and array bounds:
	// "const char *", "unsigned int", "umode_t", "char" for char[16].
	CType string
	// Offset and Size are the field's place in the record.
	Offset, Size int
	Signed       bool
	// ArrayLen is the element count of an array field, 0 for others.
	ArrayLen int
	// DataLoc marks a __data_loc field: a u32 whose low half is the
	// offset of the data in the record and whose high half its length.
	DataLoc bool
	// Type is the field's type in the language; Resolve sets it.
	Type Type
}

// StructName is the name bpftrace 0.17 gives the record of tp in its
// messages (a kernel function's: kfunc:NAME).
func (tp *Tracepoint) StructName() string {
	if tp.IsKernelFunc() {
		return "kfunc:" + tp.Name
	}
	return "_tracepoint_" + tp.Category + "_" + tp.Name
}

// Field returns tp's field called name.
func (tp *Tracepoint) Field(name string) (*TracepointField, bool) {
	for i := range tp.Fields {
		if tp.Fields[i].Name == name {
			return &tp.Fields[i], true
		}
	}
	return nil, false
}

// resolveTracepoint finds the tracepoints ap names and types their
// fields.
func resolveTracepoint(ap *AttachPoint, host TracepointHost) error {
	tps, err := host.Tracepoints(ap.Target, ap.Func)
	if err != nil {
		return err
	}
	if len(tps) == 0 {
		return fmt.Errorf("tracepoint not found: %s:%s", ap.Target, ap.Func)
	}
	for _, tp := range tps {
		for i := range tp.Fields {
			tp.Fields[i].Type = tracepointFieldType(&tp.Fields[i], host)
		}
	}
	ap.Tracepoints = tps
	return nil
}

// widened reports whether name is one of the integer types (cTypeName's
// spelling) that bpftrace 0.17 widens to the field's size when the
// format file gives them 8 bytes, as the syscall tracepoints do for every
// argument; other types keep their C size.
func widened(name string) bool {
	switch name {
	case "int", "unsigned", "u32", "pid_t", "uid_t", "gid_t":
		return true
	}
	return false
}

// tracepointFieldType types a field as bpftrace 0.17 does: char arrays
// are strings, __data_loc fields the 8-byte address of their data,
// pointers pointers, other arrays arrays in the record (Local: the
// kernel's memory), and integers take the size of their C type (a
// kernel typedef's from BTF) except the widened ones; what none of these
// describes is an integer of the format's size and sign.
func tracepointFieldType(f *TracepointField, host TracepointHost) Type {
	decl := strings.TrimSpace(f.CType)
	pointer := strings.HasSuffix(decl, "*")
	base := cTypeName(strings.Fields(strings.TrimRight(decl, "* ")))
	switch {
	case f.DataLoc:
		return Uint64
	case pointer && strings.Contains(strings.TrimSuffix(decl, "*"), "*"):
		return Type{Kind: KindPointer, Size: 8}
	case pointer:
		if t, ok := cType(base); ok {
			return Type{Kind: KindPointer, Size: 8, Elem: &t}
		}
		for _, prefix := range []string{"struct ", "union "} {
			if name, ok := strings.CutPrefix(base, prefix); ok {
				// A kernel type: the checker looks it up in the BTF.
				return Type{Kind: KindPointer, Size: 8, Elem: &Type{Kind: KindStruct, Struct: name}}
			}
		}
		return Type{Kind: KindPointer, Size: 8}
	case f.ArrayLen > 0 && (base == "char" || base == "unsigned char" || base == "signed char"):
		return String(f.ArrayLen)
	case f.ArrayLen > 0:
		elem := Int(f.Size/f.ArrayLen, f.Signed)
		return Type{Kind: KindArray, Elem: &elem, Len: f.ArrayLen, Size: f.Size, Local: true}
	case f.Size == 8 && widened(base):
		return Int(8, base == "int")
	}
	if t, ok := cType(base); ok {
		return t
	}
	if size, signed, ok := host.IntTypedef(base); ok {
		return Int(size, signed)
	}
	if f.Size == 1 || f.Size == 2 || f.Size == 4 || f.Size == 8 {
		return Int(f.Size, f.Signed)
	}
	return Type{Kind: KindArray, Elem: &Type{Kind: KindInt, Size: 1}, Len: f.Size, Size: f.Size, Local: true}
}

// argsType is the type of args in a tracepoint probe: a pointer to the
// record of its first tracepoint (the others are checked field by field).
func argsType(tp *Tracepoint) Type {
	return Type{Kind: KindPointer, Size: 8, Elem: &Type{Kind: KindStruct, Struct: tp.StructName()}}
}

// argsField types `args->name` (or newer bpftrace's `args.name`) in a
// tracepoint probe: every tracepoint of the probe must have the field.
func (c *checker) argsField(e *FieldAccess) Type {
	var t Type
	first := true
	for _, ap := range c.attach {
		for _, tp := range ap.Tracepoints {
			f, ok := tp.Field(e.Field)
			if !ok && tp.IsUprobeFunc() {
				c.errorf(e.Loc, "Can't find function parameter %s", e.Field)
				return Type{}
			}
			if ok && tp.IsUprobeFunc() && f.Type.Kind == KindNone {
				c.errorf(e.Loc, "parameter %s (%s) cannot be read: gotrace reads the parameters passed in the integer registers (integers and pointers, up to the sixth, before any float or struct passed by value)", e.Field, f.CType)
				return Type{}
			}
			if !ok {
				c.errorf(e.Loc, "Struct/union of type 'struct %s' does not contain a field named '%s'", tp.StructName(), e.Field)
				return Type{}
			}
			if first {
				t, first = f.Type, false
			}
		}
	}
	return c.resolve(t)
}

// tracepointArgs reports whether e is the args of a tracepoint probe
// whose tracepoints Resolve found.
func (c *checker) tracepointArgs(e Expr) bool {
	b, ok := e.(*Builtin)
	if !ok || b.Name != "args" || c.probe == nil || len(c.attach) == 0 {
		return false
	}
	for _, ap := range c.attach {
		if len(ap.Tracepoints) == 0 {
			return false
		}
	}
	return true
}
