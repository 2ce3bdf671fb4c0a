package lang

// This file checks maps: their keys and values across all uses, and
// the aggregations stored in them.

import (
	"slices"
	"strings"
)

// mapState is what the checker knows about one map.
type mapState struct {
	info     *MapInfo
	keySet   bool
	valueSet bool
	lhistSet bool
	// histSet says info.HistBits holds the map's hist() bits.
	histSet bool
	// tseriesSet says info.Tseries holds the map's tseries() arguments.
	tseriesSet bool
}

// mapState returns the state of the map called name, creating it at its
// first appearance.
func (c *checker) mapState(name string, at Span) *mapState {
	m := c.maps[name]
	if m == nil {
		m = &mapState{info: &MapInfo{Name: name, Pos: at}}
		c.maps[name] = m
	}
	return m
}

// mapAccess checks the keys of m and their agreement with the map's key
// type; mismatches are reported at span.
func (c *checker) mapAccess(e *MapExpr, span Span) *mapState {
	m := c.mapState(e.Name, e.Loc)
	var key Type
	switch len(e.Keys) {
	case 0:
	case 1:
		key = c.keyType(e.Keys[0], e)
	default:
		key = Type{Kind: KindTuple}
		for _, k := range e.Keys {
			key.Elems = append(key.Elems, c.keyType(k, e))
		}
	}
	if hasNone(key) && len(e.Keys) > 0 {
		return m
	}
	if !m.keySet {
		m.keySet = true
		m.info.Key = key
		c.changed = true
		return m
	}
	merged, ok := mergeTypes(m.info.Key, key)
	if !ok {
		c.laterf(span, "Argument mismatch for %s: trying to access with arguments: [%s] when map expects arguments: [%s]", e.Name, keyArgs(key), keyArgs(m.info.Key))
		return m
	}
	if !merged.Equal(m.info.Key) {
		m.info.Key = merged
		c.changed = true
	}
	return m
}

// keyType checks one map key expression and returns its key type.
func (c *checker) keyType(k Expr, e *MapExpr) Type {
	t := c.expr(k, useAssign)
	switch {
	case t.Kind == KindTuple && c.prog.Newer:
		// bpftrace 0.22: a tuple key; alone it is the keys of a
		// multi-key map, @m[(1, 2)] is @m[1, 2].
		return storedKey(t)
	case t.Kind == KindTuple:
		c.errorf(e.Loc, "tuple cannot be used as a map key. Try a multi-key associative array instead (eg `@map[$1, $2] = ...)`.")
		return Type{}
	case t.Kind == KindInt:
		return stored(t)
	case t.Kind == KindVoid || t.IsAggregation():
		return Type{}
	}
	return t
}

// stored is integer type t as a map key or value holds it: 8 bytes, and
// a bool still a bool, an enum's value still the enum's.
func stored(t Type) Type {
	w := Int(8, t.Signed)
	w.Boolean, w.Enum = t.Boolean, t.Enum
	return w
}

// storedKey is key type t as a map holds it: integers stored, in tuples
// too.
func storedKey(t Type) Type {
	switch t.Kind {
	case KindInt:
		return stored(t)
	case KindTuple:
		elems := make([]Type, len(t.Elems))
		for i, e := range t.Elems {
			elems[i] = storedKey(e)
		}
		t.Elems = elems
	}
	return t
}

// hasNone reports whether t is or contains an unresolved type.
func hasNone(t Type) bool {
	if t.Kind == KindNone {
		return true
	}
	for _, e := range t.Elems {
		if hasNone(e) {
			return true
		}
	}
	return false
}

// keyArgs lists key types the way bpftrace 0.17's "Argument mismatch"
// message does: integers of any size as "unsigned int64".
func keyArgs(key Type) string {
	var elems []Type
	switch key.Kind {
	case KindNone:
		return ""
	case KindTuple:
		elems = key.Elems
	default:
		elems = []Type{key}
	}
	parts := make([]string, len(elems))
	for i, t := range elems {
		if t.Kind == KindInt {
			parts[i] = "unsigned int64"
		} else {
			parts[i] = typeName(t)
		}
	}
	return strings.Join(parts, ", ")
}

