// Package output prints what a bpftrace program produces, byte for byte as
// bpftrace 0.17 does: printf records, print() of values and maps, and the
// maps printed at exit, as text or as bpftrace's NDJSON (-f json).
//
// It only formats: the runtime decodes ring-buffer records and BPF maps
// into the values of this package (Value, Map, Entry), merging per-CPU
// aggregates first, and hands them to a Writer. It also owns the text of
// the values that a record holds as numbers or bytes and that print as
// the C library spells them: times (Strftime), errnos (ErrnoText, Strerror),
// signals (SignalText), system calls (SyscallText) and addresses
// (InetText).
//
// It must not load, attach or read anything from the kernel, nor import
// the language or eBPF (TestDependencies): what needs the running trace
// (maps, symbols, the boot time) stays in the runtime, which passes the
// plain values in.
package output

import (
	"cmp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ValueKind is the kind of a Value.
type ValueKind int

// The value kinds.
const (
	// ValueInt is an integer; see Value.Bits and Value.Signed.
	ValueInt ValueKind = iota + 1
	// ValueString is a string; it ends at its first NUL byte, if any.
	// Values that bpftrace prints as strings (usym, ntop, ustack,
	// strftime, probe) are passed as strings too.
	ValueString
	// ValueBuf is buf()'s bytes, printed with \xNN escapes.
	ValueBuf
	// ValueTuple is a tuple of Elems.
	ValueTuple
)

// Value is one decoded value: a printf argument, a map key element, or a
// map value.
type Value struct {
	Kind ValueKind
	// Bits holds an integer sign- or zero-extended to 64 bits, as the
	// records and maps store it.
	Bits uint64
	// Signed says whether the integer prints as signed.
	Signed bool
	// Bool says the integer is a bool: print() and maps write it as
	// true or false (in JSON too), printf's %d as 1 or 0.
	Bool bool
	// Hex says the integer is a pointer that print() and maps write in
	// hex (0x2e), as bpftrace 0.26 does; printf formats it as it asks.
	Hex bool
	// Hash says the buf is a hash (hash256()): text, map keys and JSON
	// show its bytes reversed in hex, as %rH does.
	Hash bool
	// Enum says the integer is a value of an enum: text output and
	// printf's %s show Name, its enumerator's name, or the number when it
	// has none; JSON values keep the number, as bpftrace does.
	Enum bool
	Name string
	// Str is a string value; Bytes a buf value.
	Str   string
	Bytes []byte
	// Elems are the elements of a tuple; Names are a record's field
	// names, one per element (nil for a tuple).
	Elems []Value
	Names []string
	// Array says the tuple is an array value, printed [1,2,3].
	Array bool
}

// Int returns a signed integer value.
func Int(v int64) Value { return Value{Kind: ValueInt, Bits: uint64(v), Signed: true} }

// Uint returns an unsigned integer value.
func Uint(v uint64) Value { return Value{Kind: ValueInt, Bits: v} }

// Boolean returns a bool value.
func Boolean(v bool) Value {
	if v {
		return Value{Kind: ValueInt, Bits: 1, Bool: true}
	}
	return Value{Kind: ValueInt, Bool: true}
}

// Str returns a string value.
func Str(s string) Value { return Value{Kind: ValueString, Str: s} }

// Buf returns a buf value.
func Buf(b []byte) Value { return Value{Kind: ValueBuf, Bytes: b} }

// Tuple returns a tuple value.
func Tuple(elems ...Value) Value { return Value{Kind: ValueTuple, Elems: elems} }

// cstr returns s up to its first NUL byte.
func cstr(s string) string {
	if i := strings.IndexByte(s, 0); i >= 0 {
		return s[:i]
	}
	return s
}

// appendInt appends the integer in v in decimal, or a bool as true or
// false.
func appendInt(b []byte, v Value) []byte {
	if v.Bool {
		return strconv.AppendBool(b, v.Bits != 0)
	}
	if v.Hex {
		return strconv.AppendUint(append(b, "0x"...), v.Bits, 16)
	}
	if v.Signed {
		return strconv.AppendInt(b, int64(v.Bits), 10)
	}
	return strconv.AppendUint(b, v.Bits, 10)
}

// appendBuf appends a buf value: a hash reversed in hex, other bufs
// escaped.
func appendBuf(b []byte, v Value) []byte {
	if v.Hash {
		return appendReversedHex(b, v.Bytes)
	}
	return appendBufEscaped(b, v.Bytes)
}

// appendReversedHex appends data's bytes from the last to the first as
// lower-case hex digits: how %rH and hash256() show a little-endian hash.
func appendReversedHex(b []byte, data []byte) []byte {
	for i := len(data) - 1; i >= 0; i-- {
		b = append(b, hexDigits[data[i]>>4], hexDigits[data[i]&15])
	}
	return b
}

// appendBufEscaped appends buf bytes the way %r prints them: printable
// ASCII as is, every other byte as \xNN in lowercase hex.
func appendBufEscaped(b []byte, data []byte) []byte {
	for _, c := range data {
		if c >= 0x20 && c < 0x7f {
			b = append(b, c)
			continue
		}
		b = append(b, '\\', 'x', hexDigits[c>>4], hexDigits[c&15])
	}
	return b
}

const hexDigits = "0123456789abcdef"

// String returns v as bpftrace prints it in text: what a map key's
// element looks like between the brackets of @m[...].
func (v Value) String() string { return string(appendText(nil, v)) }

// appendText appends v as bpftrace prints a value in text: integers in
// decimal, strings raw, bufs escaped, tuples as "(1, abc)".
func appendText(b []byte, v Value) []byte {
	switch v.Kind {
	case ValueInt:
		if v.Name != "" {
			return append(b, v.Name...)
		}
		return appendInt(b, v)
	case ValueString:
		return append(b, cstr(v.Str)...)
	case ValueBuf:
		return appendBuf(b, v)
	case ValueTuple:
		switch {
		case v.Array:
			return appendElems(b, v, "[", ",", "]", nil, appendText)
		case v.Names != nil:
			// A record: { .a = 1, .b = x }, as bpftrace 0.25 prints it.
			return appendElems(b, v, "{", ",", " }", textName, appendText)
		}
		return appendElems(b, v, "(", ", ", ")", nil, appendText)
	}
	return append(b, "<invalid value>"...)
}

// appendElems appends the elements of tuple v between open and close,
// sep between them, each written by elem after its name written by name
// (a record's; nil for the others).
func appendElems(b []byte, v Value, open, sep, close string, name func([]byte, string) []byte, elem func([]byte, Value) []byte) []byte {
	b = append(b, open...)
	for i, e := range v.Elems {
		if i > 0 {
			b = append(b, sep...)
		}
		if name != nil {
			b = name(b, v.Names[i])
		}
		b = elem(b, e)
	}
	return append(b, close...)
}

// textName writes a record's field name in text: " .a = ".
func textName(b []byte, name string) []byte {
	return append(append(append(b, " ."...), name...), " = "...)
}

// jsonName writes a record's field name in JSON: "a": .
func jsonName(b []byte, name string) []byte {
	return append(appendJSONString(b, name), ": "...)
}

// appendJSON appends v as a JSON value the way bpftrace writes it:
// integers as numbers, strings and bufs as strings, tuples as arrays
// without spaces, records as objects: { "a": 1, "b": 2 } as 0.17 writes a
// struct, {"a": 1, "b": 2} with newer, as current bpftrace does.
func appendJSON(b []byte, v Value, newer bool) []byte {
	elem := func(b []byte, e Value) []byte { return appendJSON(b, e, newer) }
	switch v.Kind {
	case ValueInt:
		v.Hex = false // JSON has no hex numbers
		return appendInt(b, v)
	case ValueString:
		return appendJSONString(b, cstr(v.Str))
	case ValueBuf:
		return appendJSONString(b, appendBuf(nil, v))
	case ValueTuple:
		switch {
		case v.Names != nil && newer:
			return appendElems(b, v, "{", ", ", "}", jsonName, elem)
		case v.Names != nil:
			return appendElems(b, v, "{ ", ", ", " }", jsonName, elem)
		}
		return appendElems(b, v, "[", ",", "]", nil, elem)
	}
	return append(b, "null"...)
}

// compareKeyValue orders two key elements as bpftrace 0.17 orders keys of
// maps it sorts by key: integers by their unsigned 64-bit value (so -1
// comes last), strings and bufs bytewise, tuples element by element.
func compareKeyValue(a, b Value) int {
	if a.Kind != b.Kind {
		return int(a.Kind) - int(b.Kind)
	}
	switch a.Kind {
	case ValueInt:
		return cmp.Compare(a.Bits, b.Bits)
	case ValueString:
		return strings.Compare(cstr(a.Str), cstr(b.Str))
	case ValueBuf:
		return strings.Compare(string(a.Bytes), string(b.Bytes))
	case ValueTuple:
		return compareKeys(a.Elems, b.Elems)
	}
	return 0
}

// compareKeys orders two map keys element by element.
func compareKeys(a, b []Value) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		if c := compareKeyValue(a[i], b[i]); c != 0 {
			return c
		}
	}
	return len(a) - len(b)
}

