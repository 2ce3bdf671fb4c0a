package lang

// This file gives scripts the kernel's types: a struct or union the
// script does not define is looked up in the kernel's BTF, which the
// Kernel interface hands over, and converted into a StructDef the
// checker and codegen use as they use the script's own.

import (
	"errors"
	"fmt"
	"go/constant"
	"slices"
	"strings"

	"github.com/cilium/ebpf/btf"
)

// Kernel is what the checker asks of the running kernel. lang opens no
// file: the caller loads the kernel's BTF.
type Kernel interface {
	// Types returns the kernel's BTF (/sys/kernel/btf/vmlinux).
	Types() (*btf.Spec, error)
	// Symbol returns the address of the kernel symbol name
	// (/proc/kallsyms), which kaddr() reads.
	Symbol(name string) (uint64, error)
	// CgroupID returns the id of the cgroup at path (its inode in the
	// cgroup file system), which cgroupid() reads.
	CgroupID(path string) (uint64, error)
}

// structDef returns the struct called name: the script's, which take
// precedence as in bpftrace, else the kernel's from its BTF (recorded in
// Info.KernelStructs), else nil.
func (c *checker) structDef(name string) *StructDef {
	if def, ok := c.structs[name]; ok {
		return def
	}
	var defs []*StructDef
	if c.cfg.Kernel != nil {
		if spec, err := c.cfg.Kernel.Types(); err == nil {
			defs = kernelStructs(spec, name)
		}
	}
	c.structs[name] = nil
	for _, d := range defs {
		c.structs[d.Name] = d
		c.info.KernelStructs = append(c.info.KernelStructs, d)
	}
	return c.structs[name]
}

// kernelStructs converts the kernel's struct or union called name, and
// the anonymous structs its named members have, into StructDefs (name's
// first); nil when the BTF has no such struct.
func kernelStructs(spec *btf.Spec, name string) []*StructDef {
	types, err := spec.AnyTypesByName(name)
	if err != nil && !errors.Is(err, btf.ErrNotFound) {
		return nil
	}
	for _, t := range types {
		switch t.(type) {
		case *btf.Struct, *btf.Union:
			var conv btfConverter
			conv.composite(name, t)
			return conv.defs
		}
	}
	return nil
}

// btfConverter collects the StructDefs of one conversion.
type btfConverter struct {
	defs []*StructDef
}

// composite converts struct or union t under name, appending its
// StructDef before those of its anonymous members' types.
func (conv *btfConverter) composite(name string, t btf.Type) *StructDef {
	sd := &StructDef{Name: name, Kernel: true}
	conv.defs = append(conv.defs, sd)
	var members []btf.Member
	switch t := t.(type) {
	case *btf.Struct:
		sd.Size, members = int(t.Size), t.Members
	case *btf.Union:
		sd.Size, members = int(t.Size), t.Members
	}
	conv.members(sd, members, 0)
	return sd
}

// members adds the members to sd, at bitBase bits into it. An unnamed
// struct or union member's own members are sd's, as in C.
func (conv *btfConverter) members(sd *StructDef, members []btf.Member, bitBase int) {
	for _, m := range members {
		bit := bitBase + int(m.Offset)
		under := btf.UnderlyingType(m.Type)
		if m.Name == "" {
			switch u := under.(type) {
			case *btf.Struct:
				conv.members(sd, u.Members, bit)
			case *btf.Union:
				conv.members(sd, u.Members, bit)
			}
			continue
		}
		f := StructField{Name: m.Name, Offset: bit / 8}
		switch u := under.(type) {
		case *btf.Struct, *btf.Union:
			if u.TypeName() == "" {
				// A member of an unnamed struct type: the type is named
				// after the member, for the checker to find.
				inner := conv.composite(fmt.Sprintf("%s::(anonymous %s)", sd.Name, m.Name), u)
				f.Type = Type{Kind: KindStruct, Struct: inner.Name, Size: inner.Size}
				sd.Fields = append(sd.Fields, f)
				continue
			}
		}
		f.Type = kernelType(under)
		if m.BitfieldSize > 0 {
			f.Bits, f.BitShift = int(m.BitfieldSize), bit%8
		}
		sd.Fields = append(sd.Fields, f)
	}
}

