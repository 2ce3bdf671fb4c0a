package lang

import (
	"bytes"
	"errors"
	"fmt"
	"github.com/gotrace/gotrace/lang/attachpoint"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gotrace/gotrace/internal/golden"
	"github.com/gotrace/gotrace/internal/testenv"
)

// sexpr writes an expression as an S-expression, for compact table tests.
func sexpr(e Expr) string {
	switch e := e.(type) {
	case *IntLit:
		return fmt.Sprint(e.Value)
	case *StrLit:
		return fmt.Sprintf("%q", e.Value)
	case *Var:
		return e.Name
	case *Builtin:
		return e.Name
	case *PositionalParam:
		if e.Count {
			return "$#"
		}
		return fmt.Sprintf("$%d", e.N)
	case *MapExpr:
		if e.Keys == nil {
			return e.Name
		}
		return "(" + e.Name + "[] " + sexprs(e.Keys) + ")"
	case *Call:
		if len(e.Args) == 0 {
			return "(" + e.Name + ")"
		}
		return "(" + e.Name + " " + sexprs(e.Args) + ")"
	case *Binary:
		return "(" + e.Op + " " + sexpr(e.X) + " " + sexpr(e.Y) + ")"
	case *Unary:
		return "(" + e.Op + " " + sexpr(e.X) + ")"
	case *IncDec:
		if e.Post {
			return "(post" + e.Op + " " + sexpr(e.X) + ")"
		}
		return "(pre" + e.Op + " " + sexpr(e.X) + ")"
	case *Ternary:
		return "(? " + sexpr(e.Cond) + " " + sexpr(e.Then) + " " + sexpr(e.Else) + ")"
	case *Cast:
		return "(cast[" + e.TypeName + "] " + sexpr(e.X) + ")"
	case *Tuple:
		if e.Names != nil {
			fields := make([]string, len(e.Elems))
			for i, x := range e.Elems {
				fields[i] = e.Names[i] + "=" + sexpr(x)
			}
			return "(record " + strings.Join(fields, " ") + ")"
		}
		return "(tuple " + sexprs(e.Elems) + ")"
	case *BlockExpr:
		parts := make([]string, len(e.Stmts))
		for i, s := range e.Stmts {
			parts[i] = fmt.Sprintf("%T", s)
		}
		if e.Value != nil {
			parts = append(parts, sexpr(e.Value))
		}
		return "({} " + strings.Join(parts, " ") + ")"
	case *FieldAccess:
		switch {
		case e.Field == "":
			return fmt.Sprintf("(.%d %s)", e.Index, sexpr(e.X))
		case e.Arrow:
			return "(->" + e.Field + " " + sexpr(e.X) + ")"
		}
		return "(." + e.Field + " " + sexpr(e.X) + ")"
	case *IndexExpr:
		return "([] " + sexpr(e.X) + " " + sexpr(e.Index) + ")"
	}
	return fmt.Sprintf("?%T", e)
}

func sexprs(es []Expr) string {
	parts := make([]string, len(es))
	for i, e := range es {
		parts[i] = sexpr(e)
	}
	return strings.Join(parts, " ")
}

// parseExpr parses src as the right-hand side of an assignment in BEGIN.
func parseExpr(t *testing.T, src string) Expr {
	t.Helper()
	p := mustParse(t, "BEGIN { $x = "+src+"; }")
	return p.Probes[0].Body.Stmts[0].(*AssignStmt).RHS
}

// mustParse parses src as the script "stdin", failing the test when it
// does not parse.
func mustParse(t *testing.T, src string) *Program {
	t.Helper()
	p, err := Parse("stdin", src)
	if err != nil {
		t.Fatalf("Parse(%q): %v", src, err)
	}
	return p
}

