package codegen

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/gotrace/gotrace/lang/attachpoint"

	"github.com/gotrace/gotrace/lang"
	"github.com/gotrace/gotrace/usdt"
)

// TestHandBuiltBegin compiles a typed AST built by hand (printf of ints
// and strings, count() into a map, exit()) and runs it in the kernel.
func TestHandBuiltBegin(t *testing.T) {
	a := newHandAST()
	countT := lang.Type{Kind: lang.KindCount}
	p := &lang.Program{
		File: "test.bt",
		Probes: []*lang.Probe{probeBlock(beginAP(), nil,
			a.void("printf", a.strLit("%d %s %s\n"),
				a.bin("+", lang.Int64, a.intLit(1), a.bin("*", lang.Int64, a.intLit(2), a.intLit(-3))),
				a.strLit("hi"),
				a.builtinVar("comm", lang.String(16))),
			assign(a.mapExpr("@c", countT), a.call("count", countT)),
			assign(a.mapExpr("@c", countT), a.call("count", countT)),
			assign(a.mapExpr("@s", lang.String(8), a.intLit(7)), a.strLit("seven")),
			a.void("exit"),
			a.void("printf", a.strLit("unreachable\n")),
		)},
	}
	a.info.Maps["@c"] = &lang.MapInfo{Name: "@c", Value: countT}
	a.info.Maps["@s"] = &lang.MapInfo{Name: "@s", Key: lang.Int64, Value: lang.String(8)}
	spec, err := Compile(a.info.ResolvedProgram(p), a.info, Options{})
	if err != nil {
		t.Fatal(err)
	}
	l := load(t, spec)
	got := printfs(t, l)
	want := []string{"-5 hi codegen.test"}
	if !slices.Equal(got, want) {
		t.Errorf("printf records = %q, want %q", got, want)
	}
	ctl := l.drain(t, spec.ControlMap)
	if len(ctl) != 1 || ctl[0].ev.Kind != EventExit {
		t.Errorf("control records = %v, want one exit", ctl)
	}
	var counts []uint64
	if err := l.coll.Maps["@c"].Lookup(uint32(0), &counts); err != nil {
		t.Fatal(err)
	}
	var total uint64
	for _, c := range counts {
		total += c
	}
	if total != 2 {
		t.Errorf("@c = %d, want 2", total)
	}
	var s [8]byte
	if err := l.coll.Maps["@s"].Lookup(uint64(7), &s); err != nil {
		t.Fatal(err)
	}
	if string(s[:]) != "seven\x00\x00\x00" {
		t.Errorf("@s[7] = %q", s)
	}
}

// TestUSDTProgramLoads compiles a USDT probe block reading args of two
// locations with different layouts and checks that the kernel accepts it.
func TestUSDTProgramLoads(t *testing.T) {
	up := fakeProbe(0x3000)
	ap := &lang.AttachPoint{Raw: "usdt:/bin/fake:net:msg", Point: attachpoint.Point{Kind: lang.ProbeUSDT, Target: "/bin/fake", Provider: "net", Func: "msg"}}
	countT := lang.Type{Kind: lang.KindCount}
	a := newHandAST()
	p := &lang.Program{
		File: "test.bt",
		Probes: []*lang.Probe{probeBlock(ap, a.bin(">", lang.Int64, a.builtinVar("arg1", lang.Int64), a.intLit(0)),
			a.void("printf", a.strLit("%d %d\n"), a.builtinVar("arg0", lang.Int64), a.builtinVar("arg1", lang.Int64)),
			assign(a.mapExpr("@n", countT, a.builtinVar("arg1", lang.Int64)), a.call("count", countT)),
		)},
	}
	a.info.Maps["@n"] = &lang.MapInfo{Name: "@n", Key: lang.Int64, Value: countT}
	spec, err := Compile(a.info.ResolvedProgram(p), a.info, Options{USDT: map[*lang.AttachPoint][]*usdt.Probe{ap: {up}}})
	if err != nil {
		t.Fatal(err)
	}
	att := spec.Attachments[0]
	wantSites := []Site{{Offset: 0x1000, Cookie: 0}, {Offset: 0x2000, SemaphoreOffset: 0x3000, Cookie: 1}}
	if !slices.Equal(att.Sites, wantSites) || att.ProbeName != "usdt:/bin/fake:net:msg" {
		t.Errorf("attachment = %+v", att)
	}
	load(t, spec)

	// arg2 does not exist: the error names the probe.
	p.Probes[0].Body.Stmts = append(p.Probes[0].Body.Stmts,
		a.void("printf", a.strLit("%d\n"), a.builtinVar("arg2", lang.Int64)))
	_, err = Compile(a.info.ResolvedProgram(p), a.info, Options{USDT: map[*lang.AttachPoint][]*usdt.Probe{ap: {up}}})
	if err == nil || !strings.Contains(err.Error(), "usdt:/bin/fake:net:msg has only 2 arguments") {
		t.Errorf("arg2: err = %v", err)
	}
}

