package lang

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"slices"
	"strings"
	"testing"

	"github.com/gotrace/gotrace/internal/settings"
	"github.com/gotrace/gotrace/internal/testenv"
)

// checkSource parses and checks src with cfg.
func checkSource(t *testing.T, src string, cfg Config) (*Program, *Info, ErrorList) {
	t.Helper()
	p := mustParse(t, src)
	info, err := Analyze(p, cfg, nil)
	if err == nil {
		return p, info, nil
	}
	var l ErrorList
	if !errors.As(err, &l) {
		t.Fatalf("check %q: %v is not an ErrorList", src, err)
	}
	return p, info, l
}

// diagLines renders errors as "LINE:COL-COL: message" lines.
func diagLines(l ErrorList) []string {
	var lines []string
	for _, e := range l {
		lines = append(lines, e.Error())
	}
	return lines
}

var (
	expectRE = regexp.MustCompile(`(?m)^// error: (.*)$`)
	paramsRE = regexp.MustCompile(`(?m)^// (?:params|args):(.*)$`)
	unsafeRE = regexp.MustCompile(`(?m)^// unsafe$`)
	hintRE   = regexp.MustCompile(`(?m)^// hint: (.*)$`)
)

// scriptConfig reads the configuration a test script asks for in its
// comments: "// params: a b" and "// unsafe".
func scriptConfig(src string) Config {
	var cfg Config
	if m := paramsRE.FindStringSubmatch(src); m != nil {
		cfg.Params = strings.Fields(m[1])
	}
	cfg.Unsafe = unsafeRE.MatchString(src)
	return cfg
}

// TestCheckBad checks every script in testdata/check/bad and compares its
// diagnostics with the "// error: LINE:COL-COL: message" comments in it.
func TestCheckBad(t *testing.T) {
	files, err := filepath.Glob("testdata/check/bad/*.bt")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 25 {
		t.Fatalf("found %d bad scripts, want at least 25", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			src := string(data)
			var want []string
			for _, m := range expectRE.FindAllStringSubmatch(src, -1) {
				want = append(want, m[1])
			}
			if len(want) == 0 {
				t.Fatal("no // error: comment")
			}
			_, _, errs := checkSource(t, src, scriptConfig(src))
			got := diagLines(errs)
			if !slices.Equal(got, want) {
				t.Errorf("diagnostics:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			for _, m := range hintRE.FindAllStringSubmatch(src, -1) {
				if !slices.ContainsFunc(errs, func(e *Error) bool { return e.Hint == m[1] }) {
					t.Errorf("no diagnostic has the hint %q", m[1])
				}
			}
		})
	}
}

// TestCheckGood checks the scripts that must check clean: testdata/check/
// good and the project's example and test scripts.
func TestCheckGood(t *testing.T) {
	var files []string
	for _, pat := range []string{"testdata/check/good/*.bt", "../scripts/*.bt", "../testdata/scripts/*.bt"} {
		m, err := filepath.Glob(pat)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) < 5 {
		t.Fatalf("found only %d good scripts", len(files))
	}
	for _, f := range files {
		t.Run(f, func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			src := string(data)
			cfg := scriptConfig(src)
			if cfg.Params == nil {
				// Scripts that take positional parameters get numeric ones.
				cfg.Params = []string{"1", "2", "3", "4", "5"}
			}
			p, info, errs := checkSource(t, src, cfg)
			if errs != nil {
				var buf bytes.Buffer
				errs.Write(&buf, f, src)
				t.Fatalf("check failed:\n%s", buf.String())
			}
			assertTyped(t, p, info)
		})
	}
}

// assertTyped fails when an expression of a checked program has no type
// (stack modes, nsecs()'s clock names and the struct-free Builtin in
// sizeof excepted).
func assertTyped(t *testing.T, p *Program, info *Info) {
	t.Helper()
	walkExprs(p, func(e Expr) {
		if info.TypeOf(e).Kind != KindNone {
			return
		}
		if b, ok := e.(*Builtin); ok && (isStackMode(b.Name) || slices.Contains(nsecsClocks, b.Name)) {
			return
		}
		t.Errorf("%v: %T has no type", e.Span().Start, e)
	})
}