func TestParseExpressions(t *testing.T) {
	tests := []struct{ src, want string }{
		{"1 + 2 * 3 - 4 / 2 % 3 << 1 == 5 && !$b || ~$c",
			"(|| (&& (== (<< (- (+ 1 (* 2 3)) (% (/ 4 2) 3)) 1) 5) (! $b)) (~ $c))"},
		{"1 - 2 - 3", "(- (- 1 2) 3)"},
		{"1 | 2 ^ 3 & 4", "(| 1 (^ 2 (& 3 4)))"},
		{"$a < $b == $c > $d", "(== (< $a $b) (> $c $d))"},
		{"1 << 2 + 3", "(<< 1 (+ 2 3))"},
		{"$a ? 1 : $b ? 2 : 3", "(? $a 1 (? $b 2 3))"},
		{"$a || $b ? \"x\" : \"y\"", "(? (|| $a $b) \"x\" \"y\")"},
		{"-1", "(- 1)"},
		{"- -$x", "(- (- $x))"},
		{"!!$x", "(! (! $x))"},
		{"*(uint8*)($p)", "(* (cast[uint8 *] $p))"},
		{"*(uint64 *)$p + 1", "(+ (* (cast[uint64 *] $p)) 1)"},
		{"(uint32)arg0", "(cast[uint32] arg0)"},
		{"(int8)-1", "(cast[int8] (- 1))"},
		{"(uint64)arg5/1e6 > $3", "(> (/ (cast[uint64] arg5) 1000000) $3)"},
		{"((struct CBlockIndex*)arg3)->nHeight", "(->nHeight (cast[struct CBlockIndex *] arg3))"},
		{"(struct Foo *)arg0", "(cast[struct Foo *] arg0)"},
		{"(char *)arg0", "(cast[char *] arg0)"},
		{"(nsecs - @start) / 1000", "(/ (- nsecs @start) 1000)"},
		{"(nsecs * 2)", "(* nsecs 2)"},
		{"(nsecs) - 1", "(- nsecs 1)"},
		{"(foo) * 2", "(* foo 2)"},
		{"(uint16 **)$p", "(cast[uint16 **] $p)"},
		{"(1, \"a\", $x)", "(tuple 1 \"a\" $x)"},
		{"$t.0 + $t.1", "(+ (.0 $t) (.1 $t))"},
		{"(1, 2).1", "(.1 (tuple 1 2))"},
		{"$s.f.g", "(.g (.f $s))"},
		{"$p[3]", "([] $p 3)"},
		{"@m[1, \"a\"]", "(@m[] 1 \"a\")"},
		{"@", "@"},
		{"@[tid]", "(@[] tid)"},
		{"@x++", "(post++ @x)"},
		{"--$x", "(pre-- $x)"},
		{"$x++ + 1", "(+ (post++ $x) 1)"},
		{"str(arg0, 64)", "(str arg0 64)"},
		{"exit()", "(exit)"},
		{"$1 + $#", "(+ $1 $#)"},
		{"kstack", "kstack"},
		{"ustack(5)", "(ustack 5)"},
		{"0x1f + 017 + 1_000 + 1e6", "(+ (+ (+ 31 15) 1000) 1000000)"},
		{"9e18 + 0e5", "(+ 9000000000000000000 0)"},
		{"0xffffffffffffffff", "18446744073709551615"},
		{"1.5e6", "(.5000000 1)"},
		// bpftrace 0.22 to 0.25: address-of, records, if as an expression
		// (its trailing if too) and block expressions.
		{"&$a + 1", "(+ (& $a) 1)"},
		{"$a ?: 2", "(? $a $a 2)"},
		{"((int8[8])12345)[0]", "([] (cast[int8[8]] 12345) 0)"},
		{"(bool[])$x", "(cast[bool[]] $x)"},
		{"*&@m", "(* (& @m))"},
		{"(a = 1, b = (2, \"x\")).b", "(.b (record a=1 b=(tuple 2 \"x\")))"},
		{"(a=$x)", "(record a=$x)"},
		{"if ($a) { 1 } else if ($b) { 2 } else { $c = 3; $c }", "(? $a ({} 1) (? $b ({} 2) ({} *lang.AssignStmt $c)))"},
		{"{ $y = 1; if ($y) { 2 } else { 3 } }", "({} *lang.AssignStmt (? $y ({} 2) ({} 3)))"},
		{"{ if ($y) { 2 } }", "({} *lang.IfStmt)"},
	}
	for _, tt := range tests {
		if got := sexpr(parseExpr(t, tt.src)); got != tt.want {
			t.Errorf("%s\n got  %s\n want %s", tt.src, got, tt.want)
		}
	}
}

func TestParsePredicate(t *testing.T) {
	tests := []struct{ src, want string }{
		{"usdt:./bitcoind:net:inbound_message /pid / 2 > 1/ { }", "(> (/ pid 2) 1)"},
		{"BEGIN /arg1 >= $1 && (arg1 <= $2 || $2 == 0)/ { }", "(&& (>= arg1 $1) (|| (<= arg1 $2) (== $2 0)))"},
		{"BEGIN /$x ? 1:2/ { }", "(? $x 1 2)"},
		{"BEGIN\n/comm == \"x\"/\n{ }", "(== comm \"x\")"},
	}
	for _, tt := range tests {
		p := mustParse(t, tt.src)
		if got := sexpr(p.Probes[0].Pred); got != tt.want {
			t.Errorf("%s\n got  %s\n want %s", tt.src, got, tt.want)
		}
	}
}

