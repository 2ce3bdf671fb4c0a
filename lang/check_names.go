package lang

import "github.com/gotrace/gotrace/internal/ptregs"

// This file types names: scratch variables, builtin variables and
// positional parameters.

// varRead types a read of a scratch variable.
func (c *checker) varRead(v *Var) Type {
	if !c.defined[v.Name] {
		c.errorf(v.Loc, "Undefined or undeclared variable: %s", v.Name)
		SetType(v, Type{})
		return Type{}
	}
	t := c.vars[c.probe][v.Name]
	SetType(v, t)
	return t
}

// varAssign records that v is assigned a value of type t.
func (c *checker) varAssign(v *Var, t Type, opSpan Span) {
	c.defined[v.Name] = true
	vars := c.vars[c.probe]
	cur, ok := vars[v.Name]
	switch {
	case t.Kind == KindNone:
	case !ok || cur.Kind == KindNone:
		vars[v.Name] = t
		c.changed = true
	default:
		merged, ok := mergeTypes(cur, t)
		switch {
		case !ok && cur.Kind == KindTuple && t.Kind == KindTuple:
			c.laterf(opSpan, "Tuple type mismatch: %s != %s.", typeName(cur), typeName(t))
		case !ok:
			c.errorf(opSpan, "Type mismatch for %s: trying to assign value of type '%s' when variable already contains a value of type '%s'", v.Name, typeName(t), typeName(cur))
		case !merged.Equal(cur):
			vars[v.Name] = merged
			c.changed = true
		}
	}
	SetType(v, vars[v.Name])
}

// builtin types a builtin variable and checks that the probe allows it.
func (c *checker) builtin(e *Builtin) Type {
	if n := argIndex(e.Name); n >= 0 {
		for _, k := range c.probeKinds() {
			switch k {
			case ProbeUSDT:
				// Any argN the probe's note describes; codegen checks N
				// against the note.
			case ProbeUprobe, ProbeKprobe:
				// bpftrace 0.17 reads only the arguments passed in
				// registers.
				if _, ok := ptregs.ArgOffset(n); !ok {
					c.errorf(e.Loc, "x86_64 doesn't support %s", e.Name)
				}
			default:
				c.errorf(e.Loc, "The %s builtin can only be used with 'kprobes', 'uprobes' and 'usdt' probes", e.Name)
			}
		}
		return Uint64
	}
	t, ok := builtinVars[e.Name]
	if !ok {
		if unsupportedBuiltins[e.Name] {
			c.errorf(e.Loc, "The %s builtin is not supported by gotrace", e.Name)
		} else {
			hint := ""
			if near := ClosestName(e.Name, sortedNames(builtinVars)); near != "" {
				hint = "did you mean " + near + "?"
			}
			c.hintf(e.Loc, hint, "Unknown identifier: '%s'", e.Name)
		}
		return Type{}
	}
	if e.Name == "cpid" && !c.cfg.Child {
		c.errorf(e.Loc, "cpid cannot be used without child command")
	}
	for _, k := range c.probeKinds() {
		switch e.Name {
		case "retval":
			if k != ProbeUretprobe && k != ProbeKretprobe {
				c.errorf(e.Loc, "The retval builtin can only be used with 'kretprobe' and 'uretprobe' and 'kfunc' probes")
			}
		case "func":
			if k != ProbeUprobe && k != ProbeUretprobe && k != ProbeKprobe && k != ProbeKretprobe {
				c.errorf(e.Loc, "The func builtin can not be used with '%s' probes", k.String())
			}
		}
	}
	return t
}

// param types $N or $# used as a number.
func (c *checker) param(e *PositionalParam) Type {
	if e.Count {
		return Int64
	}
	c.numParams = max(c.numParams, e.N)
	if v, ok := c.paramValue(e.N); ok {
		if _, err := parseParamInt(v); err != nil {
			c.laterf(e.Loc, "$%d used numerically but given %q. Try using str($%d).", e.N, v, e.N)
		}
	}
	return Int64
}

// paramValue returns $n's text, and false when it was not given.
func (c *checker) paramValue(n int) (string, bool) {
	if n < 1 || n > len(c.cfg.Params) {
		return "", false
	}
	return c.cfg.Params[n-1], true
}
