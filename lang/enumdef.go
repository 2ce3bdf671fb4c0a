package lang

import "math"

// This file reads C enum definitions at the top level of a script,
// `enum [NAME] { A [= N], B, ... };`, as bpftrace does (0.17 through its
// clang parser): each enumerator becomes an integer constant, and
// `(enum NAME)x` casts to the enum's integer type. Like C, an enumerator
// without a value is one more than the one before it, the first 0.
// Current bpftrace prints a value of an enum type (an enumerator, or a
// cast to the enum) by its enumerator's name; the type carries the Enum
// for that.

// Enum is an enum the script defines.
type Enum struct {
	// Names are its enumerators' names by value; of enumerators with the
	// same value, the first defined.
	Names map[int64]string
}

// enumerator is one enumerator of an enum: its value and its enum.
type enumerator struct {
	value int64
	enum  *Enum
}

// enumType is the type of the enum def's values: a C int, which bpftrace
// widens to 64 bits.
func enumType(def *Enum) Type {
	t := Int64
	t.Enum = def
	return t
}

// enumDef parses an enum definition and records its enumerators.
func (p *parser) enumDef() {
	p.next()
	name := ""
	if p.tok().Type == tokIdent {
		name = p.tok().Value
		p.next()
	}
	p.expect("{", "{")
	if p.enumValues == nil {
		p.enumValues, p.enums = map[string]enumerator{}, map[string]*Enum{}
	}
	def := &Enum{Names: map[int64]string{}}
	if name != "" {
		p.enums[name] = def
	}
	next := int64(0)
	for !p.is("}") {
		t := p.tok()
		if t.Type != tokIdent {
			p.fail("identifier")
		}
		p.next()
		if p.is("=") {
			p.next()
			neg := false
			if p.is("-") {
				neg = true
				p.next()
			}
			v := p.tok()
			if v.Type != tokInt {
				p.fail("integer")
			}
			p.next()
			n, _ := parseInt(v.Value) // validated by the lexer
			switch {
			case n > math.MaxInt64 && !(neg && n == 1<<63):
				p.errorf(tokSpan(v), "enum value %s is out of range", v.Value)
			case neg:
				next = -int64(n)
			default:
				next = int64(n)
			}
		}
		if _, dup := p.enumValues[t.Value]; dup {
			p.errorf(tokSpan(t), "redefinition of enumerator '%s'", t.Value)
		}
		p.enumValues[t.Value] = enumerator{next, def}
		if _, named := def.Names[next]; !named {
			def.Names[next] = t.Value
		}
		next++
		if !p.is("}") {
			p.expect(",", `} or ","`)
		}
	}
	p.next()
	if p.is(";") {
		p.next()
	}
}

// replaceEnumValues is the pass that makes every identifier that names
// an enumerator the parser recorded an integer literal of its value and
// enum.
func replaceEnumValues(prog *Program) {
	if len(prog.enumValues) == 0 {
		return
	}
	lit := func(e Expr) Expr {
		b, ok := e.(*Builtin)
		if !ok {
			return e
		}
		en, ok := prog.enumValues[b.Name]
		if !ok {
			return e
		}
		if v := en.value; v < 0 {
			u := &Unary{Op: "-", OpLoc: b.Loc, X: &IntLit{ExprBase: ExprBase{Loc: b.Loc}, Value: uint64(-v)}}
			u.Loc = b.Loc
			return u
		}
		return &IntLit{ExprBase: ExprBase{Loc: b.Loc}, Value: uint64(en.value), Enum: en.enum}
	}
	mapProbes(prog, lit)
}