func TestParseStatements(t *testing.T) {
	src := `BEGIN {
  $x = 1; $x += 2; $x -= 1; $x *= 3; $x /= 2; $x %= 5;
  $x &= 7; $x |= 8; $x ^= 1; $x <<= 2; $x >>= 1;
  @m[1] = 2;
  if ($x) { break } else if ($y) { continue; } else { return; }
  unroll (4) { $x++ }
  while ($x < 10) { $x = $x + 1 }
  printf("%d\n", $x)
}`
	p := mustParse(t, src)
	var ops []string
	for _, s := range p.Probes[0].Body.Stmts {
		switch s := s.(type) {
		case *AssignStmt:
			ops = append(ops, s.Op)
		case *IfStmt:
			elif := s.Else.(*IfStmt)
			ops = append(ops, "if:"+s.Then.Stmts[0].(*JumpStmt).Kind+":"+elif.Then.Stmts[0].(*JumpStmt).Kind+":"+elif.Else.(*Block).Stmts[0].(*JumpStmt).Kind)
		case *UnrollStmt:
			ops = append(ops, "unroll:"+sexpr(s.Count))
		case *WhileStmt:
			ops = append(ops, "while:"+sexpr(s.Cond))
		case *ExprStmt:
			ops = append(ops, sexpr(s.X))
		}
	}
	want := `= += -= *= /= %= &= |= ^= <<= >>= = if:break:continue:return unroll:4 while:(< $x 10) (printf "%d\n" $x)`
	if got := strings.Join(ops, " "); got != want {
		t.Errorf("statements\n got  %s\n want %s", got, want)
	}
}

// TestParseNewerStatements parses the statements of bpftrace 0.22 to
// 0.24 that 0.17 does not have: let without a value, `_ = VALUE` and
// return with a value, which only a script of the newer language takes
// (0.17's syntax error stays the default).
func TestParseNewerStatements(t *testing.T) {
	p := mustParse(t, "begin { let $a; _ = $a + 1; return $a; }")
	var got []string
	for _, s := range p.Probes[0].Body.Stmts {
		switch s := s.(type) {
		case *LetStmt:
			got = append(got, "let "+s.Var.Name)
		case *ExprStmt:
			got = append(got, sexpr(s.X))
		case *JumpStmt:
			got = append(got, s.Kind+" "+sexpr(s.Value))
		}
	}
	if want := "let $a|(+ $a 1)|return $a"; strings.Join(got, "|") != want {
		t.Errorf("statements\n got  %s\n want %s", strings.Join(got, "|"), want)
	}
	if _, err := Parse("stdin", "BEGIN { return $a; }"); err == nil {
		t.Error("BEGIN { return $a; } parses; bpftrace 0.17 refuses it")
	}
}

func TestParseAttachPoints(t *testing.T) {
	tests := []struct {
		src  string
		want AttachPoint
	}{
		{"BEGIN", AttachPoint{Point: attachpoint.Point{Kind: ProbeBegin}}},
		{"END", AttachPoint{Point: attachpoint.Point{Kind: ProbeEnd}}},
		{"usdt:./src/bitcoind:net:inbound_message", AttachPoint{Point: attachpoint.Point{Kind: ProbeUSDT, Target: "./src/bitcoind", Provider: "net", Func: "inbound_message"}}},
		{"usdt:/usr/bin/python3.11:function__entry", AttachPoint{Point: attachpoint.Point{Kind: ProbeUSDT, Target: "/usr/bin/python3.11", Func: "function__entry"}}},
		{"usdt::net:inbound_message", AttachPoint{Point: attachpoint.Point{Kind: ProbeUSDT, Provider: "net", Func: "inbound_message"}}},
		{"usdt:*:net:*", AttachPoint{Point: attachpoint.Point{Kind: ProbeUSDT, Target: "*", Provider: "net", Func: "*"}}},
		{"usdt:$1:net:inbound_message", AttachPoint{Point: attachpoint.Point{Kind: ProbeUSDT, Target: "$1", Provider: "net", Func: "inbound_message"}}},
		{"U:/bin/x:a:b", AttachPoint{Point: attachpoint.Point{Kind: ProbeUSDT, Target: "/bin/x", Provider: "a", Func: "b"}}},
		{"uprobe:/lib/libc.so.6:malloc", AttachPoint{Point: attachpoint.Point{Kind: ProbeUprobe, Target: "/lib/libc.so.6", Func: "malloc"}}},
		{"u:/bin/x:main", AttachPoint{Point: attachpoint.Point{Kind: ProbeUprobe, Target: "/bin/x", Func: "main"}}},
		{"uretprobe:/bin/x:main", AttachPoint{Point: attachpoint.Point{Kind: ProbeUretprobe, Target: "/bin/x", Func: "main"}}},
		{"ur:/bin/x:main", AttachPoint{Point: attachpoint.Point{Kind: ProbeUretprobe, Target: "/bin/x", Func: "main"}}},
		{`uprobe:./bitcoind:"CChainState::ConnectBlock(CBlock const&, BlockValidationState&, CBlockIndex*, CCoinsViewCache&, bool)"`,
			AttachPoint{Point: attachpoint.Point{Kind: ProbeUprobe, Target: "./bitcoind", Func: "CChainState::ConnectBlock(CBlock const&, BlockValidationState&, CBlockIndex*, CCoinsViewCache&, bool)"}}},
		{`usdt:./usdt_quoted_probe:test:"\"probe1\""`, AttachPoint{Point: attachpoint.Point{Kind: ProbeUSDT, Target: "./usdt_quoted_probe", Provider: "test", Func: `"probe1"`}}},
		{"uprobe:/bin/x:0x1234", AttachPoint{Point: attachpoint.Point{Kind: ProbeUprobe, Target: "/bin/x", Address: 0x1234}}},
		{"interval:s:1", AttachPoint{Point: attachpoint.Point{Kind: ProbeInterval, Unit: "s", Freq: 1}}},
		{"interval:ms:$2", AttachPoint{Point: attachpoint.Point{Kind: ProbeInterval, Unit: "ms", FreqParam: "$2"}}},
		{"i:ms:100", AttachPoint{Point: attachpoint.Point{Kind: ProbeInterval, Unit: "ms", Freq: 100}}},
		{"profile:hz:99", AttachPoint{Point: attachpoint.Point{Kind: ProbeProfile, Unit: "hz", Freq: 99}}},
		{"p:us:5", AttachPoint{Point: attachpoint.Point{Kind: ProbeProfile, Unit: "us", Freq: 5}}},
		{"tracepoint:syscalls:sys_enter_read", AttachPoint{Point: attachpoint.Point{Kind: ProbeTracepoint, Target: "syscalls", Func: "sys_enter_read"}}},
		{"t:sched:sched_switch", AttachPoint{Point: attachpoint.Point{Kind: ProbeTracepoint, Target: "sched", Func: "sched_switch"}}},
		{"kprobe:vfs_read", AttachPoint{Point: attachpoint.Point{Kind: ProbeKprobe, Func: "vfs_read"}}},
		{"k:vfs_read", AttachPoint{Point: attachpoint.Point{Kind: ProbeKprobe, Func: "vfs_read"}}},
		{"kretprobe:vfs_read", AttachPoint{Point: attachpoint.Point{Kind: ProbeKretprobe, Func: "vfs_read"}}},
		{"kr:vfs_read", AttachPoint{Point: attachpoint.Point{Kind: ProbeKretprobe, Func: "vfs_read"}}},
	}
	for _, tt := range tests {
		p := mustParse(t, tt.src+" { }")
		got := *p.Probes[0].Attach[0]
		tt.want.Raw = tt.src
		tt.want.Loc = Span{Start: Pos{1, 1}, End: Pos{1, 1 + int32(len(tt.src))}}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s\n got  %+v\n want %+v", tt.src, got, tt.want)
		}
	}
}