// walkExprs calls f for every expression of p.
func walkExprs(p *Program, f func(Expr)) {
	var expr func(e Expr)
	expr = func(e Expr) {
		f(e)
		switch e := e.(type) {
		case *MapExpr:
			for _, k := range e.Keys {
				expr(k)
			}
		case *Call:
			for _, a := range e.Args {
				expr(a)
			}
		case *Binary:
			expr(e.X)
			expr(e.Y)
		case *Unary:
			expr(e.X)
		case *IncDec:
			expr(e.X)
		case *Ternary:
			expr(e.Cond)
			expr(e.Then)
			expr(e.Else)
		case *Cast:
			expr(e.X)
		case *Tuple:
			for _, x := range e.Elems {
				expr(x)
			}
		case *FieldAccess:
			expr(e.X)
		case *IndexExpr:
			expr(e.X)
			expr(e.Index)
		}
	}
	var stmt func(s Stmt)
	stmt = func(s Stmt) {
		switch s := s.(type) {
		case *Block:
			for _, x := range s.Stmts {
				stmt(x)
			}
		case *ExprStmt:
			expr(s.X)
		case *AssignStmt:
			expr(s.LHS)
			expr(s.RHS)
		case *IfStmt:
			expr(s.Cond)
			stmt(s.Then)
			if s.Else != nil {
				stmt(s.Else)
			}
		case *UnrollStmt:
			expr(s.Count)
			stmt(s.Body)
		case *WhileStmt:
			expr(s.Cond)
			stmt(s.Body)
		}
	}
	for _, pr := range p.Probes {
		if pr.Pred != nil {
			expr(pr.Pred)
		}
		stmt(pr.Body)
	}
}

// TestCheckTypes checks the type of the value assigned to $v, bpftrace
// 0.17's types as `bpftrace -d` prints them.
func TestCheckTypes(t *testing.T) {
	tests := []struct {
		probe, body, want string
	}{
		{"BEGIN", "$v = 1", "int64"},
		{"BEGIN", "$v = nsecs", "unsigned int64"},
		{"BEGIN", "$v = pid", "unsigned int64"},
		{"BEGIN", "$v = comm", "string[16]"},
		{"BEGIN", `$v = "abc"`, "string[4]"},
		{"BEGIN", "$v = str(1)", "string[64]"},
		{"BEGIN", "$v = str(1, 8)", "string[64]"},
		{"BEGIN", "$v = buf(1, 8)", "buffer[9]"},
		{"BEGIN", "$v = buf(1, 1000)", "buffer[65]"},
		{"BEGIN", "$v = buf(1, nsecs)", "buffer[65]"},
		{"BEGIN", "$v = (uint8)1", "unsigned int8"},
		{"BEGIN", "$v = (int16)1 + (uint8)1", "unsigned int64"},
		{"BEGIN", "$v = (int8)1 + (int32)1", "int64"},
		{"BEGIN", "$v = 1 < 2", "int64"},
		{"BEGIN", "$v = 1 < nsecs", "unsigned int64"},
		{"BEGIN", `$v = "a" == "bc"`, "unsigned int64"},
		{"BEGIN", "$v = !(uint8)3", "unsigned int8"},
		{"BEGIN", "$v = -(uint8)3", "unsigned int64"},
		{"BEGIN", "$v = ~1", "int64"},
		{"BEGIN", "$v = *(uint8*)1", "unsigned int8"},
		{"BEGIN", "$v = *(uint64*)1", "unsigned int64"},
		{"BEGIN", "$v = *1", "unsigned int64"},
		{"BEGIN", "$v = (int8*)1 + 3", "int8 *"},
		{"BEGIN", `$v = (1, "a")`, "(int64,string[2])"},
		{"BEGIN", `$v = (1, "a").1`, "string[2]"},
		{"begin", `$v = (a = 1, b = "x")`, "(a=int64,b=string[2])"},
		{"begin", `$v = (a = 1, b = "x").b`, "string[2]"},
		{"begin", "$a = (uint8)1; $v = &$a", "unsigned int8 *"},
		{"begin", `$a = "x"; $v = (int8 *)&$a`, "int8 *"},
		{"begin", "let $a; $v = $a; $a = (int16)2", "int16"},
		{"begin", "$v = if (1) { 2 } else { 3 }", "int64"},
		{"begin", `$v = (int8[])"hello"`, "int8[6]"},
		{"begin", "$a = (int16)1; $v: typeof($a) = 3", "int16"},
		{"begin", "$v = (bool[2])(uint16)1", "bool[2]"},
		{"begin", "$v = ((uint16[4])1)[3]", "unsigned int16"},
		{"BEGIN", `$v = 1 ? "a" : "bcd"`, "string[64]"},
		{"BEGIN", "$v = 1 ? (uint8)1 : (int32)2", "unsigned int64"},
		{"BEGIN", `$v = strftime("%H", nsecs)`, "timestamp"},
		{"BEGIN", "$v = usym(1)", "usym"},
		{"BEGIN", "$v = ntop(1)", "inet"},
		{"BEGIN", "$v = ustack", "ustack"},
		{"BEGIN", "$v = ustack(perf, 3)", "ustack"},
		{"BEGIN", "$v = probe", "probe"},
		{"BEGIN", "$v = sizeof(uint32)", "unsigned int64"},
		{"BEGIN", `$v = strncmp("a", "b", 1)`, "unsigned int64"},
		{"BEGIN", "$v = uptr(1)", "int64"},
		{"BEGIN", "$v = uptr((uint8*)1)", "unsigned int8 *"},
		{"BEGIN", "$v = $1", "int64"},
		{"BEGIN", "$v = $#", "int64"},
		{"BEGIN", "$v = str($2)", "string[64]"},
		{"BEGIN", `$v = "a"; $v = "abcdef"`, "string[7]"},
		{"BEGIN", "$v = (uint8)1; $v = 300", "unsigned int8"},
		{"usdt:/bin/x:p:n", "$v = arg0", "unsigned int64"},
		{"usdt:/bin/x:p:n", "$v = arg11", "unsigned int64"},
		{"uretprobe:/bin/x:f", "$v = retval", "unsigned int64"},
		{"uprobe:/bin/x:f", "$v = func", "usym"},
		{"uprobe:/bin/x:f", "$v = cpid", "unsigned int32"},
		{"struct S { int a; char n[8]; } uprobe:/bin/x:f", "$v = ((struct S *)arg0)->a", "int32"},
		{"struct S { int a; char n[8]; } uprobe:/bin/x:f", "$v = ((struct S *)arg0)->n", "string[8]"},
	}
	for _, tt := range tests {
		src := tt.probe + " { " + tt.body + "; }"
		t.Run(tt.body, func(t *testing.T) {
			p, info, errs := checkSource(t, src, Config{Params: []string{"5", "abc"}, Child: true})
			if errs != nil {
				t.Fatalf("%s: %v", src, errs)
			}
			stmts := p.Probes[0].Body.Stmts
			a := stmts[len(stmts)-1].(*AssignStmt)
			if got := typeName(info.TypeOf(a.LHS)); got != tt.want {
				t.Errorf("%s: $v is %s, want %s", src, got, tt.want)
			}
		})
	}
}

