package lang

// This file types names: scratch variables, builtin variables and
// positional parameters.

import "github.com/gotrace/gotrace/internal/ptregs"

// varRead types a read of a scratch variable.
func (c *checker) varRead(v *Var) Type {
	if !c.defined[v.Name] {
		c.errorf(v.Loc, "Undefined or undeclared variable: %s", v.Name)
		c.info.SetType(v, Type{})
		return Type{}
	}
	t := c.vars[c.probe][v.Name]
	c.info.SetType(v, t)
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
	c.info.SetType(v, vars[v.Name])
}

// builtin resolves and types a builtin variable and checks that the probe
// allows it.
func (c *checker) builtin(e *Builtin) Type {
	b := &builtins[e.ID]
	switch {
	case e.ID == BuiltinInvalid:
		hint := ""
		if near := ClosestName(e.Name, supportedNames(classVar)); near != "" {
			hint = "did you mean " + near + "?"
		}
		c.hintf(e.Loc, hint, "Unknown identifier: '%s'", e.Name)
		return Type{}
	case b.support == notSupported:
		c.errorf(e.Loc, "The %s builtin is not supported by gotrace", e.Name)
		return Type{}
	}
	if e.ID == VarCpid && !c.cfg.Child {
		c.errorf(e.Loc, "cpid cannot be used without child command")
	}
	for _, k := range c.probeKinds() {
		switch {
		case !b.probes.allows(k):
			c.errorf(e.Loc, b.probeMsg, e.Name, k.String(), k.TypeName())
		case e.ID == VarArg && (k == ProbeUprobe || k == ProbeKprobe):
			// bpftrace 0.17 reads only the arguments passed in registers.
			// USDT allows any argN its note describes; codegen checks N
			// against the note.
			if _, ok := ptregs.ArgOffset(e.ArgIndex()); !ok {
				c.errorf(e.Loc, "%s doesn't support %s", ptregs.Native.Arch, e.Name)
			}
		}
	}
	if e.ID == VarArgs && c.tracepointArgs(e) {
		return argsType(c.attach[0].Tracepoints[0])
	}
	if e.ID == VarArgs && c.uprobeArgsUnresolved() {
		// Resolve said why the function's parameters are unknown.
		return Type{}
	}
	if t, ok := c.kernelFuncBuiltin(e); ok {
		return t
	}
	// curtask is a struct task_struct * where the kernel's BTF is known,
	// a u64 elsewhere, as in bpftrace.
	if e.ID == VarCurtask && c.structDef(taskStruct) != nil {
		return Type{Kind: KindPointer, Size: 8, Elem: &Type{Kind: KindStruct, Struct: taskStruct, Size: c.structDef(taskStruct).Size}}
	}
	return b.typ
}

// taskStruct is the kernel's struct curtask points to.
const taskStruct = "task_struct"

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