func TestParseSeveralAttachPoints(t *testing.T) {
	p := mustParse(t, "usdt:./b:net:inbound_message,\n  usdt:./b:net:outbound_message, BEGIN { }")
	var funcs []string
	for _, a := range p.Probes[0].Attach {
		funcs = append(funcs, a.Func)
	}
	if got := strings.Join(funcs, ","); got != "inbound_message,outbound_message," {
		t.Errorf("funcs = %q", got)
	}
}

func TestParseAttachPointSpans(t *testing.T) {
	// Positions as bpftrace 0.17 reports "usdt target file ... does not
	// exist" for the last attach point of each script.
	tests := []struct {
		src  string
		want Span
	}{
		{"usdt:/nonexist:a:b { }", Span{Pos{1, 1}, Pos{1, 19}}},
		{"/* x */ usdt:/nonexist:a:b { }", Span{Pos{1, 1}, Pos{1, 27}}},
		{"BEGIN { exit(); } usdt:/nonexist:a:b { }", Span{Pos{1, 18}, Pos{1, 37}}},
		{"BEGIN { exit(); }  usdt:/bin/true:a:b,  usdt:/nonexist:a:b { }", Span{Pos{1, 39}, Pos{1, 59}}},
		{"BEGIN { exit(); }\n\nusdt:/nonexist:a:b { }", Span{Pos{1, 18}, Pos{3, 19}}},
	}
	for _, tt := range tests {
		p := mustParse(t, tt.src)
		last := p.Probes[len(p.Probes)-1]
		if got := last.Attach[len(last.Attach)-1].Loc; got != tt.want {
			t.Errorf("%q: span %v, want %v", tt.src, got, tt.want)
		}
	}
}