// TestCheckMaps checks Program.Maps: key and value types, lhist bounds,
// first positions, and the values bpftrace 0.17 makes unsigned.
func TestCheckMaps(t *testing.T) {
	src := `BEGIN {
  @c[comm, pid] = count();
  @h = lhist(nsecs, 0, 100, 10);
  @s["ab"] = 1;
  @s["abcdef"] = 2;
  @u += 3;
  @i++;
  @t = (1, "x");
  @t = (2, "xyz");
}
END { @n = @late + 1; }
END { @late = (int8)1; }`
	_, info, errs := checkSource(t, src, Config{})
	if errs != nil {
		t.Fatal(errs)
	}
	want := map[string]string{
		"@c": "key (string[16],unsigned int64) value count",
		"@h": "key none value lhist {0 100 10}",
		"@s": "key string[7] value int64",
		"@u": "key none value unsigned int64",
		"@i": "key none value int64",
		"@t": "key none value (int64,string[4])",
		// Typed while @late was still unknown: unsigned, as in bpftrace.
		"@n":    "key none value unsigned int64",
		"@late": "key none value int64",
	}
	if len(info.Maps) != len(want) {
		t.Errorf("%d maps, want %d", len(info.Maps), len(want))
	}
	for name, w := range want {
		m := info.Maps[name]
		if m == nil {
			t.Errorf("no map %s", name)
			continue
		}
		got := fmt.Sprintf("key %s value %s", typeName(m.Key), typeName(m.Value))
		if m.Value.Kind == KindLhist {
			got += fmt.Sprintf(" %v", m.Lhist)
		}
		if got != w {
			t.Errorf("%s: %s, want %s", name, got, w)
		}
	}
	if pos := info.Maps["@s"].Pos.Start; pos != (Pos{Line: 4, Col: 3}) {
		t.Errorf("@s first at %v, want 4:3", pos)
	}
}

