package output

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/gotrace/gotrace/internal/printf"
)

// ErrArgs reports printf arguments that do not fit the format: too few, too
// many, or of the wrong kind. The checker refuses such programs, so it
// means the runtime decoded a record wrongly.
var ErrArgs = errors.New("printf arguments do not match the format")

// AppendPrintf appends the text of a printf record to b: the format's parts
// (from printf.Parse) with args in place of the verbs, exactly as
// bpftrace 0.17 prints them.
//
// bpftrace hands each verb to C's printf with the 64-bit value, so the
// length modifier decides the width: %d, %u, %x, %X, %o and %c use the low
// 32 bits (%c the low 8), %hd 16, %hhd 8, and %ld, %lld, %zd, %jd, %td
// and %p all 64. Flags are '-' and '0', with C's width and precision
// rules. %s stops at the string's first NUL; %r prints a buf with \xNN
// escapes, %rx every byte as \xNN, %rh as space-separated hex pairs; a %r
// with flags, width or precision prints itself, as glibc does.
//
// C strings end at NUL: the text from the end of one verb to the end of
// the next is cut at its first NUL byte, be it in the literal ("a\x00b%d"
// prints "a") or in the verb's output ("%c" of 0 prints nothing). Text
// after the last verb is printed whole.
func AppendPrintf(b []byte, parts []printf.Part, args []Value) ([]byte, error) {
	n := 0
	frag := len(b) // where the text that C's printf formats with the next verb starts
	// nul says the literal since frag holds a NUL. Only such a literal
	// and %c can put a NUL in the text: strings end at their first NUL
	// and the other conversions print digits and escapes, so the text is
	// scanned only then.
	nul := false
	for _, p := range parts {
		v := p.Verb
		if v == nil {
			frag = len(b)
			nul = strings.IndexByte(p.Literal, 0) >= 0
			b = append(b, p.Literal...)
			continue
		}
		if n >= len(args) {
			return b, fmt.Errorf("format %s: %d arguments: %w", v.Text, len(args), ErrArgs)
		}
		arg := &args[n]
		n++
		var err error
		b, err = appendVerb(b, v, arg)
		if err != nil {
			return b, err
		}
		if nul || v.Conv == 'c' {
			if i := bytes.IndexByte(b[frag:], 0); i >= 0 {
				b = b[:frag+i]
			}
		}
		frag = len(b)
		nul = false
	}
	if n != len(args) {
		return b, fmt.Errorf("format takes %d arguments, got %d: %w", n, len(args), ErrArgs)
	}
	return b, nil
}

