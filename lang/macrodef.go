package lang

import (
	"fmt"
	"strings"
)

// This file reads `macro NAME(PARAMS) { BODY }` definitions (bpftrace
// 0.24) and expands their calls once the script has parsed, so that the
// checker and code generator only see ordinary statements and block
// expressions. A call becomes a BlockExpr of the body with the parameters
// bound as bpftrace's hygiene rules say:
//
//   - a `$x` parameter takes a variable, which the body then reads and
//     writes under the caller's name;
//   - an `@x` parameter takes a map, likewise;
//   - an `x` parameter takes any expression, evaluated where the body
//     names x (each time it does);
//   - every other variable of the body is the macro's own: it is renamed
//     for each expansion, so it never meets one of the caller's.

// macroDef is one macro definition.
type macroDef struct {
	name   string
	loc    Span
	params []lexToken
	body   *Block
}

// macroDef parses a macro definition at the top level and records it.
func (p *parser) macroDef() {
	start := p.tok()
	p.next()
	name := p.tok()
	p.next()
	p.expect("(", "(")
	m := &macroDef{name: name.Value}
	for !p.is(")") {
		switch t := p.tok(); t.Type {
		case tokVar, tokMap, tokIdent:
			m.params = append(m.params, t)
			p.next()
		default:
			p.fail("variable or map or identifier")
		}
		if !p.is(")") {
			p.expect(",", `) or ","`)
		}
	}
	p.next()
	m.body = p.block()
	m.loc = p.span(start)
	if p.macros == nil {
		p.macros = map[string]*macroDef{}
	}
	key := macroKey(m.name, len(m.params))
	if prev, ok := p.macros[key]; ok {
		p.errorf(m.loc, "Redefinition of macro: %s (first defined at line %d)", m.name, prev.loc.Start.Line)
		return
	}
	p.macros[key] = m
}

// macroKey names a macro by its name and its number of parameters: macros
// of one name and different arities are different macros.
func macroKey(name string, params int) string {
	return fmt.Sprintf("%s/%d", name, params)
}

// expandMacros is the pass that replaces the macro calls of every probe
// by their bodies, with the macros the parser recorded.
func expandMacros(prog *Program) error {
	if len(prog.macros) == 0 {
		return nil
	}
	x := &expander{macros: prog.macros}
	for _, pr := range prog.Probes {
		if pr.Pred != nil {
			pr.Pred = mapExpr(pr.Pred, x.expand)
		}
		pr.Body = mapStmt(pr.Body, x.expand).(*Block)
	}
	if len(x.errs) > 0 {
		return x.errs
	}
	return nil
}

// expander expands macro calls; n counts the expansions, which name the
// renamed variables, stack holds the macros being expanded and errs the
// misused macros.
type expander struct {
	macros map[string]*macroDef
	n      int
	stack  []*macroDef
	errs   ErrorList
}

func (x *expander) errorf(s Span, format string, args ...any) {
	x.errs = append(x.errs, &Error{Span: s, Msg: fmt.Sprintf(format, args...)})
}

// expand is mapExpr's function: it returns the expansion of e when e is
// a macro call (its arguments already expanded), else e.
func (x *expander) expand(e Expr) Expr {
	var name string
	var args []Expr
	switch c := e.(type) {
	case *Call:
		name, args = c.Name, c.Args
	case *Builtin:
		name = c.Name
	default:
		return e
	}
	m, ok := x.macros[macroKey(name, len(args))]
	if !ok {
		return e
	}
	for i, active := range x.stack {
		if active == m {
			var chain strings.Builder
			for _, c := range x.stack[i:] {
				chain.WriteString(c.name + " > ")
			}
			x.errorf(e.Span(), "Recursive macro call detected. Call chain: %s%s", chain.String(), name)
			return e
		}
	}
	x.n++
	b := binding{vars: map[string]string{}, maps: map[string]string{}, exprs: map[string]Expr{}, own: fmt.Sprintf("$__%s_%d_", name, x.n)}
	for i, prm := range m.params {
		arg := args[i]
		switch prm.Type {
		case tokVar:
			v, ok := arg.(*Var)
			if !ok {
				x.errorf(arg.Span(), "Mismatched arg to macro call. Macro %s expects a variable for arg %s", name, prm.Value)
				return e
			}
			b.vars[prm.Value] = v.Name
		case tokMap:
			mp, ok := arg.(*MapExpr)
			if !ok || mp.Keys != nil {
				x.errorf(arg.Span(), "Mismatched arg to macro call. Macro %s expects a map for arg %s", name, prm.Value)
				return e
			}
			b.maps[prm.Value] = mp.Name
		default:
			b.exprs[prm.Value] = arg
		}
	}
	body := mapStmt(m.body, b.bind).(*Block)
	out := blockExpr(body)
	out.Loc = e.Span()
	x.stack = append(x.stack, m)
	defer func() { x.stack = x.stack[:len(x.stack)-1] }()
	return mapExpr(out, x.expand)
}

// binding says what a macro's parameters and own variables become in one
// expansion.
type binding struct {
	vars  map[string]string
	maps  map[string]string
	exprs map[string]Expr
	// own prefixes the names of the body's own variables.
	own string
}

// bind is mapExpr's function for a macro body: it renames variables and
// maps and puts the arguments of expression parameters in.
func (b *binding) bind(e Expr) Expr {
	switch e := e.(type) {
	case *Var:
		if to, ok := b.vars[e.Name]; ok {
			e.Name = to
		} else {
			e.Name = b.own + e.Name[1:]
		}
	case *MapExpr:
		if to, ok := b.maps[e.Name]; ok {
			e.Name = to
		}
	case *Builtin:
		if arg, ok := b.exprs[e.Name]; ok {
			return mapExpr(arg, keep)
		}
	}
	return e
}
