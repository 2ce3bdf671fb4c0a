package lang

import (
	"fmt"
	"strings"
	"testing"
)

// TestMacros checks the expansion of object-like macros: what the
// expression $x = ... becomes after the directives before the probe.
func TestMacros(t *testing.T) {
	tests := []struct{ defs, expr, want string }{
		{"#define N 3\n", "N * 2", "(* 3 2)"},
		{"#define S \"abc\"\n", "S", `"abc"`},
		{"#define A 1\n#define B (A + A)\n", "B", "(+ 1 1)"},
		{"  #  define   SPACED   7  \n", "SPACED", "7"},
		{"#define LONG (1 + \\\n  2)\n", "LONG", "(+ 1 2)"},
		{"#define GONE 1\n#undef GONE\n", "GONE", "GONE"},
		{"#define REC REC + 1\n", "REC", "(+ REC 1)"},
		{"#define TWICE(x) ((x) * 2)\n", "TWICE", "TWICE"},
		{"#define EMPTY\n", "1 EMPTY", "1"},
		{"#include <stdint.h>\n#define W 4\n", "W", "4"},
		{"#define M @m[1]\n", "M", "(@m[] 1)"},
		// Conditionals: kept and dropped lines, nesting, #else.
		{"#ifndef BPFTRACE_HAVE_BTF\n#include <linux/sched.h>\n#define V 1\n#endif\n", "V", "V"},
		{"#ifdef BPFTRACE_HAVE_BTF\n#define V 1\n#else\n#define V 2\n#endif\n", "V", "1"},
		{"#ifdef NOPE\n#ifdef X\n#define V 1\n#endif\n#else\n#define V 2\n#endif\n", "V", "2"},
		{"#define D\n#ifndef D\n#define V 1\n#else\n#ifdef D\n#define V 3\n#endif\n#endif\n", "V", "3"},
	}
	for _, tt := range tests {
		p := mustParse(t, tt.defs+"BEGIN { $x = "+tt.expr+"; }")
		if got := sexpr(p.Probes[0].Body.Stmts[0].(*AssignStmt).RHS); got != tt.want {
			t.Errorf("%q %s\n got  %s\n want %s", tt.defs, tt.expr, got, tt.want)
		}
	}
}

// TestMacroSpans checks that a diagnostic in a macro's expansion points at
// the macro's use.
func TestMacroSpans(t *testing.T) {
	checkFirstErrors(t, []struct{ src, want string }{
		{"#define BAD (1 +\nBEGIN { $x = BAD; }", "stdin:2:14-18: ERROR: syntax error, unexpected ;"},
		{"#define Q \"open\nBEGIN { $x = Q; }", "stdin:2:14-15: ERROR: unterminated string (in macro Q)"},
		{"#if X\n#endif\nBEGIN { }", "stdin:1:1-6: ERROR: preprocessor directives are not supported: #if X"},
		{"#ifdef X\nBEGIN { }", "stdin:1:1-9: ERROR: unterminated conditional directive"},
		{"#endif\nBEGIN { }", "stdin:1:1-7: ERROR: #endif without #if"},
		{"#define\nBEGIN { }", "stdin:1:1-8: ERROR: #define needs a macro name"},
		{bomb(30) + "BEGIN { $x = M0; }", "stdin:31:14-16: ERROR: macro expands to more than 10000 tokens (in macro M16)"},
	})
}

// bomb defines n macros, each using the next twice: M0 expands to 2^n
// tokens.
func bomb(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "#define M%d M%d M%d\n", i, i+1, i+1)
	}
	return b.String()
}
