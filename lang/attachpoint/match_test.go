package attachpoint

import "testing"

func TestStarMatch(t *testing.T) {
	for _, tc := range []struct {
		pattern, s string
		want       bool
	}{
		{"inbound_message", "inbound_message", true},
		{"inbound_message", "outbound_message", false},
		{"*", "", true},
		{"*", "anything", true},
		{"*_message", "inbound_message", true},
		{"in*", "inbound_message", true},
		{"in*", "outbound", false},
		{"*bound*", "outbound_connection", true},
		{"a*b*c", "axxbyyc", true},
		{"a*b*c", "axxbyy", false},
		{"function__entry", "function__return", false},
		{"a?c", "abc", false},
	} {
		if got := Star.Match(tc.pattern, tc.s); got != tc.want {
			t.Errorf("Star.Match(%q, %q) = %v, want %v", tc.pattern, tc.s, got, tc.want)
		}
	}
}

func TestGlobMatch(t *testing.T) {
	for _, tc := range []struct {
		pattern, s string
		want       bool
	}{
		{"*", "", true},
		{"a*b", "abab", true},
		{"a?c", "abc", true},
		{"a?c", "ac", false},
		{"* const*", "f(char const*, long)", true},
		{"*x*", "f(char const*)", false},
		{"a*", "b", false},
	} {
		if got := Glob.Match(tc.pattern, tc.s); got != tc.want {
			t.Errorf("Glob.Match(%q, %q) = %v, want %v", tc.pattern, tc.s, got, tc.want)
		}
	}
}

func TestFunctionMatch(t *testing.T) {
	for _, tc := range []struct {
		pattern, name string
		want          bool
	}{
		{"main", "main", true},
		{"mai", "main", false},
		{"m*", "main", true},
		{"Py_?unMain", "Py_RunMain", true},
		{"*Code", "PyCode_GetCode", true},
		// Demangled: the start of the name, parameters and all.
		{"std::bad_alloc::what", "_ZNKSt9bad_alloc4whatEv", true},
		{"std::bad_alloc::what() const", "_ZNKSt9bad_alloc4whatEv", true},
		{"*::what() const", "_ZNKSt9bad_alloc4whatEv", true},
		{"bad_alloc", "_ZNKSt9bad_alloc4whatEv", false},
		{"* const", "_ZN9__gnu_cxx18stdio_sync_filebufIcSt11char_traitsIcEE6xsputnEPKcl", true},
		{"*> >*", "_ZN9__gnu_cxx18stdio_sync_filebufIcSt11char_traitsIcEE6xsputnEPKcl", true},
		// A clone's suffix in parentheses, as LLVM's demangler writes it,
		// also after a Rust symbol.
		{"foo() (.cold)", "_Z3foov.cold", true},
		{"iri_string::normalize::h0123 (.5586)", "_ZN10iri_string9normalize5h0123E.5586", true},
		// Transaction clones are not demangled by 0.17.
		{"transaction clone*", "_ZGTtNKSt11logic_error4whatEv", false},
		{"_ZGTt*", "_ZGTtNKSt11logic_error4whatEv", true},
	} {
		if got := Glob.MatchFunction(tc.pattern, tc.name); got != tc.want {
			d, _ := Demangle(tc.name)
			t.Errorf("Glob.MatchFunction(%q, %q) = %v, want %v (demangled %q)", tc.pattern, tc.name, got, tc.want, d)
		}
	}
}
