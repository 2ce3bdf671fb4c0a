package runtime

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/gotrace/gotrace/internal/testenv"
)

// pairSource passes a struct of two ints, nested in another with an
// array, to take().
const pairSource = `struct pair { int m; int n; };
struct outer { struct pair p; long k; int a[2]; };
__attribute__((noinline)) int take(struct outer *o)
{
	__asm__ volatile("" : : "r"(o) : "memory");
	return o->k;
}
int main(void)
{
	struct outer o = {{2, 3}, 7, {4, 5}};
	return take(&o) - 7;
}
`

// TestRunStructInMaps stores structs read from the traced program in
// maps, as a value, a key, part of a multi-key and a tuple, and from one
// map into another, one of them defined in place, anonymous, in the
// other, which has an array of ints: each holds the members, printed as bpftrace 0.17
// prints them ({ .m = 2, .n = 3 } as a value, {.m=2,.n=3} in a key), not
// the struct's address, which gotrace stored before. A struct in a tuple
// is sized unaligned, as bpftrace sizes it: 1 + 8 + 1 bytes.
func TestRunStructInMaps(t *testing.T) {
	testenv.RequireRoot(t)
	bin := buildC(t, t.TempDir(), "pair", pairSource)
	src := `struct outer { struct { int m; int n } p; long k; int a[2] }
uprobe:` + bin + `:take {
	$o = (struct outer *)arg0;
	@v = $o->p;
	@o = *$o;
	@k[$o->p] = 1;
	@mk[$o->k, $o->p] = 2;
	@t = (1, $o->p);
	@copy[@v] = 3;
	@size = sizeof(((int8)1, $o->p, (int8)1));
	exit();
}`
	want := "\n\n" +
		"@copy[{.m=2,.n=3}]: 3\n" +
		"@k[{.m=2,.n=3}]: 1\n" +
		"@mk[7, {.m=2,.n=3}]: 2\n" +
		"@o: { .p = { .m = 2, .n = 3 }, .k = 7, .a = [4,5] }\n" +
		"@size: 10\n" +
		"@t: (1, { .m = 2, .n = 3 })\n" +
		"@v: { .m = 2, .n = 3 }\n"
	checkBothPrint(t, bin, src, want)

	// In JSON, a struct is an object, { "m": 2, "n": 3 } as 0.17 writes
	// it (current bpftrace: {"m": 2, "n": 3}).
	src = strings.Replace(src, "exit();", "print($o->p); exit();", 1)
	json := traceCommand(t, bin, src, Options{Format: "json"})
	for _, want := range []string{
		`{"type": "value", "data": { "m": 2, "n": 3 }}`,
		`{"type": "map", "data": {"@o": { "p": { "m": 2, "n": 3 }, "k": 7, "a": [4,5] }}}`,
		`{"type": "map", "data": {"@t": [1,{ "m": 2, "n": 3 }]}}`,
	} {
		if !strings.Contains(json, want+"\n") {
			t.Errorf("JSON output:\n%s\nwant a line %s", json, want)
		}
	}
	bpftrace := testenv.RequireBpftrace(t)
	theirs, err := exec.Command(bpftrace, "-q", "-f", "json", "-c", bin, "-e", src).Output()
	if err != nil {
		t.Fatalf("bpftrace: %v", err)
	}
	if string(theirs) != json {
		t.Errorf("bpftrace's JSON:\n%s\ngotrace's:\n%s", theirs, json)
	}
}

// checkBothPrint runs script src with the program at bin under -c, quiet,
// in gotrace and in bpftrace 0.17, and checks that each prints want.
func checkBothPrint(t *testing.T, bin, src, want string) {
	t.Helper()
	if out := traceCommand(t, bin, src, Options{}); out != want {
		t.Errorf("output:\n%q\nwant\n%q", out, want)
	}
	bpftrace := testenv.RequireBpftrace(t)
	theirs, err := exec.Command(bpftrace, "-q", "-c", bin, "-e", src).Output()
	if err != nil {
		t.Fatalf("bpftrace: %v", err)
	}
	if string(theirs) != want {
		t.Errorf("bpftrace printed:\n%q\nwant\n%q", theirs, want)
	}
}

// TestRunUnion reads a union the script defines, through a cast of the
// traced program's pointer, as bpftrace 0.17 does: every member starts at
// the union's start, and its size is its largest member's. gotrace could
// not parse a union before.
func TestRunUnion(t *testing.T) {
	testenv.RequireRoot(t)
	bin := buildC(t, t.TempDir(), "pair", pairSource)
	src := `union word { int whole; unsigned char bytes[4]; struct { short lo; short hi; } halves; }
uprobe:` + bin + `:take {
	$w = (union word *)arg0;
	printf("%d %d %d %d\n", $w->whole, $w->bytes[0], $w->halves.lo, sizeof(union word));
	exit();
}`
	checkBothPrint(t, bin, src, "2 2 2 4\n\n\n")
}