// compareIntValues orders two integers by value, signed or not.
func compareIntValues(a, b Value) int {
	if a.Signed {
		return cmp.Compare(int64(a.Bits), int64(b.Bits))
	}
	return cmp.Compare(a.Bits, b.Bits)
}

// divide divides an integer value by div, truncating toward zero as C
// does, and each integer of a tuple; div 0 or 1 leaves it alone.
func divide(v Value, div uint64) Value {
	if v.Kind == ValueTuple && div > 1 {
		elems := make([]Value, len(v.Elems))
		for i, e := range v.Elems {
			elems[i] = divide(e, div)
		}
		d := Tuple(elems...)
		d.Names = v.Names
		return d
	}
	if v.Kind != ValueInt || div <= 1 {
		return v
	}
	if v.Signed {
		v.Bits = uint64(int64(v.Bits) / int64(div))
	} else {
		v.Bits /= div
	}
	return v
}

// appendJSONString appends s as a JSON string with bpftrace's escapes: \"
// \\ \n \r \t, other control bytes as \u00XX. Valid UTF-8 passes through;
// a byte that is not valid UTF-8 is written as \u00XX (bpftrace 0.17
// writes a broken \uffffffXX there).
func appendJSONString[S string | []byte](b []byte, s S) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '"':
			b = append(b, '\\', '"')
		case c == '\\':
			b = append(b, '\\', '\\')
		case c == '\n':
			b = append(b, '\\', 'n')
		case c == '\r':
			b = append(b, '\\', 'r')
		case c == '\t':
			b = append(b, '\\', 't')
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&15])
		case c < 0x80:
			b = append(b, c)
		default:
			r, n := utf8.DecodeRuneInString(string(s[i:min(i+utf8.UTFMax, len(s))]))
			if r == utf8.RuneError && n <= 1 {
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&15])
				i++
				continue
			}
			b = append(b, s[i:i+n]...)
			i += n
			continue
		}
		i++
	}
	return append(b, '"')
}
