// Package debuginfo reads the debug information (DWARF) of the files
// uprobes attach to: the parameters of a function and the types they
// name, as the language's types, which a uprobe's args reads (bpftrace
// 0.17 reads them with libdw). It owns the conversion of DWARF types into
// lang's; it attaches nothing.
package debuginfo

import (
	"debug/dwarf"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gotrace/gotrace/internal/ptregs"
	"github.com/gotrace/gotrace/lang"
	"github.com/gotrace/gotrace/lang/attachpoint"
	"github.com/gotrace/gotrace/usdt"
)

// Files reads the debug information of the files a trace's uprobes name,
// each file's once: its DWARF, the parameters of its functions and where
// its structs are defined are read on first use and kept. The zero Files
// is ready to use; it is not safe for concurrent use.
type Files struct {
	files map[string]*file
}

// file is what Files keeps of one file.
type file struct {
	data *dwarf.Data
	err  error
	// params are the formal parameters of every function, by each of its
	// names (findParams); structs the offset of the definition of every
	// named struct and union; both nil until first asked for.
	params  map[string][]param
	structs map[string]dwarf.Offset
}

// open returns what fs keeps of the file at path, reading its DWARF the
// first time.
func (fs *Files) open(path string) *file {
	if fs.files == nil {
		fs.files = map[string]*file{}
	}
	f, ok := fs.files[path]
	if !ok {
		f = &file{}
		f.data, f.err = readDWARF(path)
		fs.files[path] = f
	}
	return f
}

// functions returns the parameters of every function of f, by name and
// linkage name.
func (f *file) functions() map[string][]param {
	if f.params == nil {
		f.params = findParams(f.data)
	}
	return f.params
}

// FuncParams returns the parameters of function (its name, or its
// linkage name; or a wildcard whose functions share their parameters) in
// the ELF file path as a record of category
// lang.UprobeCategory: each field is read from the register that passes
// it (its Offset in pt_regs, by the x86-64 calling convention for
// integers and pointers), typed from the DWARF, with the structs and
// unions those types name. A parameter the registers do not pass (past
// the sixth, or after one passed another way) or of a type the language
// has not (a float, a struct by value) has no type: reading it is an
// error where the script reads it.
func (fs *Files) FuncParams(path, function string) (*lang.Tracepoint, []*lang.StructDef, error) {
	f := fs.open(path)
	if f.err != nil {
		return nil, nil, f.err
	}
	found := map[string][]param{}
	if params, ok := f.functions()[function]; ok {
		found[function] = params
	} else if strings.ContainsAny(function, "*?[") {
		for name, params := range f.functions() {
			if attachpoint.Glob.MatchFunction(function, name) {
				found[name] = params
			}
		}
	}
	if len(found) == 0 {
		return nil, nil, errNoFunction
	}
	conv := converter{data: f.data, structs: map[string]*lang.StructDef{}}
	params, err := conv.sameParams(found)
	if err != nil {
		return nil, nil, err
	}
	rec := &lang.Tracepoint{Category: lang.UprobeCategory, Name: function}
	passing := true
	for i, p := range params {
		t, ctype := conv.typeOf(p.typ)
		field := lang.TracepointField{Name: p.name, CType: ctype, Size: 8, Signed: t.Kind == lang.KindInt && t.Signed}
		off, inRegister := ptregs.ArgOffset(i)
		if !passing || !inRegister || !integerClass(t) {
			// The registers after a float or a struct by value are not
			// the next integer parameters'.
			passing = passing && integerClass(t)
			t = lang.Type{}
		}
		field.Offset, field.Type = off, t
		rec.Fields = append(rec.Fields, field)
	}
	return rec, conv.order, nil
}

// readDWARF reads the debug information of the ELF file at path, or of
// its separate debug file (usdt.File.DWARF). The file is closed after:
// the sections are read into memory.
func readDWARF(path string) (*dwarf.Data, error) {
	f, err := usdt.OpenFile(path)
	if err != nil {
		return nil, fmt.Errorf("read debug information: %w", err)
	}
	defer f.Close()
	return f.DWARF()
}

