package lang

import (
	"fmt"
	"os/exec"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/gotrace/gotrace/internal/testenv"
)

func TestParseFormat(t *testing.T) {
	verb := func(text, flags string, width, prec int, length string, conv, buf byte) FormatPart {
		return FormatPart{Verb: &FormatVerb{Text: text, Flags: flags, Width: width, Prec: prec, Length: length, Conv: conv, Buf: buf}}
	}
	lit := func(s string) FormatPart { return FormatPart{Literal: s} }
	esc := func(p FormatPart) FormatPart { p.Verb.Escaped = true; return p }
	tests := []struct {
		in   string
		want []FormatPart
	}{
		{"", nil},
		{"hello\n", []FormatPart{lit("hello\n")}},
		{"%d\n", []FormatPart{verb("%d", "", -1, -1, "", 'd', 0), lit("\n")}},
		{"fee %-8d|%05u %.3x %8.3X\n", []FormatPart{
			lit("fee "), verb("%-8d", "-", 8, -1, "", 'd', 0),
			lit("|"), verb("%05u", "0", 5, -1, "", 'u', 0),
			lit(" "), verb("%.3x", "", -1, 3, "", 'x', 0),
			lit(" "), verb("%8.3X", "", 8, 3, "", 'X', 0), lit("\n"),
		}},
		{"%ld%lld%lu%llu%zu%lx%hd%hhx%jd%td%lo%p%lp", []FormatPart{
			verb("%ld", "", -1, -1, "l", 'd', 0), verb("%lld", "", -1, -1, "ll", 'd', 0),
			verb("%lu", "", -1, -1, "l", 'u', 0), verb("%llu", "", -1, -1, "ll", 'u', 0),
			verb("%zu", "", -1, -1, "z", 'u', 0), verb("%lx", "", -1, -1, "l", 'x', 0),
			verb("%hd", "", -1, -1, "h", 'd', 0), verb("%hhx", "", -1, -1, "hh", 'x', 0),
			verb("%jd", "", -1, -1, "j", 'd', 0), verb("%td", "", -1, -1, "t", 'd', 0),
			verb("%lo", "", -1, -1, "l", 'o', 0), verb("%p", "", -1, -1, "", 'p', 0),
			verb("%lp", "", -1, -1, "l", 'p', 0),
		}},
		{"%s %c %r %rx %rh%rhx", []FormatPart{
			verb("%s", "", -1, -1, "", 's', 0), lit(" "), verb("%c", "", -1, -1, "", 'c', 0), lit(" "),
			verb("%r", "", -1, -1, "", 'r', 0), lit(" "), verb("%rx", "", -1, -1, "", 'r', 'x'), lit(" "),
			verb("%rh", "", -1, -1, "", 'r', 'h'), verb("%rh", "", -1, -1, "", 'r', 'h'), lit("x"),
		}},
		{"%-05d", []FormatPart{verb("%-05d", "-0", 5, -1, "", 'd', 0)}},
		{"%0.0d", []FormatPart{verb("%0.0d", "0", -1, 0, "", 'd', 0)}},
		// Not verbs in bpftrace 0.17: they stay literal and take no argument.
		{"%i %f %q %ls %lc %hs %#x %+d % d %*d %5 %5.d %--5d %lli %", []FormatPart{
			lit("%i %f %q %ls %lc %hs %#x %+d % d %*d %5 %5.d %--5d %lli %"),
		}},
		// After the last verb, text is printed as is; before a verb, C's
		// printf turns %% into %.
		{"100%%\n", []FormatPart{lit("100%%\n")}},
		{"%d 100%%\n", []FormatPart{verb("%d", "", -1, -1, "", 'd', 0), lit(" 100%%\n")}},
		{"a%%b %d %%", []FormatPart{lit("a%b "), verb("%d", "", -1, -1, "", 'd', 0), lit(" %%")}},
		{"%%%d", []FormatPart{lit("%"), verb("%d", "", -1, -1, "", 'd', 0)}},
		{"%%d|%d", []FormatPart{lit("%"), esc(verb("%d", "", -1, -1, "", 'd', 0)), lit("|"), verb("%d", "", -1, -1, "", 'd', 0)}},
		{"%%%%5d|", []FormatPart{lit("%%"), esc(verb("%5d", "", 5, -1, "", 'd', 0)), lit("|")}},
		{"x%5 %d", []FormatPart{lit("x%5 "), verb("%d", "", -1, -1, "", 'd', 0)}},
		{"µs %d µs", []FormatPart{lit("µs "), verb("%d", "", -1, -1, "", 'd', 0), lit(" µs")}},
	}
	for _, tt := range tests {
		got, err := ParseFormat(tt.in)
		if err != nil {
			t.Errorf("ParseFormat(%q): %v", tt.in, err)
			continue
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParseFormat(%q):\n got %s\nwant %s", tt.in, dumpParts(got), dumpParts(tt.want))
		}
	}
}

