package lang

import (
	"reflect"
	"testing"
)

// TestMapReachesEveryNode rewrites every probe of the repository's
// scripts with mapExpr and mapStmt and checks that the function was
// asked about every expression of the copy a reflective walk finds, so
// that a node type or a child field added without its case in the
// rewriter fails here (a child left out would be the original, unseen).
func TestMapReachesEveryNode(t *testing.T) {
	forEachScriptProbe(t, func(file string, probe *Probe) {
		seen := map[Expr]bool{}
		record := func(e Expr) Expr { seen[e] = true; return e }
		copied := map[Node]bool{}
		if probe.Pred != nil {
			pred := mapExpr(probe.Pred, record)
			reflectNodes(reflect.ValueOf(&pred).Elem(), copied)
		}
		reflectNodes(reflect.ValueOf(mapStmt(probe.Body, record)), copied)
		for n := range copied {
			if e, ok := n.(Expr); ok && !seen[e] {
				t.Errorf("%s: the rewriter does not reach a %T at %v", file, n, n.Span())
			}
		}
	})
}