func TestParseAttachPointErrors(t *testing.T) {
	tests := []struct{ src, want string }{
		{"usdtx:/bin/true:a:b { }", "stdin:1:1-20: ERROR: Invalid probe type: usdtx"},
		{"foo { }", "stdin:1:1-4: ERROR: Invalid probe type: foo"},
		{"usdt:/bin/true { }", "stdin:1:1-15: ERROR: usdt probe type requires 2 or 3 arguments"},
		{"usdt:/bin/true:a:b:c { }", "stdin:1:1-21: ERROR: usdt probe type requires 2 or 3 arguments"},
		{"uprobe:/bin/true { }", "stdin:1:1-17: ERROR: uprobe probe type requires 2 arguments"},
		{"tracepoint:foo { }", "stdin:1:1-15: ERROR: tracepoint probe type requires 2 arguments"},
		{"BEGIN:x { }", "stdin:1:1-8: ERROR: BEGIN probe type requires 0 arguments"},
		{"interval:s { }", "stdin:1:1-11: ERROR: interval probe type requires 2 arguments"},
		{"interval:s:$x { }", `stdin:1:1-14: ERROR: interval probe needs a number, not "$x"`},
		{"interval:x:1 { }", "stdin:1:1-13: ERROR: x is not an accepted unit of time"},
		{"profile:hz:0 { }", "stdin:1:1-13: ERROR: profile frequency should be a positive integer"},
		{"interval:hz:2000000000 { }", "stdin:1:1-23: ERROR: interval rate of 2000000000 hz is above 1000000000 hz, once a nanosecond"},
		{"BEGIN END { }", "stdin:1:7-10: ERROR: syntax error, unexpected identifier, expecting {"},
	}
	checkFirstErrors(t, tests)
}

// checkFirstErrors parses each src, which must fail, and checks the first
// line of its diagnostics against want.
func checkFirstErrors(t *testing.T, tests []struct{ src, want string }) {
	t.Helper()
	for _, tt := range tests {
		_, err := Parse("stdin", tt.src)
		var list ErrorList
		if !errors.As(err, &list) {
			t.Fatalf("Parse(%q) = %v, want an ErrorList", tt.src, err)
		}
		var b bytes.Buffer
		list.Write(&b, "stdin", tt.src)
		if got, _, _ := strings.Cut(b.String(), "\n"); got != tt.want {
			t.Errorf("%s\n got  %s\n want %s", tt.src, got, tt.want)
		}
	}
}

func TestParseStructs(t *testing.T) {
	src := `struct CBlockIndex { const uint8_t *phashBlock; int nHeight; char name[5]; uint64_t w[2]; };
struct Mixed { char c; short s; char d; long l; unsigned int u; bool b; };
struct Outer { char c; struct Mixed m; struct Outer *next; void *p; uint8_t h[3][2] }
BEGIN { }`
	p := mustParse(t, src)
	// Offsets and sizes as gcc lays these structs out on x86-64.
	want := `CBlockIndex 40: uint8 * phashBlock @0; int32 nHeight @8; string[5] name @12; uint64[2] w @24;
Mixed 24: int8 c @0; int16 s @2; int8 d @4; int64 l @8; uint32 u @16; uint8 b @20;
Outer 56: int8 c @0; struct Mixed m @8; struct Outer * next @32; void * p @40; uint8[2][3] h @48;
`
	if got := structLayouts(p); got != want {
		t.Errorf("structs\n got:\n%s want:\n%s", got, want)
	}
	if m := p.Structs[2].Fields[1].Type; m.Size != 24 {
		t.Errorf("struct Mixed field has size %d, want 24", m.Size)
	}
	if h := p.Structs[2].Fields[4].Type; h.Kind != KindArray || h.Len != 3 || h.Size != 6 || h.Elem.Len != 2 {
		t.Errorf("h has type %+v, want 3 arrays of 2 bytes", h)
	}
}

