package runtime

import (
	"context"
	"debug/elf"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gotrace/gotrace/codegen"
	"github.com/gotrace/gotrace/internal/fixture"
	"github.com/gotrace/gotrace/internal/testenv"
	"github.com/gotrace/gotrace/runtime/attach"
	"github.com/gotrace/gotrace/runtime/plan"
	"github.com/gotrace/gotrace/usdt"
)

// connectBlock is the fixture's uprobe target: bitcoind's old mangled
// CChainState::ConnectBlock.
const connectBlock = "_ZN11CChainState12ConnectBlockERK6CBlockR20BlockValidationStateP11CBlockIndexR15CCoinsViewCacheRK12CChainParamsb"

// TestRunUprobes attaches a uprobe by demangled name, a uretprobe by
// mangled name, a uprobe by address and one by wildcard to the fixture's
// ConnectBlock, reading a struct field through arg3 as jb55's one-liner
// does; the wildcard's probe builtin names the symbol, func demangles it.
func TestRunUprobes(t *testing.T) {
	testenv.RequireRoot(t)
	bin := fixture.Private(t, "bitcoind")
	addr := symbolAddr(t, bin, connectBlock)
	src := fmt.Sprintf(`
struct CBlockIndex { const uint8_t *phashBlock; struct CBlockIndex *pprev; struct CBlockIndex *pskip; int nHeight; }
uprobe:%[1]s:"CChainState::ConnectBlock(CBlock const&, BlockValidationState&, CBlockIndex*, CCoinsViewCache&, CChainParams const&, bool)" {
  printf("height %%d\n", ((struct CBlockIndex *)arg3)->nHeight);
}
uretprobe:%[1]s:%[2]s { @ret[retval] = count(); }
uprobe:%[1]s:%#[3]x { @by_address = count(); }
uprobe:%[1]s:_ZN11CChainState12Connect* { @wild[probe] = count(); @func[func] = count(); }`, bin, connectBlock, addr)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, stderr, err := runScript(t, ctx, src, Options{Command: quietCommand(bin, "--linger-ms 0 --probes legacy")})
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	var heights strings.Builder
	for h := 800000; h < 800006; h++ {
		fmt.Fprintf(&heights, "height %d\n", h)
	}
	for _, want := range []string{
		"Attaching 4 probes...\n" + heights.String(),
		"@ret[1]: 6\n",
		"@by_address: 6\n",
		"@wild[uprobe:" + bin + ":" + connectBlock + "]: 6\n",
		"@func[CChainState::ConnectBlock(CBlock const&, BlockValidationState&, CBlockIndex*, CCoinsViewCache&, CChainParams const&, bool)]: 6\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output\n%s\nlacks %q", out, want)
		}
	}
}

