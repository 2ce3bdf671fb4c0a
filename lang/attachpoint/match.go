package attachpoint

import (
	"strings"

	"github.com/ianlancetaylor/demangle"
)

// Wildcards says which characters of a pattern are wildcards.
type Wildcards uint8

const (
	// Star: `*` stands for any run of bytes and every other byte for
	// itself, as in the attach points of a script (bpftrace's wildcard).
	Star Wildcards = iota
	// Glob: `?` also stands for any one byte, as in -l's patterns, which
	// gotrace reads as glob(3) patterns.
	Glob
)

// Match reports whether s matches pattern. A `*` matches any run of
// bytes, slashes and colons too, and a literal `*` in s (char const*) as
// any other byte.
func (w Wildcards) Match(pattern, s string) bool {
	p, i := 0, 0
	starP, starI := -1, 0
	for i < len(s) {
		switch {
		case p < len(pattern) && pattern[p] == '*':
			// Before the literal case: a '*' in s is matched by a star
			// as any other byte.
			starP, starI = p, i
			p++
		case p < len(pattern) && (pattern[p] == s[i] || pattern[p] == '?' && w == Glob):
			p++
			i++
		case starP >= 0:
			// Let the last star take one more byte and retry.
			starI++
			p, i = starP+1, starI
		default:
			return false
		}
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

// MatchFunction reports whether a function pattern names the symbol
// name, as bpftrace 0.17 matches both when listing and when attaching:
// the name itself, or the start of the C++ name it demangles to,
// parameters and all. So "std::bad_alloc::what" names
// _ZNKSt9bad_alloc4whatEv (std::bad_alloc::what() const), "foo" every
// overload of foo, and "*::what() const" (where a whole name is meant)
// every const what(); but also "std::bad_al", and "main" names
// mainly(int) of a C++ program.
func (w Wildcards) MatchFunction(pattern, name string) bool {
	if w.Match(pattern, name) {
		return true
	}
	d, ok := Demangle(name)
	return ok && w.Match(pattern+"*", d)
}

// Demangle demangles a C++ symbol name the way bpftrace 0.17 does for
// matching, with LLVM's demangler: a clone's suffix follows in
// parentheses ("foo() (.cold)"), and Rust's legacy symbols read as C++,
// with their hash ("iri_string::normalize::path::PathSegment::segment::hc8d1... (.5586)").
// 0.17's demangler does not know transaction clones (_ZGTt: "transaction
// clone for ..."), so they are not demangled.
func Demangle(name string) (string, bool) {
	if !strings.HasPrefix(name, "_Z") || strings.HasPrefix(name, "_ZGTt") {
		return "", false
	}
	suffix := ""
	a, err := demangle.ToAST(name, demangle.NoRust)
	if err != nil {
		// The demangler takes a clone's suffix only after parameters,
		// which Rust's symbols do not have.
		i := strings.LastIndex(name, "E.")
		if i < 0 {
			return "", false
		}
		if a, err = demangle.ToAST(name[:i+1], demangle.NoRust); err != nil {
			return "", false
		}
		suffix = name[i+1:]
	}
	for c, ok := a.(*demangle.Clone); ok; c, ok = a.(*demangle.Clone) {
		a, suffix = c.Base, c.Suffix+suffix
	}
	d := demangle.ASTToString(a)
	if suffix != "" {
		d += " (" + suffix + ")"
	}
	return d, true
}
