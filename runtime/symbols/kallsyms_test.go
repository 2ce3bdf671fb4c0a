package symbols

import (
	"os"
	"path/filepath"
	"testing"
)

// TestKallsyms reads a kallsyms file with aliases, a hidden symbol and a
// module's, and names addresses and looks names up in it.
func TestKallsyms(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kallsyms")
	text := "ffffffff81000200 T second\n" +
		"ffffffff81000100 t first\n" +
		"ffffffff81000100 T first_alias\n" +
		"0000000000000000 T hidden\n" +
		"ffffffffc0000000 t mod_func\t[mod]\n"
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	syms, err := readKallsyms(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		addr uint64
		name string
		ok   bool
	}{
		{0x1000, "", false},
		{0xffffffff81000100, "first", true},
		{0xffffffff810001ff, "first", true},
		{0xffffffff81000200, "second", true},
		{0xffffffffc0000010, "mod_func", true},
	} {
		s, ok := syms.At(tt.addr)
		if s.Name != tt.name || ok != tt.ok {
			t.Errorf("at(%#x) = %q, %v; want %q, %v", tt.addr, s.Name, ok, tt.name, tt.ok)
		}
	}
	if addr, err := syms.Lookup("second"); addr != 0xffffffff81000200 || err != nil {
		t.Errorf("lookup(second) = %#x, %v", addr, err)
	}
	if _, err := syms.Lookup("hidden"); err == nil {
		t.Error("lookup(hidden) found a symbol at address 0")
	}
}