// appendVerb appends one verb formatted with arg.
func appendVerb(b []byte, v *printf.Verb, arg *Value) ([]byte, error) {
	if v.Escaped {
		return append(b, v.Text[1:]...), nil
	}
	want := ValueInt
	switch v.Arg() {
	case printf.ArgString:
		want = ValueString
	case printf.ArgBuf:
		want = ValueBuf
	}
	if want == ValueString && arg.Enum {
		name := Str(string(appendText(nil, *arg)))
		arg = &name
	}
	if arg.Kind != want {
		return b, fmt.Errorf("format %s with a value of kind %d: %w", v.Text, arg.Kind, ErrArgs)
	}
	left := false
	zero := false
	for i := 0; i < len(v.Flags); i++ {
		switch v.Flags[i] {
		case '-':
			left = true
		case '0':
			zero = true
		}
	}
	switch v.Conv {
	case 's':
		s := cstr(arg.Str)
		if v.Prec >= 0 && v.Prec < len(s) {
			s = s[:v.Prec]
		}
		return pad(b, "", s, v.Width, left, false), nil
	case 'r':
		if v.Flags != "" || v.Width >= 0 || v.Prec >= 0 {
			return append(b, v.Text...), nil
		}
		switch v.Buf {
		case 'x':
			for _, c := range arg.Bytes {
				b = append(b, '\\', 'x', hexDigits[c>>4], hexDigits[c&15])
			}
			return b, nil
		case 'h':
			for i, c := range arg.Bytes {
				if i > 0 {
					b = append(b, ' ')
				}
				b = append(b, hexDigits[c>>4], hexDigits[c&15])
			}
			return b, nil
		case 'H':
			return appendReversedHex(b, arg.Bytes), nil
		}
		return appendBufEscaped(b, arg.Bytes), nil
	case 'c':
		return pad(b, "", []byte{byte(arg.Bits)}, v.Width, left, false), nil
	}
	var num [24]byte
	if v.Conv == 'p' {
		if arg.Bits == 0 {
			return pad(b, "", "(nil)", v.Width, left, false), nil
		}
		return appendCInt(b, "0x", strconv.AppendUint(num[:0], arg.Bits, 16), v, left, zero), nil
	}
	bits := arg.Bits
	size := 4
	switch v.Length {
	case "h":
		size = 2
	case "hh":
		size = 1
	case "l", "ll", "z", "j", "t":
		size = 8
	}
	if size < 8 {
		bits &= 1<<(8*size) - 1
	}
	switch v.Conv {
	case 'd':
		// Sign-extend the truncated value.
		shift := 64 - 8*size
		n := int64(bits<<shift) >> shift
		if n < 0 {
			return appendCInt(b, "-", strconv.AppendUint(num[:0], uint64(-n), 10), v, left, zero), nil
		}
		return appendCInt(b, "", strconv.AppendUint(num[:0], uint64(n), 10), v, left, zero), nil
	case 'u':
		return appendCInt(b, "", strconv.AppendUint(num[:0], bits, 10), v, left, zero), nil
	case 'x':
		return appendCInt(b, "", strconv.AppendUint(num[:0], bits, 16), v, left, zero), nil
	case 'X':
		digits := strconv.AppendUint(num[:0], bits, 16)
		for i, c := range digits {
			if 'a' <= c && c <= 'f' {
				digits[i] = c - 'a' + 'A'
			}
		}
		return appendCInt(b, "", digits, v, left, zero), nil
	case 'o':
		return appendCInt(b, "", strconv.AppendUint(num[:0], bits, 8), v, left, zero), nil
	}
	return b, fmt.Errorf("format %s: unknown conversion: %w", v.Text, ErrArgs)
}

// appendCInt appends an integer's prefix (sign or 0x) and digits with C's
// precision (minimum digits; precision 0 prints nothing for 0), then pads
// to the width: with spaces on the right for '-', with zeros after the
// prefix for '0' without precision, else with spaces on the left.
func appendCInt(b []byte, prefix string, digits []byte, v *printf.Verb, left, zero bool) []byte {
	if v.Prec < 0 {
		return pad(b, prefix, digits, v.Width, left, zero)
	}
	if v.Prec == 0 && len(digits) == 1 && digits[0] == '0' {
		digits = digits[:0]
	}
	if n := v.Prec - len(digits); n > 0 {
		digits = append(appendRepeat(make([]byte, 0, v.Prec), '0', n), digits...)
	}
	return pad(b, prefix, digits, v.Width, left, false)
}

// pad appends prefix and body padded to width.
func pad[S string | []byte](b []byte, prefix string, body S, width int, left, zero bool) []byte {
	fill := width - len(prefix) - len(body)
	if fill <= 0 {
		b = append(b, prefix...)
		return append(b, body...)
	}
	switch {
	case left:
		b = append(b, prefix...)
		b = append(b, body...)
		return appendRepeat(b, ' ', fill)
	case zero:
		b = append(b, prefix...)
		b = appendRepeat(b, '0', fill)
		return append(b, body...)
	}
	b = appendRepeat(b, ' ', fill)
	b = append(b, prefix...)
	return append(b, body...)
}

func appendRepeat(b []byte, c byte, n int) []byte {
	for ; n > 0; n-- {
		b = append(b, c)
	}
	return b
}
