package printf

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

func TestParse(t *testing.T) {
	verb := func(text, flags string, width, prec int, length string, conv, buf byte) Part {
		return Part{Verb: &Verb{Text: text, Flags: flags, Width: width, Prec: prec, Length: length, Conv: conv, Buf: buf}}
	}
	lit := func(s string) Part { return Part{Literal: s} }
	esc := func(p Part) Part { p.Verb.Escaped = true; return p }
	tests := []struct {
		in   string
		want []Part
	}{
		{"", nil},
		{"hello\n", []Part{lit("hello\n")}},
		{"%d\n", []Part{verb("%d", "", -1, -1, "", 'd', 0), lit("\n")}},
		{"fee %-8d|%05u %.3x %8.3X\n", []Part{
			lit("fee "), verb("%-8d", "-", 8, -1, "", 'd', 0),
			lit("|"), verb("%05u", "0", 5, -1, "", 'u', 0),
			lit(" "), verb("%.3x", "", -1, 3, "", 'x', 0),
			lit(" "), verb("%8.3X", "", 8, 3, "", 'X', 0), lit("\n"),
		}},
		{"%ld%lld%lu%llu%zu%lx%hd%hhx%jd%td%lo%p%lp", []Part{
			verb("%ld", "", -1, -1, "l", 'd', 0), verb("%lld", "", -1, -1, "ll", 'd', 0),
			verb("%lu", "", -1, -1, "l", 'u', 0), verb("%llu", "", -1, -1, "ll", 'u', 0),
			verb("%zu", "", -1, -1, "z", 'u', 0), verb("%lx", "", -1, -1, "l", 'x', 0),
			verb("%hd", "", -1, -1, "h", 'd', 0), verb("%hhx", "", -1, -1, "hh", 'x', 0),
			verb("%jd", "", -1, -1, "j", 'd', 0), verb("%td", "", -1, -1, "t", 'd', 0),
			verb("%lo", "", -1, -1, "l", 'o', 0), verb("%p", "", -1, -1, "", 'p', 0),
			verb("%lp", "", -1, -1, "l", 'p', 0),
		}},
		{"%s %c %r %rx %rh%rhx", []Part{
			verb("%s", "", -1, -1, "", 's', 0), lit(" "), verb("%c", "", -1, -1, "", 'c', 0), lit(" "),
			verb("%r", "", -1, -1, "", 'r', 0), lit(" "), verb("%rx", "", -1, -1, "", 'r', 'x'), lit(" "),
			verb("%rh", "", -1, -1, "", 'r', 'h'), verb("%rh", "", -1, -1, "", 'r', 'h'), lit("x"),
		}},
		{"%rH%rHx", []Part{verb("%rH", "", -1, -1, "", 'r', 'H'), verb("%rH", "", -1, -1, "", 'r', 'H'), lit("x")}},
		{"%-05d", []Part{verb("%-05d", "-0", 5, -1, "", 'd', 0)}},
		{"%0.0d", []Part{verb("%0.0d", "0", -1, 0, "", 'd', 0)}},
		// Not verbs in bpftrace 0.17: they stay literal and take no argument.
		{"%i %f %q %ls %lc %hs %#x %+d % d %*d %5 %5.d %--5d %lli %", []Part{
			lit("%i %f %q %ls %lc %hs %#x %+d % d %*d %5 %5.d %--5d %lli %"),
		}},
		// After the last verb, text is printed as is; before a verb, C's
		// printf turns %% into %.
		{"100%%\n", []Part{lit("100%%\n")}},
		{"%d 100%%\n", []Part{verb("%d", "", -1, -1, "", 'd', 0), lit(" 100%%\n")}},
		{"a%%b %d %%", []Part{lit("a%b "), verb("%d", "", -1, -1, "", 'd', 0), lit(" %%")}},
		{"%%%d", []Part{lit("%"), verb("%d", "", -1, -1, "", 'd', 0)}},
		{"%%d|%d", []Part{lit("%"), esc(verb("%d", "", -1, -1, "", 'd', 0)), lit("|"), verb("%d", "", -1, -1, "", 'd', 0)}},
		{"%%%%5d|", []Part{lit("%%"), esc(verb("%5d", "", 5, -1, "", 'd', 0)), lit("|")}},
		{"x%5 %d", []Part{lit("x%5 "), verb("%d", "", -1, -1, "", 'd', 0)}},
		{"µs %d µs", []Part{lit("µs "), verb("%d", "", -1, -1, "", 'd', 0), lit(" µs")}},
	}
	for _, tt := range tests {
		got, err := Parse(tt.in)
		if err != nil {
			t.Errorf("Parse(%q): %v", tt.in, err)
			continue
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Parse(%q):\n got %s\nwant %s", tt.in, dumpParts(got), dumpParts(tt.want))
		}
	}
}

func dumpParts(parts []Part) string {
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

func TestParseErrors(t *testing.T) {
	for _, in := range []string{"%99999999999d", "%.70000d", "%65537s"} {
		if _, err := Parse(in); err == nil {
			t.Errorf("Parse(%q) succeeded, want an error", in)
		}
	}
	if _, err := Parse("%65536d"); err != nil {
		t.Errorf("Parse(%%65536d): %v", err)
	}
}

// FuzzParse checks that Parse never panics and that its parts
// account for the whole format: verbs keep their text, and literal text
// only ever loses the % of a C "%%".
func FuzzParse(f *testing.F) {
	for _, s := range []string{"", "%d\n", "%-8.3llu|%rx %s", "100%%", "%%%d", "%%d %5 %", "%99999999999d", "µs %c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		parts, err := Parse(s)
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
				if v.Text == "" || v.Text[0] != '%' || v.Width > MaxWidth || v.Prec > MaxWidth {
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

// TestParseBpftrace counts the verbs of tricky formats the way
// bpftrace 0.17 does: it reports how many arguments a format expects when
// given too many.
func TestParseBpftrace(t *testing.T) {
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
			parts, err := Parse(f)
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
				t.Errorf("Parse(%q) has %d verbs, bpftrace counts %d", f, got, want)
			}
		})
	}
}