// TestRunFuncWithoutPID traces a running program system-wide (no -p):
// func names the function by matching the page offset of the address
// against the attached symbols.
func TestRunFuncWithoutPID(t *testing.T) {
	testenv.RequireRoot(t)
	bin, _ := startInt3(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, stderr, err := runScript(t, ctx, fmt.Sprintf(`uprobe:%s:wo* { @calls[func, probe] = count(); if (@n++ == 2) { exit(); } }`, bin), Options{})
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if want := fmt.Sprintf("@calls[work, uprobe:%s:work]: 3\n", bin); !strings.Contains(out, want) {
		t.Errorf("output %q lacks %q", out, want)
	}
}

// A function that only a library's separate debug file names (libc's
// malloc_consolidate, with libc6-dbg) is attached, as -l lists it and as
// bpftrace 0.17 attaches it.
func TestRunUprobeDebugFileFunction(t *testing.T) {
	testenv.RequireRoot(t)
	const python = "/usr/bin/python3.11"
	if _, err := os.Stat(python); err != nil {
		testenv.Unavailable(t, "%v", err)
	}
	out, stderr, err := runScript(t, context.Background(), `uprobe:libc:malloc_consolidate { @ = count(); }`, Options{Command: python + " -c pass", Quiet: true})
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if !strings.Contains(out, "@: ") || strings.Contains(out, "@: 0\n") {
		t.Errorf("output %q, want malloc_consolidate counted", out)
	}
}

// TestExecutablesUseDescriptor swaps the symlink a uprobe names, after
// its file was read, for another file: the kernel is handed the
// descriptor read (/proc/self/fd/N), never the name again, so the uprobe
// still lands in the file read (with an elevated gotrace, the one opened
// with the user's rights), not the one the symlink names now.
func TestExecutablesUseDescriptor(t *testing.T) {
	read := fixture.Build(t, "bitcoind")
	other := fixture.Build(t, "bitcoind-stripped")
	link := t.TempDir() + "/target"
	if err := os.Symlink(read, link); err != nil {
		t.Fatal(err)
	}
	files := &usdt.Files{}
	defer files.Close()
	if _, err := files.Open(link); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(link); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(other, link); err != nil {
		t.Fatal(err)
	}

	f, err := files.Open(link)
	if err != nil {
		t.Fatal(err)
	}
	kernelPath := f.KernelPath()
	if !strings.HasPrefix(kernelPath, "/proc/self/fd/") {
		t.Fatalf("KernelPath() = %q, want /proc/self/fd/N", kernelPath)
	}
	got, err := os.Stat(kernelPath)
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.Stat(read)
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(got, want) {
		t.Errorf("%s is not %s, the file read", kernelPath, read)
	}

	execs := attach.NewExecutables(files)
	ex, err := execs.Open(plan.Site{Attachment: &codegen.Attachment{Probe: "uprobe:" + link + ":main"}, Path: link})
	if err != nil {
		t.Fatal(err)
	}
	// The stripped file has no symbols: finding ConnectBlock's shows the
	// executable reads the file read.
	sym, err := ex.Symbol(symbolAddr(t, read, connectBlock))
	if err != nil || sym.Symbol != connectBlock {
		t.Errorf("the executable's symbol at ConnectBlock is %q (%v), want %s", sym.Symbol, err, connectBlock)
	}
}

// TestRunAddressUprobes traces the fixture and python3.11 by address and
// by function and offset at instruction starts, and refuses the middle of
// an instruction before the command runs any of its code; the stripped
// fixture needs --unsafe.
func TestRunAddressUprobes(t *testing.T) {
	testenv.RequireRoot(t)
	testenv.RequireFile(t, python3)
	bin := fixture.Private(t, "bitcoind")
	stripped := fixture.Private(t, "bitcoind-stripped")
	main := elf.Symbol{Name: "main", Value: symbolAddr(t, bin, "main")}
	py := elf.Symbol{Name: "Py_RunMain", Value: symbolAddr(t, python3, "Py_RunMain")}
	// Both functions start with a 2-byte push %r15.
	for _, sym := range []elf.Symbol{main, py} {
		path := bin
		if sym.Name == py.Name {
			path = python3
		}
		if starts := fixture.InstructionStarts(t, path, sym.Value, sym.Value+16); !starts[sym.Value+2] || starts[sym.Value+1] {
			t.Fatalf("%s does not start with a 2-byte instruction", sym.Name)
		}
	}
	fixtureCmd := quietCommand(bin, "--rounds 2 --linger-ms 0")
	strippedCmd := quietCommand(stripped, "--rounds 2 --linger-ms 0")
	pyCmd := python3 + " -c pass"
	for _, tc := range []struct {
		name, src string
		opts      Options
		want      string // the output's end, or the error
	}{
		{"fixture by address", fmt.Sprintf("uprobe:%s:%#x { @ = count(); }", bin, main.Value+2), Options{Command: fixtureCmd}, "@: 1\n"},
		{"fixture by offset", fmt.Sprintf("uprobe:%s:main+2 { @[probe] = count(); }", bin), Options{Command: fixtureCmd},
			fmt.Sprintf("@[uprobe:%s:main+2]: 1\n", bin)},
		{"fixture by decimal address", fmt.Sprintf("uprobe:%s:%d { @[probe] = count(); }", bin, main.Value+2), Options{Command: fixtureCmd},
			fmt.Sprintf("@[uprobe:%s:%d]: 1\n", bin, main.Value+2)},
		{"python3.11 by address", fmt.Sprintf("uprobe:%s:%#x { @ = count(); }", python3, py.Value+2), Options{Command: pyCmd}, "@: 1\n"},
		{"fixture inside an instruction", fmt.Sprintf("uprobe:%s:%#x { @ = count(); }", bin, main.Value+1), Options{Command: fixtureCmd},
			fmt.Sprintf("address %#x is inside an instruction of main (at %#x, 2 bytes long)", main.Value+1, main.Value)},
		{"python3.11 inside an instruction", fmt.Sprintf("uprobe:%s:%#x { @ = count(); }", python3, py.Value+1), Options{Command: pyCmd},
			fmt.Sprintf("address %#x is inside an instruction of Py_RunMain (at %#x, 2 bytes long)", py.Value+1, py.Value)},
		{"stripped", fmt.Sprintf("uprobe:%s:%#x { @ = count(); }", stripped, main.Value+2), Options{Command: strippedCmd},
			"(a stripped file?)"},
		{"stripped with --unsafe", fmt.Sprintf("uprobe:%s:%#x { @ = count(); }", stripped, main.Value+2), Options{Command: strippedCmd, Unsafe: true}, "@: 1\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			tc.opts.Quiet = true
			out, stderr, err := runScript(t, ctx, tc.src, tc.opts)
			if strings.HasSuffix(tc.want, "\n") {
				if err != nil || !strings.HasSuffix(out, tc.want) {
					t.Errorf("output %q, %v\n%s; want it to end with %q", out, err, stderr, tc.want)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// argsSource passes an int by pointer, a char and a struct with a char
// array and an int array to take(), built with debug information.
const argsSource = `struct foo { int a; char b[10]; int c[3]; };
__attribute__((noinline)) int take(int *n, char c, struct foo *f)
{
	__asm__ volatile("" : : "r"(n), "r"(c), "r"(f) : "memory");
	return *n;
}
int main(void)
{
	int n = 13;
	struct foo f = {123, "hello", {1, 2, 3}};
	return take(&n, 'x', &f) - 13;
}
`

// TestRunUprobeArgs reads a uprobe's args, the function's parameters
// named and typed from the file's DWARF, as bpftrace 0.17 does: an int
// through a pointer, a char, and a struct the DWARF defines (its char
// array a string, its int array an array), also through a cast of arg2;
// and with current bpftrace's dot. gotrace refused args in uprobes and
// the cast before.
func TestRunUprobeArgs(t *testing.T) {
	testenv.RequireRoot(t)
	bin := buildC(t, t.TempDir(), "args", argsSource, "-g")
	src := `uprobe:` + bin + `:take {
	printf("c=%c n=%d a=%d b=%s c1=%d\n", args->c, *args->n, args->f->a, args->f->b, args->f->c[1]);
	print(args->f->c);
	printf("%s\n", ((struct foo *)arg2)->b);
	@[args->f->a, args->c] = count();
}`
	want := "c=x n=13 a=123 b=hello c1=2\n" +
		"[1,2,3]\n" +
		"hello\n" +
		"\n\n" +
		"@[123, 120]: 1\n"
	checkBothPrint(t, bin, src, want)

	dotted := `uprobe:` + bin + `:take { printf("%d %s\n", args.f.a, args.f.b); @s = *args.f; }`
	if out := traceCommand(t, bin, dotted, Options{}); out != "123 hello\n\n\n@s: { .a = 123, .b = hello, .c = [1,2,3] }\n" {
		t.Errorf("with dots, output:\n%q", out)
	}
}

// sameArgsSource calls two functions with the same parameters.
const sameArgsSource = `__attribute__((noinline)) long same1(int a, long b) { __asm__ volatile(""); return a + b; }
__attribute__((noinline)) long same2(int a, long b) { __asm__ volatile(""); return a - b; }
int main(void) { return (int)(same1(1, 20) + same2(3, 40) - 21 + 37); }
`

// TestRunUprobeArgsWildcard reads args in a probe whose wildcard matches
// functions with the same parameters, as bpftrace 0.17 does.
func TestRunUprobeArgsWildcard(t *testing.T) {
	testenv.RequireRoot(t)
	bin := buildC(t, t.TempDir(), "same", sameArgsSource, "-g")
	src := `uprobe:` + bin + `:same* { printf("%d %d\n", args->a, args->b); }`
	checkBothPrint(t, bin, src, "1 20\n3 40\n\n\n")
}