// sameParams returns the parameters the functions found share: a
// wildcard's functions must have the same names and types in the same
// order, else lang.ErrMixedArgs, as bpftrace 0.17 refuses them.
func (c *converter) sameParams(found map[string][]param) ([]param, error) {
	var first []param
	var firstLines []string
	for i, name := range slices.Sorted(maps.Keys(found)) {
		lines := c.paramLines(found[name])
		if i == 0 {
			first, firstLines = found[name], lines
		} else if !slices.Equal(lines, firstLines) {
			return nil, lang.ErrMixedArgs
		}
	}
	return first, nil
}

// paramLines spells params as bpftrace lists them under a uprobe, "TYPE
// NAME", without converting their types.
func (c *converter) paramLines(params []param) []string {
	lines := make([]string, len(params))
	for i, p := range params {
		lines[i] = c.cNameAt(p.typ) + " " + p.name
	}
	return lines
}

// integerClass reports whether a parameter of type t is passed in one
// general-purpose register: an integer or a pointer.
func integerClass(t lang.Type) bool {
	return (t.Kind == lang.KindInt && t.Size <= 8) || t.Kind == lang.KindPointer
}

// param is one formal parameter of a function's DWARF.
type param struct {
	name string
	typ  dwarf.Offset
}

// errNoFunction is returned when the DWARF has no definition of the
// function.
var errNoFunction = errors.New("no function of that name in the debug information")

// findParams returns the formal parameters of every function of d, by
// each of its names (name and linkage name): the definition's (a
// subprogram with code, DW_AT_low_pc), or where there is none the
// subprogram's with the most parameters, following DW_AT_abstract_origin
// and DW_AT_specification for names and types. DWARF that cannot be read
// further ends the walk with what was read.
func findParams(d *dwarf.Data) map[string][]param {
	r := d.Reader()
	defined := map[string][]param{}
	declared := map[string][]param{}
	for {
		e, err := r.Next()
		if err != nil || e == nil {
			break
		}
		if e.Tag != dwarf.TagSubprogram || !e.Children {
			continue
		}
		names := subprogramNames(d, e)
		params, err := childParams(d, r)
		if err != nil {
			break
		}
		for _, name := range names {
			switch _, done := defined[name]; {
			case done:
			case e.Val(dwarf.AttrLowpc) != nil:
				defined[name] = params
			case len(params) >= len(declared[name]):
				declared[name] = params
			}
		}
	}
	for name, params := range declared {
		if _, ok := defined[name]; !ok {
			defined[name] = params
		}
	}
	return defined
}

// origin returns the entry e refers to for its name and type
// (DW_AT_abstract_origin, DW_AT_specification), 0 if none.
func origin(e *dwarf.Entry) dwarf.Offset {
	for _, attr := range []dwarf.Attr{dwarf.AttrAbstractOrigin, dwarf.AttrSpecification} {
		if off, ok := e.Val(attr).(dwarf.Offset); ok {
			return off
		}
	}
	return 0
}

// entryAt reads the entry at off, nil where there is none.
func entryAt(d *dwarf.Data, off dwarf.Offset) *dwarf.Entry {
	r := d.Reader()
	r.Seek(off)
	e, err := r.Next()
	if err != nil {
		return nil
	}
	return e
}

// childParams reads the children of the subprogram r just read, up to
// its end, and returns its formal parameters in order.
func childParams(d *dwarf.Data, r *dwarf.Reader) ([]param, error) {
	var params []param
	for {
		e, err := r.Next()
		if err != nil {
			return nil, fmt.Errorf("read debug information: %w", err)
		}
		if e == nil || e.Tag == 0 {
			return params, nil
		}
		if e.Tag == dwarf.TagFormalParameter {
			params = append(params, paramOf(d, e))
		}
		if e.Children {
			r.SkipChildren()
		}
	}
}

// paramOf reads a formal parameter's name and type, from the abstract
// instance it refers to where it has none of its own.
func paramOf(d *dwarf.Data, e *dwarf.Entry) param {
	p := param{}
	for range 4 {
		if p.name == "" {
			p.name, _ = e.Val(dwarf.AttrName).(string)
		}
		if p.typ == 0 {
			p.typ, _ = e.Val(dwarf.AttrType).(dwarf.Offset)
		}
		ref := origin(e)
		if (p.name != "" && p.typ != 0) || ref == 0 {
			break
		}
		if e = entryAt(d, ref); e == nil {
			break
		}
	}
	return p
}

