package lang

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
)

// reflectNodes collects every Node reachable from v through struct fields,
// slices and pointers: what Inspect must visit.
func reflectNodes(v reflect.Value, seen map[Node]bool) {
	switch v.Kind() {
	case reflect.Interface:
		if !v.IsNil() {
			reflectNodes(v.Elem(), seen)
		}
	case reflect.Pointer:
		if v.IsNil() {
			return
		}
		if n, ok := v.Interface().(Node); ok {
			if seen[n] {
				return
			}
			seen[n] = true
		}
		reflectNodes(v.Elem(), seen)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				reflectNodes(v.Field(i), seen)
			}
		}
	case reflect.Slice:
		for i := range v.Len() {
			reflectNodes(v.Index(i), seen)
		}
	}
}

// TestInspectVisitsEveryNode parses every script of the repository's
// testdata and checks that Inspect reaches each node a reflective walk of
// the tree finds, so that a node type added without its case in Inspect
// fails here.
func TestInspectVisitsEveryNode(t *testing.T) {
	forEachScriptProbe(t, func(file string, probe *Probe) {
		want := map[Node]bool{}
		if probe.Pred != nil {
			reflectNodes(reflect.ValueOf(&probe.Pred).Elem(), want)
		}
		reflectNodes(reflect.ValueOf(probe.Body), want)
		got := map[Node]bool{}
		InspectProbe(probe, func(n Node) { got[n] = true })
		for n := range want {
			if !got[n] {
				t.Errorf("%s: Inspect does not reach a %T at %v", file, n, n.Span())
			}
		}
	})
}

// forEachScriptProbe calls f with every probe of every script of the
// repository's testdata that parses, as written: the trees the tests of
// the walker and the rewriter go over.
func forEachScriptProbe(t *testing.T, f func(file string, probe *Probe)) {
	t.Helper()
	files, _ := filepath.Glob("../testdata/*/*.bt")
	more, _ := filepath.Glob("testdata/check/good/*.bt")
	files = append(files, more...)
	if len(files) < 10 {
		t.Fatalf("only %d scripts found", len(files))
	}
	for _, file := range files {
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		p, err := Parse(file, string(src))
		if err != nil {
			continue
		}
		for _, probe := range p.Probes {
			f(file, probe)
		}
	}
}

// preorder is the order Inspect keeps, by recursion.
func preorder(n Node, out []Node) []Node {
	if n == nil {
		return out
	}
	out = append(out, n)
	for _, c := range appendChildren(nil, n) {
		out = preorder(c, out)
	}
	return out
}

// TestInspectOrder checks that Inspect visits in source order, nodes
// before their children, where left-nested chains are walked from a
// stack entry of their own.
func TestInspectOrder(t *testing.T) {
	for _, src := range []string{
		`BEGIN { @ = 1 + 2 * 3 + 4 + (5 + 6 - 7) + 8; }`,
		`BEGIN { $x = 1; if ($x && 2 && (3 || 4 || 5)) { @[$x + 1 + 2, 3 - 4 - 5] = count(); } }`,
		`BEGIN { @ = (1 + 2 + 3) + (4 + 5 + 6) * 7; @b = -(1 + 2 + 3); }`,
	} {
		p := mustParse(t, src)
		var got []Node
		InspectProbe(p.Probes[0], func(n Node) { got = append(got, n) })
		want := preorder(p.Probes[0].Body, nil)
		if !slices.Equal(got, want) {
			t.Errorf("%s: Inspect visits %d nodes in another order than the %d of a recursive walk", src, len(got), len(want))
		}
	}
}