// mapValue types a read of map e's value.
func (c *checker) mapValue(e *MapExpr, m *mapState, report bool) Type {
	if !m.valueSet {
		if report {
			c.laterf(e.Loc, "Undefined map: %s", e.Name)
		}
		c.info.SetType(e, Type{})
		return Type{}
	}
	c.info.SetType(e, m.info.Value)
	return m.info.Value
}

// mapStore records that map e is assigned a value of type t.
func (c *checker) mapStore(e *MapExpr, m *mapState, t Type, opSpan Span) {
	if t.Kind == KindInt {
		t = stored(t)
	}
	switch {
	case t.Kind == KindNone || t.Kind == KindVoid:
	case !m.valueSet:
		m.valueSet = true
		m.info.Value = t
		c.changed = true
	default:
		merged, ok := mergeTypes(m.info.Value, t)
		switch {
		case !ok && m.info.Value.Kind == KindTuple && t.Kind == KindTuple:
			c.laterf(opSpan, "Tuple type mismatch: %s != %s.", typeName(m.info.Value), typeName(t))
		case !ok:
			// bpftrace 0.17 leaves the last quote out.
			c.errorf(e.Loc, "Type mismatch for %s: trying to assign value of type '%s' when map already contains a value of type '%s", e.Name, typeName(t), typeName(m.info.Value))
		case !merged.Equal(m.info.Value):
			m.info.Value = merged
			c.changed = true
		}
	}
}

// lhistStore checks that every lhist() stored in a map has the same
// bounds.
func (c *checker) lhistStore(name string, m *mapState, call *Call) {
	p, ok := c.lhistParams(call)
	if !ok || m.info.Value.Kind != KindLhist {
		return
	}
	storeParams(c, &m.lhistSet, &m.info.Lhist, p, call.Loc, "lhist")
}

// storeParams records p, the constant arguments of an aggregation stored
// in a map, in *have at the first store (setting *set), and reports a
// store with other arguments in bpftrace's words (what names the
// aggregation).
func storeParams[P comparable](c *checker, set *bool, have *P, p P, at Span, what string) {
	if !*set {
		*set = true
		*have = p
		return
	}
	if *have != p {
		c.laterf(at, "Different %s bounds in a single map unsupported", what)
	}
}

// lhistArgs checks lhist()'s constant bounds.
func (c *checker) lhistArgs(e *Call) {
	var vals [3]int64
	ok := true
	for i, a := range e.Args[1:] {
		if c.badParam(a) {
			// bpftrace also gives the usual message here, in its first
			// pass.
			p := a.(*PositionalParam)
			v, _ := c.paramValue(p.N)
			c.errorf(p.Loc, "$%d used numerically but given %q. Try using str($%d).", p.N, v, p.N)
			c.errorf(e.Loc, "lhist: invalid %s value", [3]string{"min", "max", "step"}[i])
			c.info.SetType(a, Int64)
			ok = false
			continue
		}
		v, isConst := c.constArg(e, a)
		vals[i] = v
		ok = ok && isConst
	}
	if !ok {
		return
	}
	lo, hi, step := vals[0], vals[1], vals[2]
	if lo < 0 {
		c.laterf(e.Loc, "lhist() min must be non-negative (provided min %d)", lo)
	}
	if step < 1 {
		c.laterf(e.Loc, "lhist() step must be >= 1 (%d provided)", step)
		return
	}
	if lo > hi {
		c.laterf(e.Loc, "lhist() min must be less than max (provided min %d and max %d)", lo, hi)
	}
	switch n := (hi - lo) / step; {
	case n < 1:
		c.laterf(e.Loc, "lhist() step is too large for the given range (provided step %d for range %d)", step, hi-lo)
	case n > 1000:
		c.laterf(e.Loc, "lhist() too many buckets, must be <= 1000 (would need %d)", n)
	}
}