// converter turns DWARF types into the language's, collecting the structs
// they name (order, each once by name).
type converter struct {
	data    *dwarf.Data
	structs map[string]*lang.StructDef
	order   []*lang.StructDef
}

// typeOf converts the type at off and returns it with its C spelling, as
// bpftrace lists parameters (int*, struct Foo*, char**).
func (c *converter) typeOf(off dwarf.Offset) (lang.Type, string) {
	if off == 0 {
		return lang.Type{}, "void"
	}
	t, err := c.data.Type(off)
	if err != nil {
		return lang.Type{}, "?"
	}
	return c.convert(t, 0), cName(t, 0)
}

// cNameAt is the C spelling of the type at off, as typeOf gives it.
func (c *converter) cNameAt(off dwarf.Offset) string {
	if off == 0 {
		return "void"
	}
	t, err := c.data.Type(off)
	if err != nil {
		return "?"
	}
	return cName(t, 0)
}

// maxDepth bounds how deep a type is followed: malformed DWARF can make
// a typedef or a pointer its own target, and a real type nests a few
// levels.
const maxDepth = 32

// convert turns t into the language's type: integers by size and sign,
// pointers to what they point to, structs and unions by name (their
// definitions collected), char arrays as strings, other arrays of
// integers as arrays; anything else (floats, functions, anonymous
// structs) is no type.
func (c *converter) convert(t dwarf.Type, depth int) lang.Type {
	if depth > maxDepth {
		return lang.Type{}
	}
	depth++
	switch t := t.(type) {
	case *dwarf.QualType:
		return c.convert(t.Type, depth)
	case *dwarf.TypedefType:
		return c.convert(t.Type, depth)
	case *dwarf.IntType, *dwarf.CharType:
		return intOf(t.Size(), true)
	case *dwarf.UintType, *dwarf.UcharType, *dwarf.BoolType:
		return intOf(t.Size(), false)
	case *dwarf.EnumType:
		return intOf(t.ByteSize, true)
	case *dwarf.PtrType:
		elem := c.convert(t.Type, depth)
		if elem.Kind == lang.KindNone {
			return lang.Type{Kind: lang.KindPointer, Size: 8}
		}
		return lang.Type{Kind: lang.KindPointer, Size: 8, Elem: &elem}
	case *dwarf.StructType:
		if t.StructName == "" || t.Incomplete && c.structs[t.StructName] == nil {
			return lang.Type{}
		}
		c.defineStruct(t, depth)
		return lang.Type{Kind: lang.KindStruct, Struct: t.StructName, Size: int(t.ByteSize)}
	case *dwarf.ArrayType:
		elem := c.convert(t.Type, depth)
		if t.Count <= 0 || t.Count > 1<<20 || elem.Kind != lang.KindInt {
			return lang.Type{}
		}
		if _, isChar := underlying(t.Type).(*dwarf.CharType); isChar {
			return lang.String(int(t.Count))
		}
		// DWARF gives an array no byte size where it is its count's
		// elements, which is always here.
		return lang.Type{Kind: lang.KindArray, Elem: &elem, Len: int(t.Count), Size: int(t.Count) * elem.Size}
	}
	return lang.Type{}
}

// intOf is an integer of size bytes, where the language has one.
func intOf(size int64, signed bool) lang.Type {
	switch size {
	case 1, 2, 4, 8:
		return lang.Int(int(size), signed)
	}
	return lang.Type{}
}

// underlying strips typedefs and qualifiers from t.
func underlying(t dwarf.Type) dwarf.Type {
	for range maxDepth {
		switch u := t.(type) {
		case *dwarf.QualType:
			t = u.Type
		case *dwarf.TypedefType:
			t = u.Type
		default:
			return t
		}
	}
	return t
}

