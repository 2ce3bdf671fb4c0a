package unwind

import (
	"debug/elf"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// writeELF writes a minimal x86-64 ELF file whose one FDE has program.
func writeELF(t *testing.T, path string, program []byte) {
	t.Helper()
	b := minimalELFBytes(t, elf.EM_X86_64, ehFrame(x86CIE, fdeBegin, fdeSize, program))
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestCache checks that a Cache builds a file's table once, whatever the
// path to it, and again once the file changes; that it keeps failures;
// and that concurrent callers share one build.
func TestCache(t *testing.T) {
	dir := t.TempDir()
	lib, link := filepath.Join(dir, "lib.so"), filepath.Join(dir, "link.so")
	writeELF(t, lib, nil)
	if err := os.Link(lib, link); err != nil {
		t.Fatal(err)
	}
	var c Cache
	open := func(path string) *Table {
		t.Helper()
		table, err := c.Open(path)
		if err != nil {
			t.Fatalf("Open(%s): %v", path, err)
		}
		return table
	}
	first := open(lib)
	if again := open(lib); again != first {
		t.Error("a second Open built the table again")
	}
	if linked := open(link); linked != first {
		t.Error("a hard link to the file built the table again")
	}
	if c.Len() != 1 {
		t.Errorf("Len = %d after one file, want 1", c.Len())
	}

	// Rewritten in place: same inode, another size.
	writeELF(t, lib, []byte{opDefCFAOffset, 16})
	rewritten := open(lib)
	if rule, _ := rewritten.Lookup(fdeBegin); rewritten == first || rule != sp16 {
		t.Errorf("after a rewrite: a new table %v, rule %+v; want a new table with %+v", rewritten != first, rule, sp16)
	}
	// Touched: same contents, another modification time.
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(lib, later, later); err != nil {
		t.Fatal(err)
	}
	if touched := open(lib); touched == rewritten {
		t.Error("a new modification time kept the old table")
	}

	// A failure is kept, and each error names the caller's path.
	bad := filepath.Join(dir, "bad.so")
	if err := os.WriteFile(bad, []byte("not ELF"), 0o644); err != nil {
		t.Fatal(err)
	}
	n := c.Len()
	for range 2 {
		if _, err := c.Open(bad); err == nil || !strings.HasPrefix(err.Error(), "read unwind table of "+bad+": ") {
			t.Errorf("Open(%s) = %v, want an error naming it", bad, err)
		}
	}
	if c.Len() != n+1 {
		t.Errorf("Len = %d after a bad file opened twice, want %d", c.Len(), n+1)
	}
	missing := filepath.Join(dir, "missing.so")
	if _, err := c.Open(missing); err == nil || !strings.Contains(err.Error(), "read unwind table of "+missing) {
		t.Errorf("Open(%s) = %v, want an error naming it", missing, err)
	}

	// Concurrent callers for a new file share one table.
	fresh := filepath.Join(dir, "fresh.so")
	writeELF(t, fresh, []byte{opDefCFAOffset, 32})
	tables := make([]*Table, 8)
	var wg sync.WaitGroup
	for i := range tables {
		wg.Go(func() {
			table, err := c.Open(fresh)
			if err != nil {
				t.Errorf("Open(%s): %v", fresh, err)
			}
			tables[i] = table
		})
	}
	wg.Wait()
	for i, table := range tables {
		if table != tables[0] {
			t.Errorf("caller %d got another table than caller 0", i)
		}
	}
}

// TestOpen checks the package's uncached Open and its errors.
func TestOpen(t *testing.T) {
	dir := t.TempDir()
	lib := filepath.Join(dir, "lib.so")
	writeELF(t, lib, nil)
	table, err := Open(lib)
	if err != nil {
		t.Fatalf("Open(%s): %v", lib, err)
	}
	if rule, ok := table.Lookup(fdeBegin); !ok || rule != sp8 {
		t.Errorf("Lookup(%#x) = %+v, %v; want %+v, true", fdeBegin, rule, ok, sp8)
	}
	for _, path := range []string{filepath.Join(dir, "missing.so"), dir} {
		if _, err := Open(path); err == nil || !strings.HasPrefix(err.Error(), "read unwind table of "+path+": ") {
			t.Errorf("Open(%s) = %v, want an error naming it", path, err)
		}
	}
}
