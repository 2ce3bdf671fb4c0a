package lang

import (
	"fmt"
	"strings"
)

// bpftrace runs a script's directives through clang's preprocessor: it
// takes object-like macros (#define LIMIT 3) into the script, leaves
// function-like ones unexpanded (TWICE(1) is then an unknown function) and
// reads the structs of #include'd headers. gotrace has no C preprocessor:
// it expands object-like macros itself, ignores function-like ones as
// bpftrace does, and skips #include, whose headers it cannot read (the
// stdint.h types are built in). #ifdef, #ifndef, #else and #endif keep or
// drop lines as clang does; BPFTRACE_HAVE_BTF counts as defined, as
// bpftrace defines it where the kernel has BTF: gotrace takes the kernel's
// types from there, never from headers.

// haveBTF is the macro bpftrace defines for scripts when the kernel has
// BTF, which tools test to skip their #include lines.
const haveBTF = "BPFTRACE_HAVE_BTF"

// directive handles the preprocessor line starting at the scanner's "#".
func (s *scanner) directive() *Error {
	n := lineLen(s.src[s.off:])
	line := strings.ReplaceAll(s.src[s.off:s.off+n], "\\\n", " ")
	rest := strings.TrimLeft(line[1:], " \t")
	name := identPrefix(rest)
	rest = strings.TrimLeft(rest[len(name):], " \t")
	switch name {
	case "include":
	case "ifdef", "ifndef":
		macro := identPrefix(rest)
		if macro == "" {
			return s.errorf(s.run, n, "#%s needs a macro name", name)
		}
		_, defined := s.macros[macro]
		defined = defined || macro == haveBTF
		if defined == (name == "ifdef") {
			s.conds++
			break
		}
		return s.skipConditional(n, true)
	case "else":
		if s.conds == 0 {
			return s.errorf(s.run, n, "#else without #if")
		}
		return s.skipConditional(n, false)
	case "endif":
		if s.conds == 0 {
			return s.errorf(s.run, n, "#endif without #if")
		}
		s.conds--
	case "define", "undef":
		macro := identPrefix(rest)
		if macro == "" {
			return s.errorf(s.run, n, "#%s needs a macro name", name)
		}
		body := rest[len(macro):]
		if s.macros == nil {
			s.macros = map[string]string{}
		}
		switch {
		case name == "undef":
			delete(s.macros, macro)
		case strings.HasPrefix(body, "("):
			// Function-like: not expanded, as in bpftrace.
		default:
			s.macros[macro] = strings.TrimSpace(body)
		}
	default:
		return s.errorf(s.run, n, "preprocessor directives are not supported: %s", strings.TrimSpace(line))
	}
	s.advance(n)
	return nil
}

// skipConditional drops the lines after the directive of n bytes at the
// current offset, up to the #endif that closes it or, when toElse is set
// (a condition that did not hold), the #else that starts the lines kept.
func (s *scanner) skipConditional(n int, toElse bool) *Error {
	start := s.run
	off, depth := s.off+n, 0
	for off < len(s.src) {
		off++ // the newline
		m := lineLen(s.src[off:])
		line := strings.TrimLeft(s.src[off:off+m], " \t")
		off += m
		if !strings.HasPrefix(line, "#") {
			continue
		}
		switch identPrefix(strings.TrimLeft(line[1:], " \t")) {
		case "if", "ifdef", "ifndef":
			depth++
		case "else":
			if depth == 0 && toElse {
				s.conds++
				s.advance(off - s.off)
				return nil
			}
		case "endif":
			if depth == 0 {
				if !toElse {
					s.conds--
				}
				s.advance(off - s.off)
				return nil
			}
			depth--
		}
	}
	return s.errorf(start, n, "unterminated conditional directive")
}

// identPrefix returns the identifier at the start of s, or "".
func identPrefix(s string) string {
	if s == "" || !isIdentStart(s[0]) {
		return ""
	}
	n := 1
	for n < len(s) && isIdentChar(s[n]) {
		n++
	}
	return s[:n]
}

// lineLen is the length of the logical line at the start of s, without
// its newline: a backslash before a newline continues it.
func lineLen(s string) int {
	n := 0
	for {
		i := strings.IndexByte(s[n:], '\n')
		if i < 0 {
			return len(s)
		}
		if i > 0 && s[n+i-1] == '\\' {
			n += i + 1
			continue
		}
		return n + i
	}
}

// maxExpansion bounds the tokens one use of a macro expands to: macros
// that use others twice double at every level.
const maxExpansion = 10000

// expand emits the tokens of macro name's body in place of the n-byte
// identifier at the scanner's offset, placed at the identifier, so that
// diagnostics point at the macro's use. A macro does not expand inside its
// own body (as in C).
func (s *scanner) expand(name string, n int) *Error {
	start, run := s.pos(), s.run
	s.advance(n)
	end := s.pos()
	if s.expanding == nil {
		s.expanding = map[string]bool{}
	}
	s.expanding[name] = true
	defer delete(s.expanding, name)
	sub := &scanner{src: s.macros[name], line: 1, col: 1, macros: s.macros, expanding: s.expanding,
		braces: s.braces, parens: s.parens, inPred: s.inPred, ternaries: s.ternaries}
	for {
		if err := sub.skipSpace(); err != nil {
			return s.macroError(err, start, end, name)
		}
		if sub.off >= len(sub.src) {
			break
		}
		if err := sub.next(); err != nil {
			return s.macroError(err, start, end, name)
		}
		if len(sub.toks) > maxExpansion {
			return s.macroError(&Error{Msg: fmt.Sprintf("macro expands to more than %d tokens", maxExpansion)}, start, end, name)
		}
	}
	for i, t := range sub.toks {
		// The first token takes the macro's place and the others sit at
		// its end, all in the run of the macro's name.
		t.Pos, t.End, t.Run = end, end, run
		if i == 0 {
			t.Pos = start
		}
		s.push(t)
	}
	s.braces, s.parens, s.inPred, s.ternaries = sub.braces, sub.parens, sub.inPred, sub.ternaries
	return nil
}

// macroError places an error in a macro's body at the macro's use.
func (s *scanner) macroError(err *Error, start, end position, name string) *Error {
	err.Span = Span{Start: posAt(start), End: posAt(end)}
	if !strings.Contains(err.Msg, " (in macro ") {
		err.Msg += " (in macro " + name + ")"
	}
	return err
}
