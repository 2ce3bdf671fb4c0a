// Package printf is bpftrace 0.17's printf format language: Parse splits
// a format into literal text and verbs. The checker parses each format
// once, matches the verbs against the arguments' types and records the
// parts on the call; the code generator puts them in the Spec, and
// runtime/output formats records with them.
package printf

import (
	"fmt"
	"strings"
)

// Part is one piece of a parsed printf format: either literal text
// (Verb nil) or a conversion that consumes one argument.
type Part struct {
	// Literal is the text to print as it is, with C's %% already turned
	// into % where bpftrace 0.17 does so (see Parse).
	Literal string
	// Verb is the conversion, or nil for a literal part.
	Verb *Verb
}

// Verb is one conversion specifier of a printf format, such as
// "%-8d" or "%llu" or "%rx".
//
// bpftrace 0.17 recognises exactly this grammar:
//
//	% [-] [0-9]* [. [0-9]+] conversion
//
// where conversion is d, u, x, X, o or p with an optional length (h, hh, l,
// ll, z, j, t), or one of c, s, r, rx and rh. Anything else after a % is
// literal text (and takes no argument). gotrace adds %rH (see Verb.Buf),
// which 0.17 reads as %r followed by an H.
type Verb struct {
	// Text is the specifier as written, e.g. "%-8d".
	Text string
	// Flags holds the flag characters: '-' (left-justify) and '0' (pad
	// with zeros), in the order written.
	Flags string
	// Width and Prec are the field width and precision, -1 when absent.
	Width, Prec int
	// Length is the length modifier: "", "h", "hh", "l", "ll", "z", "j" or
	// "t".
	Length string
	// Conv is the conversion character: 'd', 'u', 'x', 'X', 'o', 'p', 'c',
	// 's' or 'r'.
	Conv byte
	// Buf is the modifier of a %r conversion: 'x' for %rx (every byte as
	// \xNN), 'h' for %rh (hex bytes separated by spaces), 'H' for %rH
	// (gotrace's: the bytes in reverse order as one hex number, as
	// bitcoin-cli shows a hash stored little-endian), 0 for plain %r.
	Buf byte
	// Escaped is set when the C printf that bpftrace 0.17 hands the format
	// to reads the verb's % as the second half of "%%": the verb still
	// takes its argument, but prints Text[1:] instead of formatting it
	// (printf("%%d", 5) prints "%d").
	Escaped bool
}

// Arg is the kind of argument a Verb takes.
type Arg int

// The argument kinds.
const (
	ArgInt Arg = iota + 1
	ArgString
	ArgBuf
)

// String returns the name bpftrace gives the argument kind in its messages:
// "integer", "string" or "buffer".
func (a Arg) String() string {
	switch a {
	case ArgInt:
		return "integer"
	case ArgString:
		return "string"
	case ArgBuf:
		return "buffer"
	}
	return fmt.Sprintf("Arg(%d)", int(a))
}

// Arg tells which kind of argument v takes.
func (v *Verb) Arg() Arg {
	switch v.Conv {
	case 's':
		return ArgString
	case 'r':
		return ArgBuf
	}
	return ArgInt
}

// Spec returns the specifier as bpftrace names it in messages: "%" followed
// by the length and conversion, without flags, width or precision ("%ld",
// "%rx").
func (v *Verb) Spec() string {
	s := "%" + v.Length + string(v.Conv)
	if v.Buf != 0 {
		s += string(v.Buf)
	}
	return s
}

// MaxWidth bounds the width and precision of a format verb.
// bpftrace 0.17 dies on huge ones ("Value too large for defined data
// type"); gotrace refuses them up front.
const MaxWidth = 1 << 16

