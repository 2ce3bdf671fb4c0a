package lang

import (
	"os"
	"path/filepath"
	"reflect"
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
		}
	}
}
