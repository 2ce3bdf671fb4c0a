package lang

import (
	"strings"
	"testing"
)

// TestMacroExpansion expands macros and compares the program, printed as
// source, with the expansion written out.
func TestMacroExpansion(t *testing.T) {
	for _, tt := range []struct{ src, want string }{
		// A $ parameter is the caller's variable.
		{`macro inc($x) { $x += 1; } begin { $a = 1; inc($a); }`,
			`begin { $a = 1; ({ $a += 1; }); }`},
		// The last expression without ";" is the value.
		{`macro inc($x) { $x += 1; $x } begin { $a = 1; $b = inc($a); }`,
			`begin { $a = 1; $b = { $a += 1; $a }; }`},
		// An @ parameter is the caller's map.
		{`macro set(@x) { @x[1] = 2; } begin { set(@a); }`,
			`begin { ({ @a[1] = 2; }); }`},
		// A bare parameter is the argument, each time it is named; the
		// body's own variables are renamed per expansion.
		{`macro twice(x) { $y = x; $y + x } begin { $y = 2; print(twice($y + 1)); print(twice(1)); }`,
			`begin { $y = 2; print({ $__twice_1_y = $y + 1; $__twice_1_y + ($y + 1) }); print({ $__twice_2_y = 1; $__twice_2_y + 1 }); }`},
		// Macros call macros defined before or after them; a name without
		// parentheses calls a macro without parameters, and a parameter
		// hides a macro of its name.
		{`macro add2(x) { x + add1(x) } macro add1(x) { x + 1 } begin { print(add2(1)); }`,
			`begin { print({ 1 + { 1 + 1 } }); }`},
		{`macro one() { 1 } macro id(one) { one } begin { print(one); print(id(2)); }`,
			`begin { print({ 1 }); print({ 2 }); }`},
		// One name, different numbers of parameters: different macros.
		{`macro f() { 1 } macro f(x) { x } begin { print(f() + f(2)); }`,
			`begin { print({ 1 } + { 2 }); }`},
	} {
		if p := parsesAs(t, tt.src, tt.want); p != nil {
			checkRoundTrip(t, p)
		}
	}
}

// parsesAs parses and desugars src and fails t unless it prints back as
// want; it returns the program, nil if it did not parse.
func parsesAs(t *testing.T, src, want string) *Program {
	t.Helper()
	p, err := Parse("stdin", src)
	if err == nil {
		err = Desugar(p)
	}
	if err != nil {
		t.Errorf("%s: %v", src, err)
		return nil
	}
	if got := strings.TrimSpace(sourceOf(p)); got != want {
		t.Errorf("%s:\n got  %s\n want %s", src, got, want)
	}
	return p
}

// TestEnums reads enum definitions: enumerators are integer constants,
// counting on from the last value, and (enum NAME) casts to an integer.
func TestEnums(t *testing.T) {
	for _, tt := range []struct{ src, want string }{
		{`enum { ONE = 1, TWO = 2 }; BEGIN { @[ONE + 1] = TWO - 1; }`,
			`BEGIN { @[1 + 1] = 2 - 1; }`},
		{`enum Foo { A, B = -3, C, }; BEGIN { print((A, B, C, (enum Foo)A)); }`,
			`BEGIN { print((0, - 3, - 2, (enum Foo)0)); }`},
	} {
		parsesAs(t, tt.src, tt.want)
	}
}
