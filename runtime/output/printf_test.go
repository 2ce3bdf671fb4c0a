package output

import (
	"fmt"
	"testing"

	"github.com/gotrace/gotrace/internal/printf"
)

// FuzzPrintfInt checks the integer conversions against Go's fmt, whose
// flags '-' and '0', width and precision follow C for integers: the value
// is first cut to the C type the length modifier names.
func FuzzPrintfInt(f *testing.F) {
	f.Add(false, false, -1, -1, uint8(0), uint8(0), uint64(1<<63))
	f.Add(true, true, 8, 3, uint8(1), uint8(2), uint64(42))
	f.Add(false, true, 5, -1, uint8(2), uint8(1), ^uint64(0))
	f.Add(false, false, 5, 0, uint8(3), uint8(4), uint64(0))
	f.Fuzz(func(t *testing.T, minus, zero bool, width, prec int, length, conv uint8, v uint64) {
		width %= 40
		prec %= 40
		lengths := []string{"", "h", "hh", "l", "ll", "z", "j", "t"}
		sizes := []int{4, 2, 1, 8, 8, 8, 8, 8}
		convs := "duxXo"
		l := int(length) % len(lengths)
		c := convs[int(conv)%len(convs)]
		flags := ""
		if minus {
			flags += "-"
		}
		if zero {
			flags += "0"
		}
		spec := flags
		if width > 0 {
			spec += fmt.Sprint(width)
		}
		if prec >= 0 {
			spec += "." + fmt.Sprint(prec)
		}
		parts, err := printf.Parse("%" + spec + lengths[l] + string(c))
		if err != nil || len(parts) != 1 || parts[0].Verb == nil {
			t.Fatalf("ParseFormat(%%%s%s%c) = %v, %v", spec, lengths[l], c, parts, err)
		}
		got, err := AppendPrintf(nil, parts, []Value{Uint(v)})
		if err != nil {
			t.Fatal(err)
		}
		size := sizes[l]
		u := v
		if size < 8 {
			u &= 1<<(8*size) - 1
		}
		var arg any = u
		goConv := c
		switch c {
		case 'd':
			shift := 64 - 8*size
			arg = int64(u<<shift) >> shift
		case 'u':
			goConv = 'd'
		}
		if want := fmt.Sprintf("%"+spec+string(goConv), arg); string(got) != want {
			t.Errorf("%%%s%s%c of %#x: got %q, want %q", spec, lengths[l], c, v, got, want)
		}
	})
}

// FuzzPrintf checks that any format with arguments of the kinds its verbs
// take formats without error or panic.
func FuzzPrintf(f *testing.F) {
	for _, s := range []string{"%d %s %r\n", "%-8.3llu|%rx %c %p", "100%%", "%%%d %5r", "µs %c %hhx %.0s"} {
		f.Add(s, int64(-1), "abc\x00def", []byte("\x00\xffa"))
	}
	f.Fuzz(func(t *testing.T, format string, n int64, s string, buf []byte) {
		parts, err := printf.Parse(format)
		if err != nil {
			return
		}
		var args []Value
		for _, p := range parts {
			if p.Verb == nil {
				continue
			}
			switch p.Verb.Arg() {
			case printf.ArgInt:
				args = append(args, Int(n))
			case printf.ArgString:
				args = append(args, Str(s))
			case printf.ArgBuf:
				args = append(args, Buf(buf))
			}
		}
		if _, err := AppendPrintf(nil, parts, args); err != nil {
			t.Fatalf("AppendPrintf(%q): %v", format, err)
		}
	})
}

// TestPrintfHash checks gotrace's %rH: a buffer's bytes in reverse order
// as one lower-case hex number, the way bitcoin-cli shows a hash that is
// stored little-endian; %rh and %rx keep bpftrace's order.
func TestPrintfHash(t *testing.T) {
	hash := []byte{0x61, 0x7a, 0x64, 0x05, 0xdd, 0x1a, 0xd2, 0xe2}
	for _, tc := range []struct {
		format string
		arg    []byte
		want   string
	}{
		{"%rH", hash, "e2d21add05647a61"},
		{"%rH|", nil, "|"},
		{"%rHx", []byte{0xab, 0x01}, "01abx"},
		{"%rh", []byte{0xab, 0x01}, "ab 01"},
		{"%rx", []byte{0xab, 0x01}, `\xab\x01`},
	} {
		parts, err := printf.Parse(tc.format)
		if err != nil {
			t.Fatal(err)
		}
		got, err := AppendPrintf(nil, parts, []Value{Buf(tc.arg)})
		if err != nil || string(got) != tc.want {
			t.Errorf("%s of % x: %q, %v; want %q", tc.format, tc.arg, got, err, tc.want)
		}
	}
}