// kernelType converts a BTF type (typedefs and qualifiers already
// skipped) into the language's: integers, enums and booleans are
// integers, char arrays strings, other arrays arrays, named structs and
// unions structs looked up by name, pointers pointers; what the language
// has no type for (functions) is void *.
func kernelType(t btf.Type) Type {
	switch t := t.(type) {
	case *btf.Int:
		if t.Encoding&btf.Bool != 0 {
			return Int(1, false)
		}
		return Int(int(t.Size), t.Encoding&btf.Signed != 0 || t.Name == "char")
	case *btf.Enum:
		return Int(int(t.Size), t.Signed)
	case *btf.Array:
		elem := btf.UnderlyingType(t.Type)
		if i, ok := elem.(*btf.Int); ok && i.Name == "char" {
			return String(int(t.Nelems))
		}
		et := kernelType(elem)
		size, _ := btf.Sizeof(t)
		return Type{Kind: KindArray, Elem: &et, Len: int(t.Nelems), Size: size}
	case *btf.Struct:
		return Type{Kind: KindStruct, Struct: t.Name, Size: int(t.Size)}
	case *btf.Union:
		return Type{Kind: KindStruct, Struct: t.Name, Size: int(t.Size)}
	case *btf.Pointer:
		p := Type{Kind: KindPointer, Size: 8}
		switch target := btf.UnderlyingType(t.Target).(type) {
		case *btf.Void, *btf.FuncProto, *btf.Func:
		case *btf.Struct, *btf.Union:
			if target.TypeName() != "" {
				elem := kernelType(target)
				p.Elem = &elem
			}
		default:
			elem := kernelType(target)
			if elem.Kind != KindNone {
				p.Elem = &elem
			}
		}
		return p
	}
	if size, err := btf.Sizeof(t); err == nil && size > 0 {
		// A float, as bpftrace does, reads as the integer of its bits.
		return Int(size, false)
	}
	return Type{Kind: KindPointer, Size: 8}
}

// cgroupID resolves cgroupid("path") through the Kernel, on the host at
// check time as bpftrace does: the cgroup's id, or nil with a positioned
// error (bpftrace 0.17's message, which 0.17 gives without a position,
// and the reason).
func (c *checker) cgroupID(e *Call) constant.Value {
	return c.kernelConst(e, "Failed to get `cgroupid` for path: %q", false, Kernel.CgroupID)
}

// kernelSizeofName types sizeof(name) of a name the script does not
// define from the kernel's BTF: a type (uint64_t, a typedef of a
// struct), or an enumerator, whose value bpftrace holds in 8 bytes. 0.17
// knows none of them, and its error stays the default.
func (c *checker) kernelSizeofName(name string) (Type, bool) {
	if !c.prog.Newer || c.cfg.Kernel == nil || strings.Contains(name, " ") {
		return Type{}, false
	}
	spec, err := c.cfg.Kernel.Types()
	if err != nil {
		return Type{}, false
	}
	if types, err := spec.AnyTypesByName(name); err == nil {
		for _, t := range types {
			switch u := btf.UnderlyingType(t).(type) {
			case *btf.Struct, *btf.Union:
				if def := c.structDef(u.TypeName()); def != nil {
					return Type{Kind: KindStruct, Struct: def.Name, Size: def.Size}, true
				}
			case *btf.Int, *btf.Enum, *btf.Pointer, *btf.Array:
				return kernelType(u), true
			}
		}
	}
	for t, err := range spec.All() {
		if err != nil {
			break
		}
		if e, ok := t.(*btf.Enum); ok && slices.ContainsFunc(e.Values, func(v btf.EnumValue) bool { return v.Name == name }) {
			return Int64, true
		}
	}
	return Type{}, false
}

// kernelAddr resolves kaddr("name") through the Kernel: the symbol's
// address, or nil with a positioned error where the kernel has no such
// symbol (bpftrace 0.17 fails to compile without saying where), the
// reason as its hint.
func (c *checker) kernelAddr(e *Call) constant.Value {
	return c.kernelConst(e, "Failed to resolve kernel symbol: %s", true, Kernel.Symbol)
}

// kernelConst resolves a call of one string literal through the Kernel
// with resolve: the value's bits, as codegen's 64-bit immediates take
// them, or nil with a positioned error, msg formatted with the literal,
// whose reason is the hint or follows the message.
func (c *checker) kernelConst(e *Call, msg string, hint bool, resolve func(Kernel, string) (uint64, error)) constant.Value {
	if len(e.Args) != 1 {
		return nil
	}
	lit, ok := e.Args[0].(*StrLit)
	if !ok {
		return nil
	}
	if c.cfg.Kernel == nil {
		c.errorf(e.Loc, msg, lit.Value)
		return nil
	}
	v, err := resolve(c.cfg.Kernel, lit.Value)
	switch {
	case err != nil && hint:
		c.hintf(e.Loc, err.Error(), msg, lit.Value)
		return nil
	case err != nil:
		c.errorf(e.Loc, msg+": %v", lit.Value, err)
		return nil
	}
	return constant.MakeInt64(int64(v))
}
