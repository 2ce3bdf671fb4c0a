package debuginfo

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gotrace/gotrace/internal/ptregs"
	"github.com/gotrace/gotrace/internal/testenv"
	"github.com/gotrace/gotrace/lang"
	"github.com/gotrace/gotrace/usdt"
)

// paramsSource declares functions whose parameters cover the types a
// uprobe's args reads: integers of each size and sign, typedefs, const,
// pointers to pointers, a struct with a char array, an int array, a
// nested struct, a pointer to itself and bitfields, a union, an enum, and
// parameters the registers do not pass.
const paramsSource = `#include <stdint.h>
typedef unsigned long long u64_t;
enum color { RED, GREEN };
struct node {
	int a;
	char name[10];
	int c[3];
	struct inner { short x; } in;
	struct node *next;
	unsigned flag : 1, level : 3;
};
union either { int i; char c; };
__attribute__((noinline)) int basic(int8_t a, uint16_t b, const u64_t c, char **argv, enum color e) { return a + b + c + e + (argv != 0); }
__attribute__((noinline)) int structs(struct node *n, union either *u) { return n->a + u->i; }
__attribute__((noinline)) long many(double d, long a1, long a2, long a3, long a4, long a5, long a6, long a7) { return d + a1 + a2 + a3 + a4 + a5 + a6 + a7; }
__attribute__((noinline)) long same1(int a, long b) { return a + b; }
__attribute__((noinline)) long same2(int a, long b) { return a - b; }
int main(void) { return 0; }
`

// buildWithDebugInfo compiles paramsSource with gcc -g (flags added) and
// returns the binary's path.
func buildWithDebugInfo(t testing.TB, flags ...string) string {
	t.Helper()
	gcc := testenv.RequireTool(t, "gcc")
	dir := t.TempDir()
	src := filepath.Join(dir, "params.c")
	if err := os.WriteFile(src, []byte(paramsSource), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "params")
	args := append([]string{"-O0", "-o", bin, src}, flags...)
	if out, err := exec.Command(gcc, args...).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	return bin
}

