package runtime

import (
	"cmp"
	"context"
	"debug/elf"
	"fmt"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gotrace/gotrace/internal/fixture"
	"github.com/gotrace/gotrace/internal/testenv"
)

// TestFormatStack compares formatStack with stacks bpftrace 0.17 printed
// for the -O0 fixture (in a printf, a map key, and perf mode, named and
// not).
func TestFormatStack(t *testing.T) {
	const bin = "/tmp/fxo/bitcoind"
	named := map[uint64][2]string{
		0x55bc2c389d52: {"emit_validation_block_connected+26", bin},
		0x55bc2c38a566: {"tp_block_connected+103", bin},
		0x7faa2724724a: {"__libc_start_call_main+122", "/usr/lib/x86_64-linux-gnu/libc.so.6"},
	}
	lookup := func(addr uint64) (string, string, bool) {
		n, ok := named[addr]
		return n[0], n[1], ok
	}
	none := func(uint64) (string, string, bool) { return "", "", false }
	addrs := []uint64{0x55bc2c389d52, 0x55bc2c38a566, 0x7faa2724724a, 0, 0}
	for _, tt := range []struct {
		name   string
		addrs  []uint64
		lookup func(uint64) (string, string, bool)
		perf   bool
		indent string
		want   string
	}{
		{"value", addrs, lookup, false, valueStackIndent,
			"\n        emit_validation_block_connected+26\n        tp_block_connected+103\n        __libc_start_call_main+122\n"},
		{"key unnamed", addrs[:2], none, false, keyStackIndent,
			"\n    0x55bc2c389d52\n    0x55bc2c38a566\n"},
		{"perf", addrs, lookup, true, keyStackIndent,
			"\n\t55bc2c389d52 emit_validation_block_connected+26 (/tmp/fxo/bitcoind)\n\t55bc2c38a566 tp_block_connected+103 (/tmp/fxo/bitcoind)\n\t7faa2724724a __libc_start_call_main+122 (/usr/lib/x86_64-linux-gnu/libc.so.6)\n"},
		{"perf unnamed", addrs[:1], none, true, valueStackIndent,
			"\n\t55bc2c389d52 0x55bc2c389d52 ([unknown])\n"},
		{"empty", nil, none, false, valueStackIndent, "\n"},
	} {
		if got := formatStack(tt.addrs, tt.lookup, tt.perf, tt.indent); got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, got, tt.want)
		}
	}
}

// TestRunUstack traces the -O0 fixture, which keeps frame pointers: a
// ustack printed while it runs names the whole call chain down to libc,
// and the map key's stack, printed after it exited, is addresses.
func TestRunUstack(t *testing.T) {
	testenv.RequireRoot(t)
	bin := fixture.Private(t, "bitcoind-O0")
	src := fmt.Sprintf(`usdt:%s:validation:block_connected { printf("%%s|\n", ustack); @[ustack(2)] = count(); }`, bin)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, stderr, err := runScript(t, ctx, src, Options{Command: quietCommand(bin, "--rounds 1 --blocks 2 --linger-ms 500"), Quiet: true})
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	stack, maps, ok := strings.Cut(out, "|\n")
	if !ok {
		t.Fatalf("output %q has no stack", out)
	}
	var names []string
	for _, line := range strings.Split(strings.Trim(stack, "\n"), "\n") {
		name, ok := strings.CutPrefix(line, "        ")
		sym, _, _ := strings.Cut(name, "+")
		if !ok || !strings.Contains(name, "+") {
			t.Errorf("frame %q is not an indented sym+off", line)
		}
		names = append(names, sym)
	}
	want := []string{"emit_validation_block_connected", "tp_block_connected", "CChainState::ConnectBlock(CBlock const&, BlockValidationState&, CBlockIndex*, CCoinsViewCache&, CChainParams const&, bool)", "phase_blocks", "run", "main"}
	if len(names) < len(want) || strings.Join(names[:len(want)], ";") != strings.Join(want, ";") {
		t.Errorf("frames %q, want them to start with %q", names, want)
	}
	if !strings.Contains(maps, "@[\n    0x") || !strings.Contains(maps, "\n]: 2\n") {
		t.Errorf("maps %q: want one stack of addresses counted twice", maps)
	}
}

// TestRunUstackMatchesBpftrace runs ustack in printf, print, map keys and
// values under gotrace and bpftrace, as text and as JSON: the outputs
// must be the same once addresses (ASLR) and the fixture's path are
// masked.
func TestRunUstackMatchesBpftrace(t *testing.T) {
	bpftrace := testenv.RequireBpftrace(t)
	bin := fixture.Private(t, "bitcoind-O0")
	src := fmt.Sprintf(`usdt:%s:validation:block_connected {
  printf("%%s|\n", ustack);
  printf("%%s|\n", ustack(perf, 3));
  print(ustack(1));
  @[ustack] = count();
  @p[ustack(perf, 2), 7] = count();
  @v = ustack(3);
}`, bin)
	args := "--rounds 1 --blocks 2 --linger-ms 1000 --output /dev/null"
	mask := regexp.MustCompile(`[0-9a-f]{12}|` + regexp.QuoteMeta(bin))
	for _, format := range []string{"text", "json"} {
		t.Run(format, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			out, stderr, err := runScript(t, ctx, src, Options{Command: bin + " " + args, Format: format})
			if err != nil {
				t.Fatalf("%v\n%s", err, stderr)
			}
			ref, err := exec.CommandContext(ctx, bpftrace, "-f", format, "-e", src, "-c", bin+" "+args).Output()
			if err != nil {
				t.Fatalf("bpftrace: %v", err)
			}
			got, want := mask.ReplaceAllString(out, "X"), mask.ReplaceAllString(string(ref), "X")
			if got != want {
				t.Errorf("gotrace printed\n%s\nbpftrace printed\n%s", got, want)
			}
			if !strings.Contains(got, "tp_block_connected+") {
				t.Errorf("no named frame in\n%s", got)
			}
		})
	}
}

// TestSymbolRank checks which of the names of one address a stack prints:
// libc's pthread_create has a local __GI___pthread_create and
// __pthread_create_2_1 and a versioned copy in its debug file's symbol
// table, and bpftrace prints pthread_create.
func TestSymbolRank(t *testing.T) {
	sym := func(name string, bind elf.SymBind, size uint64) elf.Symbol {
		return elf.Symbol{Name: name, Info: elf.ST_INFO(bind, elf.STT_FUNC), Size: size, Value: 0x89380}
	}
	syms := []elf.Symbol{
		sym("pthread_create", elf.STB_GLOBAL, 0x60),
		sym("__GI___pthread_create", elf.STB_LOCAL, 0x60),
		sym("pthread_create@@GLIBC_2.34", elf.STB_GLOBAL, 0x60),
		sym("__pthread_create_2_1", elf.STB_LOCAL, 0x60),
		sym("pthread_create_alias", elf.STB_WEAK, 0x60),
		sym("zero_size", elf.STB_GLOBAL, 0),
	}
	best := slices.MaxFunc(syms, func(a, b elf.Symbol) int { return cmp.Compare(symbolRank(a), symbolRank(b)) })
	if best.Name != "pthread_create" {
		t.Errorf("the name printed is %s, want pthread_create", best.Name)
	}
	if symbolRank(sym("__x", elf.STB_LOCAL, 1)) >= symbolRank(sym("x", elf.STB_LOCAL, 1)) {
		t.Errorf("a name with more leading underscores ranks as high")
	}
}
