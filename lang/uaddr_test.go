package lang

import (
	"testing"

	"github.com/gotrace/gotrace/internal/testenv"
	"github.com/gotrace/gotrace/usdt"
)

// TestUaddrTypes checks that uaddr() points to a signed integer of its
// symbol's size.
func TestUaddrTypes(t *testing.T) {
	const python = "/usr/bin/python3.11"
	testenv.RequireFile(t, python)
	for _, tt := range []struct{ sym, want string }{
		{"_PyByteArray_empty_string", "int8 *"},
		{"Py_DebugFlag", "int32 *"},
		{"_Py_NoneStruct", "int64 *"},
	} {
		src := "usdt:" + python + ":python:function__entry { $v = uaddr(\"" + tt.sym + "\"); }"
		p, info, errs := checkSource(t, src, Config{Host: &usdt.Host{}})
		if errs != nil {
			t.Fatalf("%s: %v", src, errs)
		}
		a := p.Probes[0].Body.Stmts[0].(*AssignStmt)
		if got := typeName(info.TypeOf(a.LHS)); got != tt.want {
			t.Errorf("uaddr(%q) is %s, want %s", tt.sym, got, tt.want)
		}
	}
}

// TestUaddrResolvedTarget checks that uaddr() looks its symbol up in the
// file that Resolve found for the attach point: a bare name found through
// $PATH, and a positional parameter. Both failed with "Could not resolve
// symbol: python3.11:Py_DebugFlag" and "$1:Py_DebugFlag" when the runtime
// resolved targets after checking.
func TestUaddrResolvedTarget(t *testing.T) {
	const python = "/usr/bin/python3.11"
	testenv.RequireFile(t, python)
	t.Setenv("PATH", "/usr/local/bin:/usr/bin:/bin")
	want, size, err := (&usdt.Host{}).ObjectSymbol(python, "Py_DebugFlag")
	if err != nil || size != 4 {
		t.Fatalf("ObjectSymbol(Py_DebugFlag) = %#x, %d, %v", want, size, err)
	}
	for _, tc := range []struct {
		src    string
		params []string
	}{
		{`uprobe:python3.11:main { $v = uaddr("Py_DebugFlag"); }`, nil},
		{`usdt:$1:python:function__entry { $v = uaddr("Py_DebugFlag"); }`, []string{python}},
	} {
		p := mustParse(t, tc.src)
		cfg := Config{Params: tc.params, Host: &usdt.Host{}}
		info, err := Analyze(p, cfg, nil)
		if err != nil {
			t.Fatalf("%s: check: %v", tc.src, err)
		}
		if got := info.AttachPoints(p.Probes[0])[0].Target; got != python {
			t.Errorf("%s: target %q, want %q", tc.src, got, python)
		}
		a := p.Probes[0].Body.Stmts[0].(*AssignStmt)
		if got := typeName(info.TypeOf(a.LHS)); got != "int32 *" {
			t.Errorf("%s: uaddr() is %s, want int32 *", tc.src, got)
		}
		if sym := info.Symbols[SymbolRef{python, "Py_DebugFlag"}]; sym.Err != nil || sym.Addr != want {
			t.Errorf("%s: recorded %+v, want address %#x", tc.src, sym, want)
		}
	}
}