// Parse splits a printf format string (escapes already decoded) into
// literal parts and verbs, the way bpftrace 0.17 does:
//
//   - a verb is the leftmost match of the grammar documented on Verb;
//     any other % sequence (%i, %f, %5, a lone % at the end) stays literal
//     and takes no argument;
//   - bpftrace hands the text up to and including each verb to C's printf,
//     so in literal text before a verb "%%" prints as "%", and an odd "%"
//     right before a verb escapes it (Verb.Escaped);
//   - the text after the last verb (the whole format when there are no
//     verbs) is printed as it is, "%%" included.
//
// Adjacent literal text is merged into one part; empty literals are left
// out. It fails only for a width or precision above MaxWidth.
func Parse(format string) ([]Part, error) {
	var parts []Part
	rest := format
	for {
		start, v := nextVerb(rest)
		if v == nil {
			if rest != "" {
				parts = appendLiteral(parts, rest)
			}
			return parts, nil
		}
		if v.Width > MaxWidth || v.Prec > MaxWidth {
			return nil, fmt.Errorf("format verb %s: width or precision above %d", v.Text, MaxWidth)
		}
		lit, escaped := cLiteral(rest[:start])
		if lit != "" {
			parts = appendLiteral(parts, lit)
		}
		v.Escaped = escaped
		parts = append(parts, Part{Verb: v})
		rest = rest[start+len(v.Text):]
	}
}

func appendLiteral(parts []Part, s string) []Part {
	if n := len(parts); n > 0 && parts[n-1].Verb == nil {
		parts[n-1].Literal += s
		return parts
	}
	return append(parts, Part{Literal: s})
}

// cLiteral returns what C's printf prints for literal text s that comes
// right before a verb: "%%" becomes "%". It also reports whether s ends in
// an unpaired "%", which pairs with the verb's own "%"; the returned text
// then ends in that "%".
func cLiteral(s string) (string, bool) {
	if !strings.Contains(s, "%") {
		return s, false
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			b.WriteByte(s[i])
			continue
		}
		if i+1 == len(s) {
			b.WriteByte('%')
			return b.String(), true
		}
		b.WriteByte('%')
		if s[i+1] == '%' {
			i++
		}
	}
	return b.String(), false
}

// nextVerb finds the leftmost verb in s and returns its offset, or nil.
func nextVerb(s string) (int, *Verb) {
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			continue
		}
		if v := matchVerb(s[i:]); v != nil {
			return i, v
		}
	}
	return 0, nil
}

// matchVerb matches the verb grammar at the start of s (which starts with
// '%').
func matchVerb(s string) *Verb {
	v := &Verb{Width: -1, Prec: -1}
	i := 1
	if i < len(s) && s[i] == '-' {
		v.Flags = "-"
		i++
	}
	for i < len(s) && s[i] == '0' {
		v.Flags += "0"
		i++
	}
	j := i
	for j < len(s) && isDigit(s[j]) {
		j++
	}
	if j > i {
		v.Width = atoiSat(s[i:j])
	}
	i = j
	if i+1 < len(s) && s[i] == '.' && isDigit(s[i+1]) {
		j = i + 1
		for j < len(s) && isDigit(s[j]) {
			j++
		}
		v.Prec = atoiSat(s[i+1 : j])
		i = j
	}
	n := matchConv(s[i:], v)
	if n == 0 {
		return nil
	}
	v.Text = s[:i+n]
	return v
}

// matchConv matches a length and conversion at the start of s, fills them
// into v and returns how many bytes they take, or 0.
func matchConv(s string, v *Verb) int {
	if s == "" {
		return 0
	}
	switch s[0] {
	case 'c', 's':
		v.Conv = s[0]
		return 1
	case 'r':
		v.Conv = 'r'
		if len(s) > 1 && (s[1] == 'x' || s[1] == 'h' || s[1] == 'H') {
			v.Buf = s[1]
			return 2
		}
		return 1
	}
	n := 0
	switch {
	case strings.HasPrefix(s, "hh"), strings.HasPrefix(s, "ll"):
		n = 2
	case s[0] == 'h', s[0] == 'l', s[0] == 'z', s[0] == 'j', s[0] == 't':
		n = 1
	}
	if n >= len(s) {
		return 0
	}
	switch s[n] {
	case 'd', 'u', 'x', 'X', 'o', 'p':
		v.Length = s[:n]
		v.Conv = s[n]
		return n + 1
	}
	return 0
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// atoiSat converts a run of decimal digits, saturating instead of
// overflowing so that huge widths are reported, not wrapped.
func atoiSat(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		n = n*10 + int(s[i]-'0')
		if n > 1<<30 {
			return 1 << 30
		}
	}
	return n
}
