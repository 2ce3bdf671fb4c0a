package lang

import (
	"strings"
	"testing"

	"github.com/gotrace/gotrace/internal/printf"
)

func TestFormatVerbMismatch(t *testing.T) {
	parse := func(s string) *printf.Verb {
		parts, err := printf.Parse(s)
		if err != nil || len(parts) != 1 || parts[0].Verb == nil {
			t.Fatalf("printf.Parse(%q) = %v, %v", s, parts, err)
		}
		return parts[0].Verb
	}
	tests := []struct {
		verb string
		typ  Type
		want string
	}{
		{"%d", Int64, ""},
		{"%-5.3lu", Int(4, false), ""},
		{"%p", Type{Kind: KindPointer}, ""},
		{"%s", String(64), ""},
		{"%s", Type{Kind: KindUsym}, ""},
		{"%s", Type{Kind: KindInet}, ""},
		{"%s", Type{Kind: KindStack}, ""},
		{"%s", Type{Kind: KindTimestamp}, ""},
		{"%s", Type{Kind: KindProbe}, ""},
		{"%d", Type{Kind: KindProbe}, "%d specifier expects a value of type integer (string supplied)"},
		{"%d", Type{Kind: KindUsym}, "%d specifier expects a value of type integer (string supplied)"},
		{"%r", Type{Kind: KindBuf, Size: 8}, ""},
		{"%-5.3ld", String(64), "%ld specifier expects a value of type integer (string supplied)"},
		{"%s", Int64, "%s specifier expects a value of type string (integer supplied)"},
		{"%s", Type{Kind: KindPointer}, "%s specifier expects a value of type string (integer supplied)"},
		{"%s", Type{Kind: KindBuf}, "%s specifier expects a value of type string (buffer supplied)"},
		{"%r", Int64, "%r specifier expects a value of type buffer (integer supplied)"},
		{"%5rx", Int64, "%rx specifier expects a value of type buffer (integer supplied)"},
		{"%c", String(4), "%c specifier expects a value of type integer (string supplied)"},
		{"%d", Type{Kind: KindTuple, Elems: []Type{Int64, Int64}}, "%d specifier expects a value of type integer (tuple supplied)"},
		{"%d", Type{Kind: KindCount}, "%d specifier expects a value of type integer (count supplied)"},
		{"%d", Type{Kind: KindHist}, "%d specifier expects a value of type integer (hist supplied)"},
		{"%d", Type{Kind: KindVoid}, "%d specifier expects a value of type integer (none supplied)"},
	}
	for _, tt := range tests {
		if got := formatMismatch(parse(tt.verb), tt.typ); got != tt.want {
			t.Errorf("formatMismatch(%s, %v) = %q, want %q", tt.verb, tt.typ, got, tt.want)
		}
	}
}

// TestCheckRecordsFormat checks that the checker records each printf,
// system and cat call's parsed format, which the code generator puts in
// the Spec: a format is parsed once.
func TestCheckRecordsFormat(t *testing.T) {
	p, info, errs := checkSource(t, `BEGIN { printf("%d and %s\n", 1, "x"); cat("/proc/%d/status", pid); printf(""); }`, Config{Unsafe: true})
	if errs != nil {
		t.Fatal(errs)
	}
	want := map[string]int{`%d and %s\n`: 2, "/proc/%d/status": 1, "": 0}
	for _, s := range p.Probes[0].Body.Stmts {
		c := s.(*ExprStmt).X.(*Call)
		format := c.Args[0].(*StrLit).Value
		verbs := 0
		for _, part := range info.Format(c) {
			if part.Verb != nil {
				verbs++
			}
		}
		if n, ok := want[strings.ReplaceAll(format, "\n", `\n`)]; !ok || verbs != n {
			t.Errorf("%s(%q) recorded %d verbs (%+v), want %d", c.Name, format, verbs, info.Format(c), n)
		}
	}
}
