package plan

import (
	"debug/elf"
	"slices"
	"testing"

	"github.com/gotrace/gotrace/internal/fixture"
	"github.com/gotrace/gotrace/usdt"
)

// connectBlock is the fixture's uprobe target: bitcoind's old mangled
// CChainState::ConnectBlock.
const connectBlock = "_ZN11CChainState12ConnectBlockERK6CBlockR20BlockValidationStateP11CBlockIndexR15CCoinsViewCacheRK12CChainParamsb"

func TestMatchSymbols(t *testing.T) {
	bin := fixture.Build(t, "bitcoind")
	syms := plainFunctions(t, bin)
	for _, tc := range []struct {
		pattern string
		want    []string
	}{
		{connectBlock, []string{connectBlock}},
		{"CChainState::ConnectBlock(CBlock const&, BlockValidationState&, CBlockIndex*, CCoinsViewCache&, CChainParams const&, bool)", []string{connectBlock}},
		{"CChainState::Connect*", []string{connectBlock}},
		{"main", []string{"main"}},
		{"no_such_function", nil},
	} {
		if got := matchSymbols(syms, tc.pattern); !slices.Equal(got, tc.want) {
			t.Errorf("matchSymbols(%q) = %q, want %q", tc.pattern, got, tc.want)
		}
	}
	stripped := fixture.Build(t, "bitcoind-stripped")
	syms = plainFunctions(t, stripped)
	if got := matchSymbols(syms, connectBlock); len(got) != 0 {
		t.Errorf("the stripped fixture has %q", got)
	}
}

func TestFileOffset(t *testing.T) {
	bin := fixture.Build(t, "bitcoind")
	addr := functionSymbol(t, bin, connectBlock).Value
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	uf, err := usdt.OpenFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer uf.Close()
	off, err := fileOffset(uf, addr)
	if err != nil {
		t.Fatal(err)
	}
	text := f.Section(".text")
	if want := addr - text.Addr + text.Offset; off != want {
		t.Errorf("fileOffset(%#x) = %#x, want %#x", addr, off, want)
	}
	if _, err := fileOffset(uf, 1<<40); err == nil {
		t.Error("an address outside every segment gave no error")
	}
}