// structLayouts is the structs of p, a line each: name, size, and each
// field's type, name and offset.
func structLayouts(p *Program) string {
	var b strings.Builder
	for _, s := range p.Structs {
		fmt.Fprintf(&b, "%s %d:", s.Name, s.Size)
		for _, f := range s.Fields {
			fmt.Fprintf(&b, " %s %s @%d;", f.Type, f.Name, f.Offset)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// TestParseNestedStructs parses structs defined in place in a member, as
// C allows, named or anonymous, the last member of each without ";": each
// is defined before the struct it is in, an anonymous one named after its
// place, and a named one is a type of the script after it.
func TestParseNestedStructs(t *testing.T) {
	src := `struct Foo { struct { int m[1] } y; struct Bar { char c; long l } a; struct Bar b }
BEGIN { $x = (struct Bar *)0; }`
	p := mustParse(t, src)
	want := `Foo::(anonymous at 1:21) 4: int32[1] m @0;
Bar 16: int8 c @0; int64 l @8;
Foo 40: struct Foo::(anonymous at 1:21) y @0; struct Bar a @8; struct Bar b @24;
`
	if got := structLayouts(p); got != want {
		t.Errorf("structs\n got:\n%s want:\n%s", got, want)
	}
}

func TestParseStructErrors(t *testing.T) {
	tests := []struct{ src, want string }{
		{"struct A { float f; }; BEGIN { }", "stdin:1:12-17: ERROR: struct A: unknown type float"},
		{"struct A { struct B b; }; BEGIN { }", "stdin:1:12-18: ERROR: struct A: field b uses struct B before its definition"},
		{"struct A { int x; int x; }; BEGIN { }", "stdin:1:19-22: ERROR: struct A: duplicate field x"},
	}
	checkFirstErrors(t, tests)
}

func TestParseStrings(t *testing.T) {
	tests := []struct{ lit, want string }{
		{`"plain"`, "plain"},
		{`"a\nb\tc\r\\\""`, "a\nb\tc\r\\\""},
		{`"\0"`, "\x00"},
		{`"\x41\x4"`, "A\x04"},
		{`"\101\60"`, "A0"},
		{`"µs"`, "µs"},
		{`"%s\r\n"`, "%s\r\n"},
	}
	for _, tt := range tests {
		e := parseExpr(t, tt.lit)
		if s, ok := e.(*StrLit); !ok || s.Value != tt.want {
			t.Errorf("%s = %s, want %q", tt.lit, sexpr(e), tt.want)
		}
	}
	errs := []struct{ src, want string }{
		{`BEGIN { $x = "\e"; }`, `stdin:1:14-17: ERROR: invalid escape character '\e'`},
		{`BEGIN { $x = "\'"; }`, `stdin:1:14-17: ERROR: invalid escape character '\''`},
		{`BEGIN { $x = "\x"; }`, `stdin:1:14-17: ERROR: invalid escape character '\x'`},
		{`BEGIN { $x = "ab\777"; }`, `stdin:1:14-21: ERROR: octal escape sequence out of range '\777'`},
	}
	checkFirstErrors(t, errs)
}

func TestParseIntegerErrors(t *testing.T) {
	tests := []struct{ src, want string }{
		{"BEGIN { $x = 1e20; }", "stdin:1:14-18: ERROR: Exponent will overflow integer range: 20"},
		{"BEGIN { $x = 0e19; }", "stdin:1:14-18: ERROR: Exponent will overflow integer range: 19"},
		{"BEGIN { $x = 0e99999999999999999999; }", "stdin:1:14-36: ERROR: Exponent will overflow integer range: 99999999999999999999"},
		{"BEGIN { $x = 18e18; }", "stdin:1:14-19: ERROR: Coefficient part of scientific literal must be in range (0,9), got: 18"},
		{"BEGIN { $x = 99999999999999999999; }", "stdin:1:14-34: ERROR: integer literal out of range: 99999999999999999999"},
		{"BEGIN { $x = 09; }", "stdin:1:14-16: ERROR: Found trailing non-numeric characters"},
		{"BEGIN { $x = 1_; }", "stdin:1:14-16: ERROR: syntax error, unexpected identifier, expecting }"},
		{"BEGIN { $x = 0x; }", "stdin:1:14-16: ERROR: syntax error, unexpected identifier, expecting }"},
		{"BEGIN { $x = 2e3e3; }", "stdin:1:14-19: ERROR: syntax error, unexpected identifier, expecting }"},
	}
	checkFirstErrors(t, tests)
}

func TestParseSpans(t *testing.T) {
	src := "BEGIN {\n  $x = bufx(1, 2) + $y;\n  @m[\"a\"]++;\n\n  if ($x) { } else if ($y) { } else { }\n}"
	p := mustParse(t, src)
	assign := p.Probes[0].Body.Stmts[0].(*AssignStmt)
	bin := assign.RHS.(*Binary)
	call := bin.X.(*Call)
	inc := p.Probes[0].Body.Stmts[1].(*ExprStmt).X.(*IncDec)
	ifs := p.Probes[0].Body.Stmts[2].(*IfStmt)
	tests := []struct {
		name string
		got  Span
		want Span
	}{
		{"probe", p.Probes[0].Loc, Span{Pos{1, 1}, Pos{6, 2}}},
		{"body", p.Probes[0].Body.Loc, Span{Pos{1, 7}, Pos{6, 2}}},
		{"assign", assign.Loc, Span{Pos{2, 3}, Pos{2, 23}}},
		{"lhs", assign.LHS.Span(), Span{Pos{2, 3}, Pos{2, 5}}},
		{"binary", bin.Loc, Span{Pos{2, 8}, Pos{2, 23}}},
		{"call", call.Loc, Span{Pos{2, 8}, Pos{2, 18}}},
		{"call name", call.NameLoc, Span{Pos{2, 8}, Pos{2, 12}}},
		{"second arg", call.Args[1].Span(), Span{Pos{2, 16}, Pos{2, 17}}},
		{"post++", inc.Loc, Span{Pos{3, 3}, Pos{3, 12}}},
		{"if", ifs.Loc, Span{Pos{5, 3}, Pos{5, 40}}},
		{"else if", ifs.Else.Span(), Span{Pos{5, 20}, Pos{5, 40}}},
		{"map", inc.X.Span(), Span{Pos{3, 3}, Pos{3, 10}}},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s span = %v, want %v", tt.name, tt.got, tt.want)
		}
	}
}

// TestParseErrorScripts parses every testdata/parse/*.bt; each holds a
// mistake and, on its first line, the first line of bpftrace 0.17's
// diagnostic for it. The scripts of testdata/parse/newer hold mistakes in
// forms 0.17 does not have, with gotrace's diagnostic.
func TestParseErrorScripts(t *testing.T) {
	files, err := filepath.Glob("testdata/parse/*.bt")
	newer, _ := filepath.Glob("testdata/parse/newer/*.bt")
	files = append(files, newer...)
	if err != nil || len(files) == 0 {
		t.Fatalf("no test scripts: %v", err)
	}
	for _, f := range files {
		src, want := readErrorScript(t, f)
		name := filepath.Base(f)
		p, err := Parse(name, src)
		if err == nil {
			// Misused macros are found when they are expanded.
			err = Desugar(p)
		}
		var list ErrorList
		if !errors.As(err, &list) {
			t.Errorf("%s: Parse and Desugar = %v, want an ErrorList", name, err)
			continue
		}
		var b bytes.Buffer
		list.Write(&b, name, src)
		if got, _, _ := strings.Cut(b.String(), "\n"); got != want {
			t.Errorf("%s:\n got  %s\n want %s", name, got, want)
		}
	}
}

func readErrorScript(t *testing.T, path string) (src, want string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(string(b), "\n")
	want, ok := strings.CutPrefix(first, "// error: ")
	if !ok {
		t.Fatalf("%s: first line is not an // error: comment", path)
	}
	return string(b), want
}

// TestParseErrorScriptsAgainstBpftrace checks that the expectations in
// testdata/parse are what bpftrace itself prints, and that gotrace's whole
// first diagnostic (message, quoted line, underline) matches bpftrace's.
func TestParseErrorScriptsAgainstBpftrace(t *testing.T) {
	bpftrace := testenv.RequireBpftrace(t)
	files, _ := filepath.Glob("testdata/parse/*.bt")
	for _, f := range files {
		src, want := readErrorScript(t, f)
		name := filepath.Base(f)
		cmd := exec.Command(bpftrace, "-d", name)
		cmd.Dir = "testdata/parse"
		out, _ := cmd.CombinedOutput()
		lines := strings.Split(string(out), "\n")
		first := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, name+":") })
		if first < 0 {
			t.Errorf("%s: bpftrace printed no diagnostic:\n%s", name, out)
			continue
		}
		if lines[first] != want {
			t.Errorf("%s: bpftrace says\n %s\nthe test expects\n %s", name, lines[first], want)
		}
		p, err := Parse(name, src)
		if err == nil {
			// Misused macros are found when they are expanded.
			err = Desugar(p)
		}
		var list ErrorList
		if !errors.As(err, &list) {
			t.Errorf("%s: Parse and Desugar = %v, want an ErrorList", name, err)
			continue
		}
		var b bytes.Buffer
		list[:1].Write(&b, name, src)
		ours := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
		theirs := lines[first:min(first+len(ours), len(lines))]
		if !slices.Equal(ours, theirs) {
			t.Errorf("%s: gotrace prints\n%s\nbpftrace prints\n%s", name, strings.Join(ours, "\n"), strings.Join(theirs, "\n"))
		}
	}
}

