package lang

// Expressions are numbered so that the Info's tables of what the passes
// learned about each expression (its type, its constant value) are
// slices indexed by number rather than hash maps keyed by node: a lookup
// is an index, not a hash of a pointer, which a script of 400,000
// expressions checked over several passes notices (BenchmarkCheckLarge).
// Parse numbers the expressions it builds, and each desugaring pass the
// ones it builds or copies (Analyze, Desugar); from then on the numbers
// do not change. An expression with no number (0: built by hand in a
// test, or by Info.MemberOf for the code generator) is kept in a map.

// numberExprs gives every expression of p a number of its own, from 1:
// those that have one keep it, a new expression or a copy that shares
// another's number (a macro's body expanded twice) gets the next free
// one; p.numExprs counts the numbers given.
func numberExprs(p *Program) {
	// owner is the expression each number belongs to in this walk.
	owner := make([]*ExprBase, p.numExprs+1)
	var fresh []*ExprBase
	visit := func(n Node) {
		e, ok := n.(Expr)
		if !ok {
			return
		}
		b := e.exprBase()
		switch {
		case b.num == 0 || int(b.num) >= len(owner):
			fresh = append(fresh, b)
		case owner[b.num] == nil:
			owner[b.num] = b
		case owner[b.num] != b:
			fresh = append(fresh, b)
		}
	}
	for _, pr := range p.Probes {
		InspectProbe(pr, visit)
	}
	for _, b := range fresh {
		if int(b.num) < len(owner) && owner[b.num] == b {
			continue // the same node met twice, numbered the first time
		}
		p.numExprs++
		b.num = int32(p.numExprs)
		owner = append(owner, b)
	}
}

// exprTable holds one value per expression, the zero V for none: by
// number in a slice, or for an expression without a number in a map.
type exprTable[V comparable] struct {
	byNum  []V
	byNode map[*ExprBase]V
}

// get returns e's value, the zero V when it has none.
func (t *exprTable[V]) get(e *ExprBase) V {
	if e.num == 0 {
		return t.byNode[e]
	}
	if int(e.num) < len(t.byNum) {
		return t.byNum[e.num]
	}
	var none V
	return none
}

// set records e's value; the zero V removes it.
func (t *exprTable[V]) set(e *ExprBase, v V) {
	if e.num == 0 {
		var none V
		switch {
		case v != none:
			if t.byNode == nil {
				t.byNode = map[*ExprBase]V{}
			}
			t.byNode[e] = v
		case t.byNode != nil:
			delete(t.byNode, e)
		}
		return
	}
	if n := int(e.num); n >= len(t.byNum) {
		t.grow(n + 1)
	}
	t.byNum[e.num] = v
}

// grow makes room for the numbers below n, doubling so that setting them
// one by one costs amortised constant time; it never shrinks the table.
func (t *exprTable[V]) grow(n int) {
	switch {
	case n <= len(t.byNum):
	case n <= cap(t.byNum):
		t.byNum = t.byNum[:n]
	default:
		grown := make([]V, n, max(n, 2*cap(t.byNum)))
		copy(grown, t.byNum)
		t.byNum = grown
	}
}