// TestFuncParams reads each function's parameters: their names, C
// spellings (as bpftrace 0.17 lists them), language types and registers,
// and the structs they name.
func TestFuncParams(t *testing.T) {
	bin := buildWithDebugInfo(t, "-g")
	reg := func(i int) int {
		off, _ := ptregs.ArgOffset(i)
		return off
	}
	tests := []struct {
		function string
		// fields are "name ctype type @offset" per parameter.
		fields []string
	}{
		{"basic", []string{
			fmt.Sprintf("a int8_t int8 @%d", reg(0)),
			fmt.Sprintf("b uint16_t uint16 @%d", reg(1)),
			fmt.Sprintf("c const u64_t uint64 @%d", reg(2)),
			fmt.Sprintf("argv char** int8 * * @%d", reg(3)),
			fmt.Sprintf("e enum color int32 @%d", reg(4)),
		}},
		{"structs", []string{
			fmt.Sprintf("n struct node* struct node * @%d", reg(0)),
			fmt.Sprintf("u union either* struct either * @%d", reg(1)),
		}},
		// A double goes in an SSE register: the integer registers that
		// follow are not the next parameters', which have no type.
		{"many", []string{
			fmt.Sprintf("d double none @%d", reg(0)),
			fmt.Sprintf("a1 long int none @%d", reg(1)),
			fmt.Sprintf("a2 long int none @%d", reg(2)),
			fmt.Sprintf("a3 long int none @%d", reg(3)),
			fmt.Sprintf("a4 long int none @%d", reg(4)),
			fmt.Sprintf("a5 long int none @%d", reg(5)),
			"a6 long int none @0",
			"a7 long int none @0",
		}},
	}
	for _, tt := range tests {
		rec, _, err := new(Files).FuncParams(bin, tt.function)
		if err != nil {
			t.Fatalf("%s: %v", tt.function, err)
		}
		if rec.Category != lang.UprobeCategory || rec.Name != tt.function {
			t.Errorf("%s: record %s:%s", tt.function, rec.Category, rec.Name)
		}
		var got []string
		for _, f := range rec.Fields {
			got = append(got, fmt.Sprintf("%s %s %s @%d", f.Name, f.CType, f.Type, f.Offset))
		}
		if strings.Join(got, "\n") != strings.Join(tt.fields, "\n") {
			t.Errorf("%s: fields\n%s\nwant\n%s", tt.function, strings.Join(got, "\n"), strings.Join(tt.fields, "\n"))
		}
	}

	_, structs, err := new(Files).FuncParams(bin, "structs")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, sd := range structs {
		got = append(got, fmt.Sprintf("%s %d:", sd.Name, sd.Size))
		for _, f := range sd.Fields {
			got = append(got, fmt.Sprintf("  %s %s @%d bits %d<<%d", f.Name, f.Type, f.Offset, f.Bits, f.BitShift))
		}
	}
	want := []string{
		"inner 2:",
		"  x int16 @0 bits 0<<0",
		"node 48:",
		"  a int32 @0 bits 0<<0",
		"  name string[10] @4 bits 0<<0",
		"  c int32[3] @16 bits 0<<0",
		"  in struct inner @28 bits 0<<0",
		"  next struct node * @32 bits 0<<0",
		"  flag uint32 @40 bits 1<<0",
		"  level uint32 @40 bits 3<<1",
		"either 4:",
		"  i int32 @0 bits 0<<0",
		"  c int8 @0 bits 0<<0",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("structs:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestFuncParamsErrors names the file without debug information and the
// function the debug information does not have.
func TestFuncParamsErrors(t *testing.T) {
	stripped := buildWithDebugInfo(t)
	if _, _, err := new(Files).FuncParams(stripped, "basic"); err == nil || !strings.Contains(err.Error(), "has no debug information (DWARF)") {
		t.Errorf("without -g: %v, want no debug information", err)
	}
	bin := buildWithDebugInfo(t, "-g")
	if _, _, err := new(Files).FuncParams(bin, "nosuch"); !errors.Is(err, errNoFunction) {
		t.Errorf("a function it lacks: %v, want %v", err, errNoFunction)
	}
	if _, _, err := new(Files).FuncParams(filepath.Join(t.TempDir(), "none"), "basic"); err == nil {
		t.Error("a file that does not exist: no error")
	}
}

// host is a lang.Host that reads uprobe targets' debug information.
type host struct{ *Files }

func (host) FindTarget(name string) (string, error) { return "", errors.New("no bare targets") }
func (host) ObjectSymbol(path, name string) (uint64, uint64, error) {
	return 0, 0, errors.New("no symbols")
}

// TestCheckUprobeArgs checks scripts that read a uprobe's args: the
// parameters typed from the debug information, through -> and ., and
// bpftrace 0.17's messages where they cannot be read.
func TestCheckUprobeArgs(t *testing.T) {
	// Run where ./B is the binary: the script names it in as many
	// characters as "BIN", so the columns below hold.
	bin := buildWithDebugInfo(t, "-g")
	dir := t.TempDir()
	if err := os.Symlink(bin, filepath.Join(dir, "B")); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	tests := []struct{ src, want string }{
		{`uprobe:BIN:structs { printf("%d %s %d %d\n", args->n->a, args->n->name, args.n.next->in.x, args->u->c); $l = args->n->level; }`, ""},
		{`uprobe:BIN:basic { @[args->a, args->b, args.e] = *args->argv[0]; }`, ""},
		{`uprobe:BIN:structs { $n = (struct node *)arg0; @ = $n->in.x + ((union either *)arg1)->i; }`, ""},
		{`uretprobe:BIN:structs { @ = ((struct node *)retval)->a; }`, ""},
		{`uprobe:BIN:structs { @ = ((struct nosuch *)arg0)->a; }`, "1:26-44: Unknown struct/union: 'struct nosuch'"},
		{`uprobe:BIN:basic { @ = args->zz; }`, "1:24-32: Can't find function parameter zz"},
		{`uprobe:BIN:basic { @ = args; }`, "1:22-23: context cannot be assigned to a map"},
		{`uretprobe:BIN:basic { @ = args->a; }`, "1:27-31: The args builtin can only be used with tracepoint/kfunc/uprobeprobes (uretprobe used here)\n1:27-34: Can not access field 'a' on expression of type 'void *'"},
		{`uprobe:BIN:bas* { @ = args->a; }`, ""},
		{`uprobe:BIN:same* { @ = args->a + args->b; }`, ""},
		{`uprobe:BIN:s* { @ = args->a; }`, "1:1-14: Probe has attach points with mixed arguments"},
		{`uprobe:./*:basic { @ = args->a; }`, "1:1-17: args of a uprobe needs a function of one file, the file named without a wildcard: uprobe:./*:basic"},
		{`uprobe:BIN:nosuch { @ = args->a; }`, "1:1-18: args of uprobe:BIN:nosuch: no function of that name in the debug information"},
		{`uprobe:BIN:many { @ = args->a1; }`, "1:23-31: parameter a1 (long int) cannot be read: gotrace reads the parameters passed in the integer registers (integers and pointers, up to the sixth, before any float or struct passed by value)"},
	}
	for _, tt := range tests {
		src := strings.ReplaceAll(tt.src, "BIN", "./B")
		want := strings.ReplaceAll(tt.want, "BIN", "./B")
		p, err := lang.Parse("t.bt", src)
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		cfg := lang.Config{Host: host{new(Files)}}
		info := lang.NewInfo()
		err = lang.Resolve(p, cfg, info)
		if err == nil {
			err = lang.Check(p, cfg, info)
		}
		got := ""
		var list lang.ErrorList
		if errors.As(err, &list) {
			var lines []string
			for _, e := range list {
				lines = append(lines, e.Error())
			}
			got = strings.Join(lines, "\n")
		} else if err != nil {
			got = err.Error()
		}
		if got != want {
			t.Errorf("%s:\nerrors %q\nwant   %q", src, got, want)
		}
	}
}

// TestListMatchesBpftrace lists every uprobe of a file with its
// parameters, -lv, as bpftrace 0.17 lists them, byte for byte.
func TestListMatchesBpftrace(t *testing.T) {
	bin := buildWithDebugInfo(t, "-g")
	var debug Files
	var ours strings.Builder
	if err := usdt.List(&ours, usdt.ListOptions{Pattern: "uprobe:" + bin + ":*", Verbose: true, UprobeParams: debug.ParamLines}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(ours.String(), ":structs\n    struct node* n\n    union either* u\n") {
		t.Errorf("-lv lists:\n%s", ours.String())
	}
	bpftrace := testenv.RequireBpftrace(t)
	theirs, err := exec.Command(bpftrace, "-lv", "uprobe:"+bin+":*").Output()
	if err != nil {
		t.Fatalf("bpftrace: %v", err)
	}
	if string(theirs) != ours.String() {
		t.Errorf("gotrace lists:\n%s\nbpftrace:\n%s", ours.String(), theirs)
	}
}

// TestFuncParamsSeparateDebugFile reads the parameters of a stripped
// file from the debug file its .gnu_debuglink names, beside it, as
// distributions ship debug information (objcopy --only-keep-debug).
func TestFuncParamsSeparateDebugFile(t *testing.T) {
	bin := buildWithDebugInfo(t, "-g")
	objcopy := testenv.RequireTool(t, "objcopy")
	debug := bin + ".debug"
	for _, args := range [][]string{
		{"--only-keep-debug", bin, debug},
		{"--strip-debug", bin},
		{"--add-gnu-debuglink=" + debug, bin},
	} {
		if out, err := exec.Command(objcopy, args...).CombinedOutput(); err != nil {
			t.Fatalf("objcopy %v: %v\n%s", args, err, out)
		}
	}
	rec, _, err := new(Files).FuncParams(bin, "basic")
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Fields) != 5 || rec.Fields[3].Name != "argv" || rec.Fields[3].CType != "char**" {
		t.Errorf("fields %+v", rec.Fields)
	}
	if got := new(Files).ParamLines(bin, "structs"); strings.Join(got, ",") != "struct node* n,union either* u" {
		t.Errorf("-lv lines %q", got)
	}
	if err := os.Remove(debug); err != nil {
		t.Fatal(err)
	}
	if _, _, err := new(Files).FuncParams(bin, "basic"); err == nil || !strings.Contains(err.Error(), "nor a separate debug file") {
		t.Errorf("without the debug file: %v", err)
	}
}