// defineStruct records the definition of struct (or union) t, once: a
// struct that holds a pointer to itself is defined before its members
// are converted.
func (c *converter) defineStruct(t *dwarf.StructType, depth int) {
	if _, done := c.structs[t.StructName]; done {
		return
	}
	sd := &lang.StructDef{Name: t.StructName, Size: int(t.ByteSize)}
	c.structs[t.StructName] = sd
	for _, f := range t.Field {
		if f.Name == "" {
			continue
		}
		field := lang.StructField{Name: f.Name, Type: c.convert(f.Type, depth), Offset: int(f.ByteOffset)}
		if f.BitSize > 0 {
			bit := f.DataBitOffset
			if bit == 0 && f.BitOffset != 0 {
				// DWARF 2's bit offset counts from the high end of
				// the storage unit at ByteOffset.
				bit = f.ByteOffset*8 + f.ByteSize*8 - f.BitOffset - f.BitSize
			}
			field.Offset, field.BitShift, field.Bits = int(bit/8), int(bit%8), int(f.BitSize)
		}
		sd.Fields = append(sd.Fields, field)
	}
	c.order = append(c.order, sd)
}

// cName spells t as bpftrace lists a parameter's type: the C name, with
// pointers written as a * after it without a blank (char**), structs and
// unions with their keyword.
func cName(t dwarf.Type, depth int) string {
	if depth > maxDepth {
		return "?"
	}
	switch t := t.(type) {
	case *dwarf.PtrType:
		if t.Type == nil {
			return "void*"
		}
		return cName(t.Type, depth+1) + "*"
	case *dwarf.QualType:
		return t.Qual + " " + cName(t.Type, depth+1)
	case *dwarf.StructType:
		return t.Kind + " " + t.StructName
	case *dwarf.EnumType:
		return "enum " + t.EnumName
	case *dwarf.TypedefType:
		return t.Name
	case *dwarf.VoidType:
		return "void"
	}
	return strings.TrimSpace(t.Common().Name)
}

// ParamLines returns the parameters of function in the ELF file path as
// "TYPE NAME" lines, for `-lv`, as bpftrace 0.17 lists them under each
// uprobe ("int* n"); none where the file has no debug information for it.
func (fs *Files) ParamLines(path, function string) []string {
	f := fs.open(path)
	if f.err != nil {
		return nil
	}
	params, ok := f.functions()[function]
	if !ok {
		return nil
	}
	conv := converter{data: f.data}
	return conv.paramLines(params)
}

// subprogramNames returns the name and linkage name of subprogram e, or
// of the declaration or abstract instance it refers to.
func subprogramNames(d *dwarf.Data, e *dwarf.Entry) []string {
	var names []string
	for range 4 {
		for _, attr := range []dwarf.Attr{dwarf.AttrName, dwarf.AttrLinkageName} {
			if s, ok := e.Val(attr).(string); ok {
				names = append(names, s)
			}
		}
		ref := origin(e)
		if len(names) > 0 || ref == 0 {
			return names
		}
		if e = entryAt(d, ref); e == nil {
			return names
		}
	}
	return names
}

// Structs returns the struct or union called name that the DWARF of the
// ELF file path defines, first, with the structs and unions its members
// name; nil where there is none (or no DWARF).
func (fs *Files) Structs(path, name string) []*lang.StructDef {
	f := fs.open(path)
	if f.err != nil {
		return nil
	}
	off, ok := f.structOffsets()[name]
	if !ok {
		return nil
	}
	t, err := f.data.Type(off)
	if err != nil {
		return nil
	}
	st, ok := t.(*dwarf.StructType)
	if !ok {
		return nil
	}
	conv := converter{data: f.data, structs: map[string]*lang.StructDef{}}
	conv.defineStruct(st, 0)
	// The struct asked for first: its members' are defined before it.
	sd := conv.structs[name]
	return append([]*lang.StructDef{sd}, slices.DeleteFunc(conv.order, func(s *lang.StructDef) bool { return s == sd })...)
}

// structOffsets returns where f's DWARF defines each named struct, union
// and class (the first definition of a name; declarations left out).
func (f *file) structOffsets() map[string]dwarf.Offset {
	if f.structs != nil {
		return f.structs
	}
	f.structs = map[string]dwarf.Offset{}
	r := f.data.Reader()
	for {
		e, err := r.Next()
		if err != nil || e == nil {
			return f.structs
		}
		if e.Tag != dwarf.TagStructType && e.Tag != dwarf.TagUnionType && e.Tag != dwarf.TagClassType {
			continue
		}
		if e.Children {
			r.SkipChildren()
		}
		name, _ := e.Val(dwarf.AttrName).(string)
		if _, seen := f.structs[name]; name != "" && !seen && e.Val(dwarf.AttrDeclaration) == nil {
			f.structs[name] = e.Offset
		}
	}
}