// TestParseGoodScripts compares the Dump of every testdata/parse/good/*.bt
// with its .ast golden file (go test -update rewrites them).
func TestParseGoodScripts(t *testing.T) {
	files, err := filepath.Glob("testdata/parse/good/*.bt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no good scripts: %v", err)
	}
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		p, err := Parse(filepath.Base(f), string(src))
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		var b bytes.Buffer
		Dump(&b, p, nil)
		golden.Compare(t, strings.TrimSuffix(f, ".bt")+".ast", b.Bytes())
	}
}

// TestParseProjectScripts parses the scripts the project ships and tests
// with; each must parse without errors.
func TestParseProjectScripts(t *testing.T) {
	var files []string
	for _, pat := range []string{"../scripts/*.bt", "../testdata/scripts/*.bt"} {
		m, _ := filepath.Glob(pat)
		files = append(files, m...)
	}
	if len(files) == 0 {
		t.Skip("no project scripts yet")
	}
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Parse(filepath.Base(f), string(src)); err != nil {
			var b bytes.Buffer
			if list, ok := err.(ErrorList); ok {
				list.Write(&b, f, string(src))
			}
			t.Errorf("%s: %v\n%s", f, err, b.String())
		}
	}
}

// TestParseBounded feeds hostile input: deep nesting must be refused with a
// clear error, and a large script must parse in bounded time.
func TestParseBounded(t *testing.T) {
	deep := func(open, close string, n int) string {
		return "BEGIN { $x = " + strings.Repeat(open, n) + "1" + strings.Repeat(close, n) + "; }"
	}
	tests := []struct {
		name, src, want string
	}{
		{"parens", deep("(", ")", 10000), "nested too deeply: more than 200 levels"},
		{"not", deep("!", "", 10000), "nested too deeply: more than 200 levels"},
		{"minus", deep("-", "", 10000), "nested too deeply: more than 200 levels"},
		{"casts", deep("(uint8)", "", 10000), "nested too deeply: more than 200 levels"},
		{"ternaries", deep("1 ? 2 : ", "", 10000), "nested too deeply: more than 200 levels"},
		{"map keys", deep("@m[", "]", 10000), "nested too deeply: more than 200 levels"},
		{"blocks", "BEGIN " + strings.Repeat("{ if (1) ", 10000) + strings.Repeat("}", 10000), "nested too deeply: more than 200 levels"},
	}
	for _, tt := range tests {
		start := time.Now()
		_, err := Parse("stdin", tt.src)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want %q", tt.name, err, tt.want)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("%s: took %v", tt.name, d)
		}
	}

	// Wide is fine, and so is deep up to the limit.
	args := strings.Repeat(", (uint32)(int8)arg0 ? 1 : 2", 500)
	fine := []string{
		"BEGIN { printf(\"%d\"" + args + "); }",
		deep("(", ")", 150),
		deep("-(uint8)!", "", 60),
		"BEGIN { if (1) { }" + strings.Repeat(" else if (1) { }", 150) + " }",
		// An else-if chain is one level however long: bpftrace 0.17 takes
		// 10,000 branches.
		"BEGIN { if (1) { }" + strings.Repeat(" else if (1) { }", 10000) + " }",
	}
	for _, src := range fine {
		if _, err := Parse("stdin", src); err != nil {
			t.Errorf("Parse(%.40q...): %v", src, err)
		}
	}

	// About 1 MB of ordinary statements in many probes.
	var b strings.Builder
	for b.Len() < 1<<20 {
		fmt.Fprintf(&b, "usdt:./bitcoind:net:m%d /arg1 > %d/ { @c[str(arg0), arg1 %% 7] = count(); $x = (uint32)arg2 * 3 + 1; if ($x > 5) { printf(\"%%d\\n\", $x); } }\n", b.Len(), b.Len())
	}
	start := time.Now()
	p, err := Parse("big.bt", b.String())
	if err != nil {
		t.Fatalf("big script: %v", err)
	}
	// About 3 s of CPU here; the bound is loose because the machine is shared.
	if d := time.Since(start); d > 60*time.Second {
		t.Errorf("1 MB script took %v", d)
	}
	t.Logf("1 MB script: %d probes in %v", len(p.Probes), time.Since(start))
}

