package codegen

import (
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/gotrace/gotrace/lang"
)

// TestPassesLeaveASTAlone checks that resolution, checking and code
// generation record what they find in side tables (lang.Info, the Spec)
// and never write on the program they are handed: for every program of
// the corpus, the AST as the desugaring passes leave it (what lang.Resolve
// receives) is fingerprinted, every field of every node, unexported ones
// included, and the identity of every node; then Resolve and Check run
// (lang.Analyze), and Compile for the programs that check clean, and the
// fingerprint must not have changed. A pass that sets a field on a node,
// or replaces a node by an equal copy, fails here.
func TestPassesLeaveASTAlone(t *testing.T) {
	programs, cfg := corpus(t), corpusConfig()
	lastDesugar := ""
	for _, pass := range lang.Passes {
		if pass.Desugar {
			lastDesugar = pass.Name
		}
	}
	compiled := 0
	for _, prog := range programs {
		p, err := lang.Parse(filepath.Base(prog.name), prog.src)
		if err != nil {
			continue
		}
		var before *astFingerprint
		info, err := lang.Analyze(p, cfg, func(pass lang.Pass, _ *lang.Info) {
			if pass.Name == lastDesugar {
				before = fingerprint(p)
			}
		})
		if before == nil {
			continue // a desugaring pass refused it: nothing ran after
		}
		stage := "resolve and check"
		if err == nil {
			if _, err := Compile(p, info, Options{USDT: fakeUSDT(p, info, fakeProbe(0))}); err == nil {
				stage = "resolve, check and compile"
				compiled++
			}
		}
		if diff := before.diff(fingerprint(p)); diff != "" {
			t.Errorf("%s: %s changed the AST: %s", prog.name, stage, diff)
		}
	}
	if compiled < len(programs)/2 {
		t.Fatalf("only %d of %d programs compiled", compiled, len(programs))
	}
	t.Logf("%d programs, %d of them compiled", len(programs), compiled)
}

// astFingerprint is what a program's AST holds: every value reachable
// from the Program, one line each, and the address of every node.
type astFingerprint struct {
	lines []string
	nodes []uintptr
}

// fingerprint takes p's fingerprint. Reflection reaches unexported
// fields too (it reads them, never calls through them), so nothing a
// pass could write is left out.
func fingerprint(p *lang.Program) *astFingerprint {
	f := &astFingerprint{}
	ids := map[uintptr]int{}
	var walk func(path string, v reflect.Value)
	walk = func(path string, v reflect.Value) {
		switch v.Kind() {
		case reflect.Pointer:
			if v.IsNil() {
				f.lines = append(f.lines, path+" nil")
				return
			}
			if id, ok := ids[v.Pointer()]; ok {
				f.lines = append(f.lines, fmt.Sprintf("%s -> #%d", path, id))
				return
			}
			ids[v.Pointer()] = len(ids)
			f.nodes = append(f.nodes, v.Pointer())
			f.lines = append(f.lines, fmt.Sprintf("%s #%d %s", path, ids[v.Pointer()], v.Type()))
			walk(path, v.Elem())
		case reflect.Interface:
			if v.IsNil() {
				f.lines = append(f.lines, path+" nil")
				return
			}
			walk(path, v.Elem())
		case reflect.Struct:
			for i := range v.NumField() {
				walk(path+"."+v.Type().Field(i).Name, v.Field(i))
			}
		case reflect.Slice, reflect.Array:
			if v.Kind() == reflect.Slice && v.IsNil() {
				f.lines = append(f.lines, path+" nil")
				return
			}
			f.lines = append(f.lines, fmt.Sprintf("%s len %d", path, v.Len()))
			for i := range v.Len() {
				walk(fmt.Sprintf("%s[%d]", path, i), v.Index(i))
			}
		case reflect.Map:
			keys := v.MapKeys()
			slices.SortFunc(keys, func(a, b reflect.Value) int { return strings.Compare(fmt.Sprint(a), fmt.Sprint(b)) })
			f.lines = append(f.lines, fmt.Sprintf("%s map %d", path, len(keys)))
			for _, k := range keys {
				walk(fmt.Sprintf("%s[%v]", path, k), v.MapIndex(k))
			}
		case reflect.String:
			f.lines = append(f.lines, fmt.Sprintf("%s %q", path, v.String()))
		case reflect.Bool:
			f.lines = append(f.lines, fmt.Sprintf("%s %v", path, v.Bool()))
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			f.lines = append(f.lines, fmt.Sprintf("%s %d", path, v.Int()))
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
			f.lines = append(f.lines, fmt.Sprintf("%s %d", path, v.Uint()))
		default:
			f.lines = append(f.lines, fmt.Sprintf("%s (%s)", path, v.Kind()))
		}
	}
	walk("Program", reflect.ValueOf(p))
	return f
}

// diff describes the first difference between f and g, "" for none.
func (f *astFingerprint) diff(g *astFingerprint) string {
	for i := range min(len(f.lines), len(g.lines)) {
		if f.lines[i] != g.lines[i] {
			return fmt.Sprintf("was %s, now %s", f.lines[i], g.lines[i])
		}
	}
	if len(f.lines) != len(g.lines) {
		return fmt.Sprintf("%d values, now %d", len(f.lines), len(g.lines))
	}
	if !slices.Equal(f.nodes, g.nodes) {
		return "a node was replaced by an equal copy"
	}
	return ""
}
