package lang

// This file scopes and checks loops over maps, `for ($kv : @m)`
// (bpftrace 0.20).

import "fmt"

// scopeLoopVars gives the variable of each map loop a name of its own
// where the probe uses its name elsewhere: in bpftrace the variable lives
// only in its loop, so two loops may bind $kv to tuples of different
// types, and a $kv outside them is another variable. gotrace's variables
// are probe-wide, so the loop's becomes $kv#N.
func scopeLoopVars(prog *Program) {
	n := 0
	for _, pr := range prog.Probes {
		var loops []*ForStmt
		InspectProbe(pr, func(x Node) {
			if f, ok := x.(*ForStmt); ok && f.Map != nil {
				loops = append(loops, f)
			}
		})
		// Innermost first: an outer loop comes before the loops of its
		// body, which rename their own variables before it looks.
		for i := len(loops) - 1; i >= 0; i-- {
			f := loops[i]
			name := f.Var.Name
			inside := map[*Var]bool{}
			Inspect(f, func(x Node) {
				if v, ok := x.(*Var); ok && v.Name == name {
					inside[v] = true
				}
			})
			outside := false
			InspectProbe(pr, func(x Node) {
				if v, ok := x.(*Var); ok && v.Name == name && !inside[v] {
					outside = true
				}
			})
			if !outside {
				continue
			}
			n++
			for v := range inside {
				v.Name = fmt.Sprintf("%s#%d", name, n)
			}
		}
	}
}

// LoopValue is the type a map loop's tuple gives a value of map value
// type t, and the type of an element of such a map read as an operand,
// an argument, a condition, a variable's value or a key: the value
// itself, and an aggregation's value merged over the CPUs, count()
// unsigned, sum(), min(), max() and avg() signed.
func LoopValue(t Type) Type {
	switch t.Kind {
	case KindCount:
		return Uint64
	case KindSum, KindMin, KindMax, KindAvg:
		return Int64
	}
	return t
}

// mapLoop checks `for ($kv : @m) Body`: @m must hold keys and values a
// tuple can, and $kv is the tuple (key, value), the key a tuple itself
// for a map of several keys.
func (c *checker) mapLoop(s *ForStmt) {
	m := c.mapState(s.Map.Name, s.Map.Loc)
	kv := Type{}
	switch v := m.info.Value; {
	case !m.valueSet:
		c.laterf(s.Map.Loc, "Undefined map: %s", s.Map.Name)
	case m.keySet && m.info.Key.Kind == KindNone:
		c.errorf(s.Map.Loc, "%s has no explicit keys (scalar map), and cannot be used for iteration", s.Map.Name)
	case v.Kind == KindHist || v.Kind == KindLhist || v.Kind == KindStats || v.Kind == KindTseries:
		c.errorf(s.Map.Loc, "Loop expression does not support type: %s", typeName(v))
	case m.keySet:
		kv = Type{Kind: KindTuple, Elems: []Type{m.info.Key, LoopValue(v)}}
	}
	c.info.SetType(s.Map, m.info.Value)
	if kv.Kind != KindNone {
		c.varAssign(s.Var, kv, s.Var.Loc)
	} else {
		c.defined[s.Var.Name] = true
	}
	c.loops++
	c.block(s.Body)
	c.loops--
}