// lhistParams returns a valid lhist() call's constant bounds.
func (c *checker) lhistParams(e *Call) (LhistParams, bool) {
	if len(e.Args) != 4 {
		return LhistParams{}, false
	}
	var vals [3]int64
	for i, a := range e.Args[1:] {
		v, ok := c.info.ConstInt(a)
		if !ok {
			return LhistParams{}, false
		}
		vals[i] = v
	}
	return LhistParams{Min: vals[0], Max: vals[1], Step: vals[2]}, true
}

// maxHistBits bounds hist(v, bits)'s bits, as in bpftrace.
const maxHistBits = 5

// histBits returns hist()'s bits, 0 without the argument, and whether
// they are valid (a constant 0 to maxHistBits).
func (c *checker) histBits(e *Call) (int, bool) {
	if len(e.Args) < 2 {
		return 0, true
	}
	bits, ok := c.info.ConstInt(e.Args[1])
	return int(bits), ok && bits >= 0 && bits <= maxHistBits
}

// histStore checks that every hist() stored in a map has the same bits,
// and records them.
func (c *checker) histStore(m *mapState, call *Call) {
	bits, ok := c.histBits(call)
	if !ok || m.info.Value.Kind != KindHist {
		return
	}
	storeParams(c, &m.histSet, &m.info.HistBits, bits, call.Loc, "hist")
}

// tseriesArgs checks tseries()'s constant interval and number of
// intervals and its aggregation's name, with bpftrace's messages.
func (c *checker) tseriesArgs(e *Call) {
	names := [2]string{"interval_ns", "num_intervals"}
	for i, a := range e.Args[1:3] {
		c.expr(a, useValue)
		if _, ok := c.info.ConstInt(a); !ok {
			c.errorf(e.Loc, "tseries: invalid %s value (must be non-negative literal)", names[i])
			return
		}
	}
	interval, _ := c.info.ConstInt(e.Args[1])
	n, _ := c.info.ConstInt(e.Args[2])
	switch {
	case interval <= 0:
		c.laterf(e.Loc, "tseries() interval_ns must be >= 1 (%d provided)", interval)
	case n <= 0:
		c.laterf(e.Loc, "tseries() num_intervals must be >= 1 (%d provided)", n)
	case n > maxTseriesIntervals:
		c.laterf(e.Loc, "tseries() num_intervals must be < %d (%d provided)", maxTseriesIntervals, n)
	}
	if len(e.Args) == 4 {
		agg, ok := c.literalArg(e, e.Args[3])
		if ok && !slices.Contains(TseriesAggs, agg) {
			c.laterf(e.Loc, "tseries() expects one of the following aggregation functions: %s (%q provided)", strings.Join(TseriesAggs, ", "), agg)
		}
	}
}

// maxTseriesIntervals bounds tseries()'s number of intervals, as in
// bpftrace.
const maxTseriesIntervals = 1000000

// tseriesParams returns a valid tseries() call's constant arguments and
// its values' sign.
func (c *checker) tseriesParams(e *Call) (TseriesParams, bool) {
	if len(e.Args) < 3 {
		return TseriesParams{}, false
	}
	interval, ok1 := c.info.ConstInt(e.Args[1])
	n, ok2 := c.info.ConstInt(e.Args[2])
	p := TseriesParams{Interval: interval, Intervals: n, Signed: c.info.TypeOf(e.Args[0]).Signed}
	if len(e.Args) == 4 {
		if lit, ok := e.Args[3].(*StrLit); ok {
			p.Agg = lit.Value
		}
	}
	return p, ok1 && ok2
}

// tseriesStore checks that every tseries() stored in a map has the same
// arguments, and records them.
func (c *checker) tseriesStore(m *mapState, call *Call) {
	p, ok := c.tseriesParams(call)
	if !ok || m.info.Value.Kind != KindTseries {
		return
	}
	storeParams(c, &m.tseriesSet, &m.info.Tseries, p, call.Loc, "tseries")
}

// mapRef types a whole map passed to print(), clear() or zero(): its keys
// are not checked against the map's.
func (c *checker) mapRef(m *MapExpr) {
	ms := c.mapState(m.Name, m.Loc)
	for _, k := range m.Keys {
		c.expr(k, useValue)
	}
	c.mapValue(m, ms, true)
}