// TestParseLongExpression parses 400 KB of 1+1+...+1: the parser must not
// grow worse than linearly with the number of operators. Building the
// tree and the tokens takes about 560 bytes per byte of source; the
// participle grammar took 5,700.
func TestParseLongExpression(t *testing.T) {
	src := "BEGIN { @ = 1" + strings.Repeat("+1", 200_000) + "; }"
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	p, err := Parse("long.bt", src)
	d := time.Since(start)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := p.Probes[0].Body.Stmts[0].(*AssignStmt).RHS.(*Binary); !ok {
		t.Fatal("the right-hand side is not a sum")
	}
	perByte := (after.TotalAlloc - before.TotalAlloc) / uint64(len(src))
	if perByte > 1500 {
		t.Errorf("parsing allocated %d bytes per byte of source", perByte)
	}
	t.Logf("%d bytes: %v, %d bytes allocated per byte", len(src), d, perByte)
}

func BenchmarkParse(b *testing.B) {
	src, err := os.ReadFile("testdata/parse/good/connectblock_benchmark.bt")
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		if _, err := Parse("connectblock_benchmark.bt", string(src)); err != nil {
			b.Fatal(err)
		}
	}
}

// TestRunStart checks where diagnostics start for a token: at the start of
// its run, which only blanks outside comments and strings end.
func TestRunStart(t *testing.T) {
	tests := []struct {
		src     string
		at      Pos
		wantCol int
	}{
		{`BEGIN { $y = str($x); }`, Pos{1, 18}, 14},             // $x in str($x
		{`BEGIN { $y = str( $x); }`, Pos{1, 19}, 19},            // after a blank
		{`BEGIN { $y = 1;/*c*/$x; }`, Pos{1, 21}, 14},           // a comment does not end a run
		{`BEGIN { /* a b */foo(1); }`, Pos{1, 18}, 9},           // nor do blanks inside it
		{`BEGIN { $y = (" ")%$x; }`, Pos{1, 20}, 14},            // nor inside a string
		{"BEGIN { /*a\n b*/$x; }", Pos{2, 5}, 1},                // but a newline in a comment does
		{"#define M 1 + $x\nBEGIN { $y = M; }", Pos{2, 15}, 14}, // a macro's tokens are in its name's run
	}
	for _, tt := range tests {
		p := mustParse(t, tt.src)
		if got := p.runStart(tt.at); got != (Pos{tt.at.Line, int32(tt.wantCol)}) {
			t.Errorf("%q: run of %v starts at %v, want column %d", tt.src, tt.at, got, tt.wantCol)
		}
	}
}
