package codegen

import (
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gotrace/gotrace/codegen/layout"
	"github.com/gotrace/gotrace/internal/testenv"
	"github.com/gotrace/gotrace/lang"
)

// semanticsTests are BEGIN programs whose printf output was captured from
// bpftrace 0.17 on this machine (TestSemanticsAgainstBpftrace re-checks
// them when bpftrace is installed). Formats use only %ld, %lu, %lx and %s,
// which bpftrace prints at full width.
var semanticsTests = []struct {
	name   string
	src    string
	params []string
	want   string
}{
	{"arithmetic", `BEGIN {
  $z = (int64)(nsecs * 0);
  $m7 = $z - 7; $m16 = $z - 16; $five = $z + 5;
  printf("div %ld %ld %ld %ld\n", $m7/2, 7/($z-2), $m7 % 3, $m7 / ($z-2));
  printf("shr %ld %ld\n", $m16 >> 2, (uint64)$m16 >> 2);
  printf("cmp %ld %ld %ld %ld\n", $m7 < 1, (uint64)$m7 < 1, $m7 > $five, $m7 <= (uint32)5);
  @zero = 0;
  printf("divz %ld %ld %ld %ld %ld %ld\n", $five/@zero, $five%@zero, $m7%@zero, $five/0, $five%0, 5%0);
  printf("cast %ld %ld %ld\n", (int8)($z+200), (uint16)($z-1), (int16)($z+0x18000));
  printf("mul %ld\n", $m7 * 3);
  printf("sh %ld %ld %ld %ld\n", $five << 62, $five << 64, $five << (@zero + 64), $five >> (@zero + 70));
  printf("bool %ld %ld %ld\n", $five && $z, $five || $z, !$five);
  printf("x %lx\n", $m7);
  exit();
}`, nil, `div 9223372036854775804 0 0 0
shr 4611686018427387900 4611686018427387900
cmp 1 0 0 0
divz 0 5 -7 0 0 0
cast -56 65535 -32768
mul -21
sh 4611686018427387904 0 5 0
bool 0 1 0
x fffffffffffffff9
`},
	// Increments of a map's elements that are there (changed in place)
	// and of missing ones (stored), as values before and after.
	{"increments", `BEGIN {
  @m["a"] = 5;
  $p = @m["a"]++; $q = ++@m["a"]; $r = @m["b"]--; $s = --@m["b"];
  printf("%ld %ld %ld %ld %ld %ld\n", $p, $q, $r, $s, @m["a"], @m["b"]);
  exit();
}`, nil, "5 7 0 -2 7 -2\n"},
	{"language", `BEGIN {
  $s = "hello";
  $t = $s;
  $c = 3 > 2 ? "yes" : "no";
  printf("%s %s %s %ld %ld\n", $s, $t, $c, $s == "hello", $s != "hello");
  printf("%ld %ld %ld\n", "abc" == "abcd", "abcd" == "abc", "" == "");
  @m["a"] = 1; @m["b"] = 2; @m["a"] += 10; @m["b"]++; @m["c"]--;
  printf("%ld %ld %ld %ld\n", @m["a"], @m["b"], @m["c"], @m["zz"]);
  delete(@m["a"]);
  printf("%ld\n", @m["a"]);
  @t[1, "x"] = 5;
  printf("%ld %ld\n", @t[1, "x"], @t[2, "x"]);
  $i = 0; $sum = 0;
  while ($i < 10) { $i++; if ($i == 3) { continue; } if ($i == 8) { break; } $sum += $i; }
  printf("%ld %ld\n", $i, $sum);
  $u = 0;
  unroll(5) { $u = $u * 2 + 1; }
  printf("%ld\n", $u);
  $tup = (1, "two", -3);
  printf("%ld %s %ld\n", $tup.0, $tup.1, $tup.2);
  @str = "mapstr";
  @nostr[6] = "q"; printf("%s %s\n", @str, @nostr[5]);
  printf("%ld %ld\n", $1, $#);
  printf("%s\n", str($2));
  if ($i > 100) { printf("big\n"); } else if ($i > 5) { printf("mid\n"); } else { printf("small\n"); }
  printf("%ld %ld %ld\n", -(3), ~0, !0);
  printf("%ld %ld\n", (uint8)0x1ff + 1, (int32)0xffffffff * 2);
  printf("%s\n", 0 ? "longer string here" : "s");
  exit();
}`, []string{"42", "word"}, `hello hello yes 1 0
0 0 1
11 3 -1 0
0
5 0
8 25
31
1 two -3
mapstr 
42 2
word
mid
-3 -1 1
256 -2
s
`},
	{"operators", `BEGIN {
  $a = 5; $b = $a++; $c = ++$a; $d = $a--; $e = --$a;
  printf("%ld %ld %ld %ld %ld\n", $a, $b, $c, $d, $e);
  @x = 10; $f = @x++; $g = ++@x; $h = @x--;
  printf("%ld %ld %ld %ld\n", @x, $f, $g, $h);
  @k[-1] = 3; @k[-1] *= 7; @k[-1] -= 1; @k[-1] >>= 2; @k[-1] |= 8; @k[-1] ^= 1; @k[-1] &= 13;
  printf("%ld\n", @k[-1]);
  $s = $a > 100 ? "big" : "a much longer string";
  $s2 = $a > 1 ? "big" : "a much longer string";
  printf("%s|%s\n", $s, $s2);
  @v["k"] = "val"; @v["k2"] = "other";
  printf("%s %s %s|\n", @v["k"], @v["k2"], @v["nope"]);
  $t = (1, (int8)-2, "x");
  printf("%ld %ld %s\n", $t.0, $t.1, $t.2);
  $n = 0;
  if ($a == 5) { if ($b == 5) { $n = 1; } else { $n = 2; } } else { $n = 3; }
  printf("%ld\n", $n);
  $q = 0x7fffffffffffffff; $r = $q + 1;
  printf("%ld %lu %ld\n", $r, $r, (int64)$r < 0);
  printf("%ld %ld %ld\n", 10 > 3 && 2 > 1, 0 || 0, (1 && 0) || (0 || 1));
  printf("%ld %ld\n", 0xffffffff + 1, 1 << 40);
  exit();
}`, nil, `5 5 7 7 5
11 10 12 12
12
a much longer string|big
val other |
1 -2 x
1
-9223372036854775808 9223372036854775808 1
1 0 1
4294967296 1099511627776
`},
	{"loops", `BEGIN {
  $i = 0;
  while ($i < 3) { printf("i=%ld\n", $i); @sum = sum($i); $i++; }
  $j = 10;
  while ($j > 0) { $j -= 4; }
  printf("j=%ld\n", $j);
  printf("sizes %ld %ld %ld %ld\n", sizeof(int8), sizeof(int16), sizeof(int32), sizeof(int64));
  printf("strncmp %ld %ld %ld %ld\n", strncmp("hello", "help", 3), strncmp("hello", "help", 4), strncmp("ab", "abc", 2), strncmp("ab", "abc", 3));
  exit();
}`, nil, `i=0
i=1
i=2
j=-2
sizes 1 2 4 8
strncmp 0 1 0 1
`},
	// Long chains, which the passes walk in loops: bpftrace 0.17 takes an
	// else-if chain of thousands of branches and a few thousand operators.
	{"else-if chain", `BEGIN { $x = $1; ` + elseIfChain(197) + ` $x = $1 + 46; ` + elseIfChain(197) + ` exit(); }`, []string{"150"}, "branch 150\nbranch 196\n"},
	{"operator chains", `BEGIN { printf("%ld %ld %ld\n", 1` + strings.Repeat(" + 1", 3000) + `, $1` + strings.Repeat(" && $1", 1000) + `, 0` + strings.Repeat(" || $1 > 5", 1000) + `); exit(); }`, []string{"7"}, "3001 1 1\n"},
}

