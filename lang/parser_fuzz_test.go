package lang

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/alecthomas/participle/v2/lexer"
)

// FuzzParse checks that Parse never panics, always returns either a program
// or an ErrorList whose diagnostics can be printed, and stays fast.
func FuzzParse(f *testing.F) {
	for _, pat := range []string{"testdata/parse/*.bt", "testdata/parse/good/*.bt", "../scripts/*.bt", "../testdata/scripts/*.bt"} {
		files, _ := filepath.Glob(pat)
		for _, file := range files {
			if b, err := os.ReadFile(file); err == nil {
				f.Add(string(b))
			}
		}
	}
	f.Add("BEGIN { $x = (1, \"a\").1; @m[$x, 2]++; printf(\"%d\\n\", *(uint8*)($x + 1)); }")
	f.Add("usdt:./b:p:n /arg0 > 1 ? 1:0/ { unroll(3) { if (1) { break } else if (2) { } else { } } }")
	f.Add("struct S { int a; char b[4]; struct S *n; } u:/b:\"f(int, char)\" { $s = (struct S *)arg0; $s->n->a; }")
	f.Add("#define A 1\n#define B (A + \\\n A)\n#define R R\n#undef A\n#include <x.h>\nBEGIN { $x = B + R; }")
	f.Fuzz(func(t *testing.T, src string) {
		start := time.Now()
		p, err := Parse("fuzz.bt", src)
		if d := time.Since(start); d > 5*time.Second && len(src) < 1<<16 {
			t.Errorf("Parse took %v on %d bytes", d, len(src))
		}
		if err == nil {
			if p == nil {
				t.Fatal("Parse returned neither a program nor an error")
			}
			var b bytes.Buffer
			Dump(&b, p)
			return
		}
		// The recogniser and the participle grammar must agree: a script
		// the recogniser accepts must build a tree.
		if toks, lerr := scan("fuzz.bt", src); lerr == nil && recognize(toks) == nil {
			peek, perr := lexer.Upgrade(&tokenStream{toks: toks})
			if perr == nil {
				_, perr = grammar().ParseFromLexer(peek)
			}
			if perr != nil {
				t.Fatalf("the recogniser accepts what the grammar refuses: %v", perr)
			}
		}
		var list ErrorList
		if !errors.As(err, &list) || len(list) == 0 {
			t.Fatalf("Parse error %v is not a non-empty ErrorList", err)
		}
		var b bytes.Buffer
		list.Write(&b, "fuzz.bt", src)
	})
}