// TestCheckUnrollAndParams checks the unroll counts and NumParams the
// checker records.
func TestCheckUnrollAndParams(t *testing.T) {
	src := `BEGIN { $i = 0; unroll(32) { $i++; } unroll($2) { $i++; } printf("%s %d\n", str($3), $#); }`
	p, info, errs := checkSource(t, src, Config{Params: []string{"x", "7", "name"}})
	if errs != nil {
		t.Fatal(errs)
	}
	var ns []int
	for _, s := range p.Probes[0].Body.Stmts {
		if u, ok := s.(*UnrollStmt); ok {
			ns = append(ns, info.UnrollCount(u))
		}
	}
	if !slices.Equal(ns, []int{32, 7}) {
		t.Errorf("unroll counts %v, want [32 7]", ns)
	}
	if info.NumParams != 3 {
		t.Errorf("NumParams %d, want 3", info.NumParams)
	}
}

// TestCheckConfig checks that Check refuses a bad configuration.
func TestCheckConfig(t *testing.T) {
	p := mustParse(t, "BEGIN { exit(); }")
	for _, cfg := range []Config{{Values: settings.Values{StrLen: -1}}, {Values: settings.Values{StrLen: settings.MaxStrLen + 1}}, {Values: settings.Values{MapKeysMax: -5}}} {
		if _, err := Analyze(p, cfg, nil); err == nil {
			t.Errorf("Check with %+v succeeded", cfg)
		}
	}
	if _, err := Analyze(p, Config{Values: settings.Values{StrLen: 128}}, nil); err != nil {
		t.Errorf("Check with StrLen 128: %v", err)
	}
}

// TestCheckStrLen checks that str() follows Config.StrLen.
func TestCheckStrLen(t *testing.T) {
	_, info, errs := checkSource(t, "BEGIN { @s = str(0); }", Config{Values: settings.Values{StrLen: 70}})
	if errs != nil {
		t.Fatal(errs)
	}
	if got := info.Maps["@s"].Value; !got.Equal(String(70)) {
		t.Errorf("@s is %s, want string[70]", typeName(got))
	}
}

// TestCheckWarnings checks bpftrace 0.17's warnings, where they are and
// what they say (each table row was checked against bpftrace 0.17):
// integers of different signs (arithmetic or a comparison of a signed
// with an unsigned one, a division or modulo where either is signed; a
// literal or positional parameter that is not negative counts as
// either), a string literal longer than the string it is compared with,
// print()'s top and div on a stats() map, typed before or after.
// TestWarningsAgainstBpftrace runs bpftrace 0.17 on the same table.
func TestCheckWarnings(t *testing.T) {
	checkWarnings(t, warningCases)
}

// checkWarnings checks each script, with 2 as $1, and compares the
// warnings it gets with want ("LINE:COL-COL: message" lines).
func checkWarnings(t *testing.T, cases []struct{ src, want string }) {
	t.Helper()
	for _, tc := range cases {
		_, info, errs := checkSource(t, tc.src, Config{Params: []string{"2"}})
		if errs != nil {
			t.Fatalf("%s: %v", tc.src, errs)
		}
		if got := strings.Join(diagLines(info.Warnings), "\n"); got != tc.want {
			t.Errorf("%s: warnings %q, want %q", tc.src, got, tc.want)
		}
	}
}

// TestWarningsAgainstBpftrace checks TestCheckWarnings' table against
// bpftrace 0.17: the warnings it prints of each script (-d: checked, not
// run), with 2 as $1.
func TestWarningsAgainstBpftrace(t *testing.T) {
	if testing.Short() {
		t.Skip("runs bpftrace once per script")
	}
	bpftrace := testenv.RequireBpftrace(t)
	warnLine := regexp.MustCompile(`(?m)^stdin:(\d+:\d+-\d+: )WARNING: (.*)$`)
	for _, tc := range warningCases {
		out, _ := exec.Command(bpftrace, "-d", "-e", tc.src, "2").CombinedOutput()
		var got []string
		for _, m := range warnLine.FindAllStringSubmatch(string(out), -1) {
			got = append(got, m[1]+m[2])
		}
		if strings.Join(got, "\n") != tc.want {
			t.Errorf("%s: bpftrace warns %q, the table %q", tc.src, got, tc.want)
		}
	}
}