// elseIfChain is an if with n branches, each printing its number when $x
// holds it.
func elseIfChain(n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteString(" else ")
		}
		fmt.Fprintf(&b, `if ($x == %d) { printf("branch %%ld\n", %d); }`, i, i)
	}
	return b.String()
}

// TestSemantics runs each program in the kernel and compares its printf
// output with bpftrace's.
func TestSemantics(t *testing.T) {
	for _, tt := range semanticsTests {
		t.Run(tt.name, func(t *testing.T) {
			l := load(t, compileSource(t, tt.src, tt.params...))
			l.runKind(t, lang.ProbeBegin)
			var got strings.Builder
			for _, r := range l.drain(t, l.spec.EventsMap) {
				if r.ev.Kind == EventPrintf {
					got.WriteString(formatRecord(t, r))
				}
			}
			if got.String() != tt.want {
				t.Errorf("output:\n%s\nwant:\n%s", got.String(), tt.want)
			}
		})
	}
}

// TestSemanticsAgainstBpftrace checks that the expected outputs above are
// what bpftrace 0.17 prints.
func TestSemanticsAgainstBpftrace(t *testing.T) {
	bpftrace := testenv.RequireBpftrace(t)
	for _, tt := range semanticsTests {
		t.Run(tt.name, func(t *testing.T) {
			script := filepath.Join(t.TempDir(), "t.bt")
			if err := os.WriteFile(script, []byte(tt.src), 0o644); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(bpftrace, append([]string{"-q", script}, tt.params...)...).Output()
			if err != nil {
				t.Fatalf("bpftrace: %v", err)
			}
			// Drop the maps bpftrace prints at exit: they follow a blank line.
			got, _, _ := strings.Cut(string(out), "\n\n\n")
			if got+"\n" != tt.want {
				t.Errorf("bpftrace printed:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}

// formatRecord formats a printf record, supporting the conversions the
// tests use: %ld %lu %lx %s, %r (quoted) and %%.
func formatRecord(t *testing.T, r record) string {
	t.Helper()
	var b strings.Builder
	format, arg := r.ev.Format, 0
	var c layout.Cursor
	for i := 0; i < len(format); i++ {
		if format[i] != '%' {
			b.WriteByte(format[i])
			continue
		}
		j := i + 1
		for j < len(format) && strings.IndexByte("l-0123456789", format[j]) >= 0 {
			j++
		}
		if j == len(format) {
			t.Fatalf("format %q: dangling %%", format)
		}
		verb := format[j]
		i = j
		if verb == '%' {
			b.WriteByte('%')
			continue
		}
		f := r.ev.Args[arg]
		arg++
		data := c.Field(f, r.data)
		switch verb {
		case 's', 'r':
			b.WriteString(fieldText(f, data))
		case 'd':
			fmt.Fprint(&b, int64(binary.LittleEndian.Uint64(data)))
		case 'u':
			fmt.Fprint(&b, binary.LittleEndian.Uint64(data))
		case 'x':
			fmt.Fprintf(&b, "%x", binary.LittleEndian.Uint64(data))
		default:
			t.Fatalf("format %q: verb %c not supported by the test", format, verb)
		}
	}
	return b.String()
}

// TestIntVariableWidth checks that an integer variable keeps the size of
// its first value, as the checker types it: bpftrace 0.17 instead leaves
// such a variable unchanged (`$x = (uint8)1; $x = 300` prints 1), a bug
// gotrace does not copy.
func TestIntVariableWidth(t *testing.T) {
	src := `BEGIN {
  $x = (uint8)1; $x = 300;
  $y = (int8)1; $y = 255;
  $z = (uint16)65535; $z++;
  $w = (int8)100; $w += 100;
  printf("%ld %ld %ld %ld\n", $x, $y, $z, $w);
  exit();
}`
	l := load(t, compileSource(t, src))
	l.runKind(t, lang.ProbeBegin)
	var got strings.Builder
	for _, r := range l.drain(t, l.spec.EventsMap) {
		got.WriteString(formatRecord(t, r))
	}
	if want := "44 -1 0 -56\n"; got.String() != want {
		t.Errorf("output %q, want %q", got.String(), want)
	}
}
