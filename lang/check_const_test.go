package lang

import (
	"go/constant"
	"go/token"
	"strings"
	"testing"
)

// TestConstants checks the values the checker records on constant
// expressions (the right-hand side of the script's first assignment, or
// str()'s argument), and that it records none on the others.
func TestConstants(t *testing.T) {
	for _, tt := range []struct {
		src    string
		params []string
		want   constant.Value // nil: not a constant
	}{
		{`BEGIN { @ = 5; }`, nil, constant.MakeInt64(5)},
		{`BEGIN { @ = -5; }`, nil, constant.MakeInt64(-5)},
		{`BEGIN { @ = - -5; }`, nil, constant.MakeInt64(5)},
		{`BEGIN { @ = 1_000; }`, nil, constant.MakeInt64(1000)},
		{`BEGIN { @ = 0xffffffffffffffff; }`, nil, constant.MakeInt64(-1)},
		{`BEGIN { @ = $1; }`, []string{"0x10"}, constant.MakeInt64(16)},
		{`BEGIN { @ = $1; }`, []string{"0X1f"}, constant.MakeInt64(31)},
		{`BEGIN { @ = $1; }`, []string{"010"}, constant.MakeInt64(8)},
		{`BEGIN { @ = $1; }`, []string{"+5"}, constant.MakeInt64(5)},
		{`BEGIN { @ = $1; }`, []string{"-5"}, constant.MakeInt64(-5)},
		{`BEGIN { @ = $1; }`, []string{"9223372036854775807"}, constant.MakeInt64(1<<63 - 1)},
		{`BEGIN { @ = $2; }`, []string{"1"}, constant.MakeInt64(0)},
		{`BEGIN { @ = -$1; }`, []string{"3"}, constant.MakeInt64(-3)},
		{`BEGIN { @ = $#; }`, []string{"a", "b"}, constant.MakeInt64(2)},
		{`BEGIN { @ = str($1); }`, []string{"abc"}, constant.MakeString("abc")},
		{`BEGIN { @ = str($2); }`, []string{"abc"}, constant.MakeString("")},
		{`BEGIN { @ = str($1); }`, []string{"12"}, constant.MakeString("12")},
		{`BEGIN { @ = 1 + 2; }`, nil, nil},
		{`BEGIN { @ = (int8)1; }`, nil, nil},
		{`BEGIN { @ = ~1; }`, nil, nil},
		{`BEGIN { @ = "x"; }`, nil, nil},
		{`BEGIN { @ = pid; }`, nil, nil},
	} {
		p, info, errs := checkSource(t, tt.src, Config{Params: tt.params})
		if errs != nil {
			t.Errorf("%s %q: %v", tt.src, tt.params, errs)
			continue
		}
		e := p.Probes[0].Body.Stmts[0].(*AssignStmt).RHS
		if c, ok := e.(*Call); ok {
			e = c.Args[0]
		}
		got := info.constOf(e)
		if (got == nil) != (tt.want == nil) || got != nil && !constant.Compare(got, token.EQL, tt.want) {
			t.Errorf("%s %q: constant %v, want %v", tt.src, tt.params, got, tt.want)
		}
		wantInt := tt.want != nil && tt.want.Kind() == constant.Int
		if n, ok := info.ConstInt(e); ok != wantInt || ok && constant.Compare(constant.MakeInt64(n), token.NEQ, tt.want) {
			t.Errorf("%s %q: ConstInt = %d, %v", tt.src, tt.params, n, ok)
		}
		if s, ok := info.ConstString(e); ok != (tt.want != nil && tt.want.Kind() == constant.String) || ok && constant.StringVal(tt.want) != s {
			t.Errorf("%s %q: ConstString = %q, %v", tt.src, tt.params, s, ok)
		}
	}
}

// TestParamNumbers checks which positional parameters are numbers: those
// gotrace took before the checker became the one evaluator of constants,
// which are bpftrace 0.17's but for leading blanks (" 5"), which 0.17
// takes and gotrace never did.
func TestParamNumbers(t *testing.T) {
	for _, v := range []string{"1_000", "0b101", "0o17", "0xffffffffffffffff", "9223372036854775808",
		"18446744073709551615", " 5", "08", "1e3", "x", ""} {
		_, _, errs := checkSource(t, `BEGIN { @ = $1; }`, Config{Params: []string{v}})
		if len(errs) != 1 || !strings.Contains(errs[0].Msg, "used numerically but given") {
			t.Errorf("$1 = %q: %v, want a parameter that is not a number", v, errs)
		}
	}
}