// warningCases are scripts and the warnings bpftrace 0.17 gives of them,
// one per line.
var warningCases = func() []struct{ src, want string } {
	const division = "signed operands for '%s' can lead to undefined behavior (cast to unsigned to silence warning)"
	const comparison = "comparison of integers of different signs: '%s' and '%s' can lead to undefined behavior"
	const arithmetic = "arithmetic on integers of different signs: '%s' and '%s' can lead to undefined behavior"
	const longLiteral = "The literal is longer than the variable string (size=%d), condition will always be false"
	const printStats = "print()'s top and div arguments are ignored when used on stats() maps."
	return []struct{ src, want string }{
		{"BEGIN { $x = 5; $y = $x / 2; }", "1:25-26: " + fmt.Sprintf(division, "/")},
		{"BEGIN { $y = (int64)5 % 2; }", "1:23-24: " + fmt.Sprintf(division, "%")},
		{"BEGIN { $y = 5 / -1; }", "1:16-17: " + fmt.Sprintf(division, "/")},
		{"BEGIN { @a = 5; $y = @a / 2; }", "1:25-26: " + fmt.Sprintf(division, "/")},
		{"BEGIN { $y = 5; $y /= 2; }", "1:20-22: " + fmt.Sprintf(division, "/")},
		{"BEGIN { $y = 1 / 3; }", ""},
		{"BEGIN { $y = nsecs / 1000; }", ""},
		{"BEGIN { $y = (uint64)-7 / 2; }", ""},
		{"BEGIN { $y = 10 / $1; }", ""},
		{"BEGIN { @z /= 2; }", ""},
		{"BEGIN { $x = -1; $b = $x < nsecs; }", "1:26-27: " + fmt.Sprintf(comparison, "int64", "unsigned int64")},
		{"BEGIN { $b = nsecs > -1; }", "1:20-21: " + fmt.Sprintf(comparison, "unsigned int64", "int64")},
		{"BEGIN { $x = (uint32)5; $b = $x == (int32)5; }", "1:33-35: " + fmt.Sprintf(comparison, "unsigned int32", "int32")},
		{"BEGIN { $b = nsecs > 0; }", ""},
		{"BEGIN { $b = pid == 1; }", ""},
		{"BEGIN { $x = 5; $b = $x < -$1; }", ""},
		{"BEGIN { $x = 5; $b = $x && nsecs; }", ""},
		{"BEGIN { $x = 5; $b = nsecs + $x; }", "1:28-29: " + fmt.Sprintf(arithmetic, "unsigned int64", "int64")},
		{"BEGIN { $x = 5; $x += nsecs; }", "1:20-22: " + fmt.Sprintf(arithmetic, "int64", "unsigned int64")},
		{"BEGIN { $b = nsecs - 5; $c = nsecs & -1; }", ""},
		{"BEGIN { $s = \"a\"; $b = $s == \"abcdefgh\"; }", "1:24-40: " + fmt.Sprintf(longLiteral, 2)},
		{"BEGIN { $b = \"abcdefghijklmnopq\" == comm; }", "1:14-41: " + fmt.Sprintf(longLiteral, 16)},
		{"BEGIN { $s = \"ab\"; $b = $s == \"abc\"; $c = $s != \"abcdefgh\"; $d = \"abc\" == \"abcdef\"; }", ""},
		{"BEGIN { @s = stats(1); print(@s, 1, 2); }", "1:24-39: " + printStats},
		{"BEGIN { print(@s, 1); @s[1] = stats(1); }", "1:9-21: " + printStats},
		{"BEGIN { @s = stats(1); print(@s); @h = hist(1); print(@h, 1, 2); }", ""},
	}
}()

// TestCheckWrite checks complete diagnostics, as the CLI prints them,
// against bpftrace 0.17's (captured in bpftrace-compat.md).
func TestCheckWrite(t *testing.T) {
	src := "// e01\nBEGIN { $x = bufx(1, 2); exit(); }\n"
	_, _, errs := checkSource(t, src, Config{})
	var buf bytes.Buffer
	errs.Write(&buf, "e01.bt", src)
	want := "e01.bt:2:14-18: ERROR: Unknown function: bufx\n" +
		"BEGIN { $x = bufx(1, 2); exit(); }\n" +
		"             ~~~~\n" +
		"HINT: did you mean buf()?\n"
	if buf.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", buf.String(), want)
	}
}

