package symbols

import (
	"cmp"
	"debug/elf"
	"slices"
	"testing"
)

// TestFormatStack compares FormatStack with stacks bpftrace 0.17 printed
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
		{"value", addrs, lookup, false, ValueIndent,
			"\n        emit_validation_block_connected+26\n        tp_block_connected+103\n        __libc_start_call_main+122\n"},
		{"key unnamed", addrs[:2], none, false, KeyIndent,
			"\n    0x55bc2c389d52\n    0x55bc2c38a566\n"},
		{"perf", addrs, lookup, true, KeyIndent,
			"\n\t55bc2c389d52 emit_validation_block_connected+26 (/tmp/fxo/bitcoind)\n\t55bc2c38a566 tp_block_connected+103 (/tmp/fxo/bitcoind)\n\t7faa2724724a __libc_start_call_main+122 (/usr/lib/x86_64-linux-gnu/libc.so.6)\n"},
		{"perf unnamed", addrs[:1], none, true, ValueIndent,
			"\n\t55bc2c389d52 0x55bc2c389d52 ([unknown])\n"},
		{"empty", nil, none, false, ValueIndent, "\n"},
	} {
		if got := FormatStack(tt.addrs, tt.lookup, tt.perf, tt.indent); got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, got, tt.want)
		}
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