func dumpParts(parts []FormatPart) string {
	var b strings.Builder
	for _, p := range parts {
		if p.Verb == nil {
			b.WriteString("lit(" + p.Literal + ") ")
			continue
		}
		v := *p.Verb
		b.WriteString("verb(" + v.Text + " flags=" + v.Flags + " len=" + v.Length + " conv=" + string(v.Conv))
		if v.Escaped {
			b.WriteString(" escaped")
		}
		b.WriteString(") ")
	}
	return b.String()
}

func TestParseFormatErrors(t *testing.T) {
	for _, in := range []string{"%99999999999d", "%.70000d", "%65537s"} {
		if _, err := ParseFormat(in); err == nil {
			t.Errorf("ParseFormat(%q) succeeded, want an error", in)
		}
	}
	if _, err := ParseFormat("%65536d"); err != nil {
		t.Errorf("ParseFormat(%%65536d): %v", err)
	}
}

func TestFormatVerbMismatch(t *testing.T) {
	parse := func(s string) *FormatVerb {
		parts, err := ParseFormat(s)
		if err != nil || len(parts) != 1 || parts[0].Verb == nil {
			t.Fatalf("ParseFormat(%q) = %v, %v", s, parts, err)
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
		if got := parse(tt.verb).Mismatch(tt.typ); got != tt.want {
			t.Errorf("%s.Mismatch(%v) = %q, want %q", tt.verb, tt.typ, got, tt.want)
		}
	}
}

// FuzzParseFormat checks that ParseFormat never panics and that its parts
// account for the whole format: verbs keep their text, and literal text
// only ever loses the % of a C "%%".
func FuzzParseFormat(f *testing.F) {
	for _, s := range []string{"", "%d\n", "%-8.3llu|%rx %s", "100%%", "%%%d", "%%d %5 %", "%99999999999d", "µs %c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		parts, err := ParseFormat(s)
		if err != nil {
			return
		}
		var b strings.Builder
		for i, p := range parts {
			if (p.Verb == nil) == (p.Literal == "") {
				t.Fatalf("part %d of %q is neither a literal nor a verb: %+v", i, s, p)
			}
			if p.Verb != nil {
				v := p.Verb
				if v.Text == "" || v.Text[0] != '%' || v.Width > MaxFormatWidth || v.Prec > MaxFormatWidth {
					t.Fatalf("bad verb %+v in %q", v, s)
				}
				b.WriteString(v.Text)
				continue
			}
			b.WriteString(p.Literal)
		}
		got := strings.ReplaceAll(b.String(), "%", "")
		if want := strings.ReplaceAll(s, "%", ""); got != want {
			t.Fatalf("parts of %q rebuild %q", s, b.String())
		}
	})
}

// TestParseFormatBpftrace counts the verbs of tricky formats the way
// bpftrace 0.17 does: it reports how many arguments a format expects when
// given too many.
func TestParseFormatBpftrace(t *testing.T) {
	bpftrace := testenv.RequireBpftrace(t)
	formats := []string{
		`%d`, `%i`, `%-8d|%05u`, `%.3x%8.3X`, `%5.d`, `%-0-5d`, `%--5d`, `%lld%llx%hhd%hhu`,
		`%lli%li%hi`, `%zd%zu%jd%td%tx`, `%zi%zc%lc%ls%hs`, `%p%lp%hhp%llp`, `%s%c%r%rx%rh%rhx`,
		`%lr%5r%-5rx`, `%%d`, `%%%d`, `%%%%d`, `100%%`, `%`, `%5`, `%f%e%g%a%n%b`, `%#x%+d% d%*d`,
		`%q%Lf%K%zz`, `%-.5d`, `%1.2.3d`, `%00005d`, `%d%`, `%s%s%s%s%s%s%s%s%s%s%s%s%s%s%s`,
	}
	re := regexp.MustCompile(`\((\d+) supplied, (\d+) expected\)`)
	args := strings.Repeat(", 0", 16)
	for _, f := range formats {
		t.Run(f, func(t *testing.T) {
			t.Parallel()
			script := fmt.Sprintf(`BEGIN { printf("%s"%s); }`, f, args)
			out, _ := exec.Command(bpftrace, "-e", script).CombinedOutput()
			m := re.FindSubmatch(out)
			if m == nil {
				t.Fatalf("bpftrace did not count the verbs:\n%s", out)
			}
			want, _ := strconv.Atoi(string(m[2]))
			parts, err := ParseFormat(f)
			if err != nil {
				t.Fatal(err)
			}
			got := 0
			for _, p := range parts {
				if p.Verb != nil {
					got++
				}
			}
			if got != want {
				t.Errorf("ParseFormat(%q) has %d verbs, bpftrace counts %d", f, got, want)
			}
		})
	}
}