// TestCheckAgainstBpftrace runs bpftrace 0.17 on every bad script that is
// not marked "// gotrace:" (where gotrace differs on purpose) and compares
// its ERROR lines with the expected diagnostics.
func TestCheckAgainstBpftrace(t *testing.T) {
	if testing.Short() {
		t.Skip("runs bpftrace once per script")
	}
	bpftrace := testenv.RequireBpftrace(t)
	files, err := filepath.Glob("testdata/check/bad/*.bt")
	if err != nil {
		t.Fatal(err)
	}
	errLine := regexp.MustCompile(`(?m)^[^\n]*?\.bt:(\d+:\d+-\d+: )ERROR: (.*)$`)
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		src := string(data)
		if strings.Contains(src, "// gotrace:") {
			continue
		}
		t.Run(filepath.Base(f), func(t *testing.T) {
			t.Parallel()
			cfg := scriptConfig(src)
			args := []string{"-d"}
			if cfg.Unsafe {
				args = append(args, "--unsafe")
			}
			args = append(args, f)
			args = append(args, cfg.Params...)
			out, _ := exec.Command(bpftrace, args...).CombinedOutput()
			var got []string
			for _, m := range errLine.FindAllStringSubmatch(string(out), -1) {
				got = append(got, m[1]+m[2])
			}
			var want []string
			for _, m := range expectRE.FindAllStringSubmatch(src, -1) {
				want = append(want, m[1])
			}
			if !slices.Equal(got, want) {
				t.Errorf("bpftrace says:\n%s\nthe script expects:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}

// TestCheckLongChains parses, checks and copies (an enum makes the parser
// rewrite every expression) 1 MB of 1+1+...+1 and an else-if
// chain of 20,000 branches with a 64 MB stack: the passes walk such
// chains in loops, where recursion needed about 1 KB of stack per
// operator and died with "stack overflow".
func TestCheckLongChains(t *testing.T) {
	defer debug.SetMaxStack(debug.SetMaxStack(64 << 20))
	var chain strings.Builder
	chain.WriteString("BEGIN { $x = 1; if ($x == 0) { }")
	for i := 1; i < 20000; i++ {
		fmt.Fprintf(&chain, " else if ($x == %d) { @b = %d; }", i, i)
	}
	chain.WriteString(" else { @b = -1; } }")
	for name, src := range map[string]string{
		"sum":      "enum e { A = 1 }; BEGIN { @ = 1" + strings.Repeat("+A", 500_000) + "; }",
		"logical":  "BEGIN { @ = 1" + strings.Repeat(" && 1", 100_000) + "; }",
		"else if":  chain.String(),
		"compares": "BEGIN { @ = 1" + strings.Repeat(" < 1", 100_000) + "; }",
	} {
		p, info, errs := checkSource(t, src, Config{})
		if errs != nil {
			t.Fatalf("%s: %v", name, errs)
		}
		if name == "sum" {
			rhs := p.Probes[0].Body.Stmts[0].(*AssignStmt).RHS
			if got := info.TypeOf(rhs); !got.Equal(Int64) {
				t.Errorf("%s: type %v, want int64", name, got)
			}
		}
	}
}

// TestCheckUnreachable warns, as current bpftrace does (0.17 does not),
// of the first statement after one that always leaves its block.
func TestCheckUnreachable(t *testing.T) {
	tests := []struct{ src, want string }{
		{`i:ms:100 { @++; exit(); @++; @x = 1; }`, "1:25-28: Unreachable statement."},
		{`BEGIN { if (1) { exit(); } else { return; } printf("x"); }`, "1:45-56: Unreachable statement."},
		{`BEGIN { while (1) { break; @a = 1; } }`, "1:28-34: Unreachable statement."},
		{`BEGIN { if (1) { exit(); } printf("x"); }`, ""},
		{`BEGIN { if (1) { exit(); } else if (2) { return; } printf("x"); }`, ""},
		{`BEGIN { exit(); }`, ""},
	}
	checkWarnings(t, tests)
}
