package codegen

import (
	"math/rand"
	"strings"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/gotrace/gotrace/internal/testenv"
	"github.com/gotrace/gotrace/lang"
)

// gen generates random bpftrace programs over a fixed set of variables
// and maps ($i, $s, $t, @m, @sv, @k, ...).
type gen struct {
	r     *rand.Rand
	depth int
}

// pick returns one of xs.
func (g *gen) pick(xs ...string) string { return xs[g.r.Intn(len(xs))] }

// intE returns an integer expression.
func (g *gen) intE() string {
	g.depth++
	defer func() { g.depth-- }()
	if g.depth > 4 {
		return g.pick("1", "$i", "-3", "0x7fffffff", "@m[1]")
	}
	switch g.r.Intn(12) {
	case 0:
		return "(" + g.intE() + " " + g.pick("+", "-", "*", "/", "%", "<<", ">>", "&", "|", "^", "<", "<=", "==", "!=", "&&", "||") + " " + g.intE() + ")"
	case 1:
		return "(" + g.pick("int8", "uint8", "int16", "uint32", "int64") + ")" + g.intE()
	case 2:
		return "(" + g.intE() + " ? " + g.intE() + " : " + g.intE() + ")"
	case 3:
		return g.pick("!", "-", "~") + g.intE()
	case 4:
		return "(" + g.strE() + " == " + g.strE() + ")"
	case 5:
		return "@m[" + g.intE() + "]"
	case 6:
		return "$t.0"
	case 7:
		return "strncmp(" + g.strE() + ", " + g.strE() + ", " + g.pick("1", "3", "10") + ")"
	case 8:
		return "@k[" + g.strE() + ", " + g.intE() + "]"
	}
	return g.pick("1", "$i", "-3", "$#", "$1", "sizeof(int32)")
}

// strE returns a string expression.
func (g *gen) strE() string {
	g.depth++
	defer func() { g.depth-- }()
	if g.depth > 4 {
		return g.pick(`"a"`, `"hello"`, "$s")
	}
	switch g.r.Intn(6) {
	case 0:
		return "(" + g.intE() + " ? " + g.strE() + " : " + g.strE() + ")"
	case 1:
		return "@sv[" + g.intE() + "]"
	case 2:
		return "$t.1"
	case 3:
		return "str($2)"
	}
	return g.pick(`"a"`, `"hello"`, "$s", `"a longer string literal here"`)
}

// stmt returns a statement nested n deep.
func (g *gen) stmt(n int) string {
	if n > 2 {
		return "$i++;"
	}
	switch g.r.Intn(14) {
	case 0:
		return "if (" + g.intE() + ") { " + g.stmt(n+1) + " } else { " + g.stmt(n+1) + " }"
	case 1:
		return "$i = " + g.intE() + ";"
	case 2:
		return "$s = " + g.strE() + ";"
	case 3:
		return "@m[" + g.intE() + "] = " + g.intE() + ";"
	case 4:
		return "@m[" + g.intE() + "] " + g.pick("+=", "-=", "*=", "<<=") + " " + g.intE() + ";"
	case 5:
		return "@sv[" + g.intE() + "] = " + g.strE() + ";"
	case 6:
		return "@c = count(); @h[" + g.strE() + "] = hist(" + g.intE() + ");"
	case 7:
		return "printf(\"%ld %s\\n\", " + g.intE() + ", " + g.strE() + ");"
	case 8:
		return "$t = (" + g.intE() + ", " + g.strE() + ");"
	case 9:
		return "unroll(3) { " + g.stmt(n+1) + " }"
	case 10:
		return "$j = 0; while ($j < 5) { $j++; " + g.stmt(n+1) + " }"
	case 11:
		return "@k[" + g.strE() + ", " + g.intE() + "] = 1; delete(@k[" + g.strE() + ", 1]);"
	case 12:
		return "@l = lhist(" + g.intE() + ", 0, 100, 10); @mx = max(" + g.intE() + ");"
	}
	return "@m[" + g.intE() + "]++;"
}

// TestRandomPrograms compiles, loads and runs random BEGIN programs
// built from the grammar above: every program the checker accepts must
// compile, pass the verifier and run.
func TestRandomPrograms(t *testing.T) {
	testenv.RequireRoot(t)
	r := rand.New(rand.NewSource(1))
	ran := 0
	for range 120 {
		g := &gen{r: r}
		var b strings.Builder
		b.WriteString("BEGIN { $i = 0; $s = \"x\"; $t = (1, \"y\"); @m[0] = 0; @sv[0] = \"z\"; @c = count(); @k[\"a\", 1] = 0; ")
		for range 6 {
			b.WriteString(g.stmt(0) + " ")
		}
		b.WriteString("exit(); }")
		src := b.String()
		p, err := lang.Parse("g.bt", src)
		if err != nil {
			t.Fatalf("parse: %v\n%s", err, src)
		}
		params := []string{"5", "word"}
		info, err := lang.Analyze(p, lang.Config{Params: params}, nil)
		if err != nil {
			continue // the generator does not follow every typing rule
		}
		spec, err := Compile(info.ResolvedProgram(p), info, Options{EventsSize: 4096, ControlSize: 4096})
		if err != nil {
			t.Fatalf("compile: %v\n%s", err, src)
		}
		coll, err := ebpf.NewCollection(spec.Collection)
		if err != nil {
			t.Fatalf("load: %v\n%s", err, src)
		}
		_, err = coll.Programs[spec.Attachments[0].Program].Run(&ebpf.RunOptions{Context: []uint64{0}})
		coll.Close()
		if err != nil {
			t.Fatalf("run: %v\n%s", err, src)
		}
		ran++
	}
	if ran < 80 {
		t.Errorf("only %d of 120 random programs passed the checker", ran)
	}
}
