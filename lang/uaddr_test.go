package lang

import (
	"errors"
	"os"
	"testing"

	"github.com/gotrace/gotrace/internal/testenv"
)

// TestUaddrTypes checks that uaddr() points to a signed integer of its
// symbol's size, and ObjectSymbol's refusal of functions.
func TestUaddrTypes(t *testing.T) {
	const python = "/usr/bin/python3.11"
	testenv.RequireFile(t, python)
	for _, tt := range []struct{ sym, want string }{
		{"_PyByteArray_empty_string", "int8 *"},
		{"Py_DebugFlag", "int32 *"},
		{"_Py_NoneStruct", "int64 *"},
	} {
		src := "usdt:" + python + ":python:function__entry { $v = uaddr(\"" + tt.sym + "\"); }"
		p, errs := checkSource(t, src, Config{})
		if errs != nil {
			t.Fatalf("%s: %v", src, errs)
		}
		a := p.Probes[0].Body.Stmts[0].(*AssignStmt)
		if got := typeName(TypeOf(a.LHS)); got != tt.want {
			t.Errorf("uaddr(%q) is %s, want %s", tt.sym, got, tt.want)
		}
	}
	if _, _, err := ObjectSymbol(python, "main"); !errors.Is(err, ErrNoSymbol) {
		t.Errorf("ObjectSymbol(main) = %v, want ErrNoSymbol", err)
	}
	if addr, size, err := ObjectSymbol(python, "Py_DebugFlag"); err != nil || addr == 0 || size != 4 {
		t.Errorf("ObjectSymbol(Py_DebugFlag) = %#x, %d, %v; want a 4-byte symbol", addr, size, err)
	}
}

// TestObjectSymbolNotRegular checks that ObjectSymbol does not open what
// is not a regular file (a FIFO would block).
func TestObjectSymbolNotRegular(t *testing.T) {
	for _, path := range []string{"/dev/null", "/"} {
		if _, _, err := ObjectSymbol(path, "x"); !errors.Is(err, ErrNoSymbol) {
			t.Errorf("ObjectSymbol(%s) = %v, want ErrNoSymbol", path, err)
		}
	}
	if _, _, err := ObjectSymbol("/no/such/file", "x"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("ObjectSymbol of a missing file = %v, want os.ErrNotExist", err)
	}
}