// TestScratchLimit checks that a program whose records need more scratch
// space than a per-CPU map value holds gets an entry per CPU of the big
// scratch map, and that one needing more than a map value holds fails to
// compile with a clear error.
func TestScratchLimit(t *testing.T) {
	a := newHandAST()
	printStrs := func(n, size int) *lang.Program {
		args := []lang.Expr{a.strLit(strings.Repeat("%s", n))}
		for range n {
			args = append(args, a.call("str", lang.String(size), a.intLit(0)))
		}
		return &lang.Program{File: "t.bt", Probes: []*lang.Probe{probeBlock(beginAP(), nil, a.void("printf", args...))}}
	}
	spec, err := Compile(a.info.ResolvedProgram(printStrs(170, 200)), a.info, Options{})
	if err != nil {
		t.Fatal(err)
	}
	big := spec.Collection.Maps[BigScratchMapName]
	if big == nil || big.ValueSize < 170*200 || spec.Collection.Maps[ScratchMapName] != nil {
		t.Errorf("34 KiB of strings: big scratch %+v, maps %v", big, slices.Collect(maps.Keys(spec.Collection.Maps)))
	}
	// The fields past 32 KiB are written through a moved base register.
	load(t, spec)
	_, err = Compile(a.info.ResolvedProgram(printStrs(110, 40000)), a.info, Options{})
	if err == nil || !strings.Contains(err.Error(), "bytes of scratch space, more than the 4194304") {
		t.Errorf("err = %v", err)
	}
}

// TestScratchPlacement checks where a program's strings, keys and records
// go: on the BPF stack when they fit below its stack slots (and then no
// program needs the per-CPU scratch map), in the map otherwise; the output
// is the same.
func TestScratchPlacement(t *testing.T) {
	long := strings.Repeat("s", 60) // a string[61]: 64 bytes of scratch
	var vars, assigns []string
	for i := range 9 {
		v := fmt.Sprintf("$v%d", i)
		assigns = append(assigns, fmt.Sprintf("%s = \"%s%d\";", v, long, i))
		vars = append(vars, v)
	}
	big := fmt.Sprintf(`BEGIN { %s printf("%s\n", %s); }`, strings.Join(assigns, " "),
		strings.Repeat("%s ", len(vars)), strings.Join(vars, ", "))
	var bigOut strings.Builder
	for i := range 9 {
		fmt.Fprintf(&bigOut, "%s%d ", long, i)
	}
	for _, tt := range []struct {
		name   string
		src    string
		mapped bool
		want   string
	}{
		{"stack", `BEGIN { $s = "abc"; @m[$s, 2] = 1; printf("%s %d\n", $s, @m["abc", 2]); }`, false, "abc 1\n"},
		{"map", big, true, bigOut.String() + "\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			spec := compileSource(t, tt.src)
			if _, mapped := spec.Collection.Maps[ScratchMapName]; mapped != tt.mapped {
				t.Errorf("scratch map present = %v, want %v", mapped, tt.mapped)
			}
			l := load(t, spec)
			l.runKind(t, lang.ProbeBegin)
			var got strings.Builder
			for _, r := range l.drain(t, spec.EventsMap) {
				got.WriteString(formatRecord(t, r))
			}
			if got.String() != tt.want {
				t.Errorf("output:\n%q\nwant:\n%q", got.String(), tt.want)
			}
		})
	}
}
