package lang

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzCheck parses and checks arbitrary scripts: Check must never panic,
// must give every diagnostic a position inside the script, and must type a
// program it accepts completely.
func FuzzCheck(f *testing.F) {
	for _, pat := range []string{"testdata/check/good/*.bt", "testdata/check/bad/*.bt"} {
		files, err := filepath.Glob(pat)
		if err != nil {
			f.Fatal(err)
		}
		for _, file := range files {
			data, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(string(data), "5")
		}
	}
	f.Add(`BEGIN { @x[1] = count(); $t = (1, "a"); printf("%s %d\n", $t.1, $t.0); }`, "abc")
	f.Add(`BEGIN { @n = @m + 1; } END { @m = @n; @m = "x"; }`, "")
	f.Add(`BEGIN { unroll($1) { @a = lhist(1, $1, 10, $#); } }`, "-3")
	f.Fuzz(func(t *testing.T, src, param string) {
		p, err := Parse("fuzz.bt", src)
		if err != nil {
			return
		}
		info, err := Analyze(p, Config{Params: []string{param}, Unsafe: len(src)%2 == 0}, nil)
		if err == nil {
			walkExprs(p, func(e Expr) {
				if info.TypeOf(e).Kind == KindNone {
					if b, ok := e.(*Builtin); ok && isStackMode(b.Name) {
						return
					}
					t.Errorf("accepted program has an untyped %T at %v", e, e.Span().Start)
				}
			})
			return
		}
		var l ErrorList
		if !errors.As(err, &l) {
			t.Fatalf("Check returned %T, not an ErrorList: %v", err, err)
		}
		lines := strings.Count(src, "\n") + 1
		for _, e := range l {
			if e.Span.Start.Line < 1 || int(e.Span.Start.Line) > lines || e.Span.Start.Col < 1 {
				t.Errorf("diagnostic %q is outside the script", e.Error())
			}
		}
	})
}
