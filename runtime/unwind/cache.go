package unwind

import (
	"debug/elf"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"syscall"
)

// Cache builds each file's table once per run: the unwinder opens every
// executable mapping of every traced process, and most of them are the
// same few files (libc, libstdc++, the program). A file is known by its
// device, inode, size and modification time, read from the opened file,
// so two paths to one file (a hard link, /proc/PID/root/...) share a
// table and a file rewritten in place gets a new one. Failures are kept
// too: a file without CFI is not read again for the next process. Entries
// are never dropped; a run maps a bounded set of files, and a table is
// about 16 bytes a row (2 MB for bitcoind). A Cache is safe for concurrent
// use; its zero value is empty and ready.
type Cache struct {
	mu     sync.Mutex
	tables map[fileKey]*cacheEntry
}

// fileKey is what tells one file from another, and from its own older
// contents.
type fileKey struct {
	dev, ino uint64
	size     int64
	mtimeNs  int64
}

// cacheEntry is one file's table, built once: sync.Once lets concurrent
// callers for the same file wait for one build without holding the
// Cache's lock while it runs.
type cacheEntry struct {
	once  sync.Once
	table *Table
	err   error
}

// Open returns the table of the ELF file at path, built on the first call
// for that file. Callers share the table: they must not change it.
func (c *Cache) Open(path string) (*Table, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read unwind table of %s: %w", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("read unwind table of %s: %w", path, err)
	}
	key, ok := keyOf(fi)
	if !ok {
		return buildFile(path, f)
	}
	c.mu.Lock()
	if c.tables == nil {
		c.tables = map[fileKey]*cacheEntry{}
	}
	e := c.tables[key]
	if e == nil {
		e = &cacheEntry{}
		c.tables[key] = e
	}
	c.mu.Unlock()
	e.once.Do(func() { e.table, e.err = buildELF(f) })
	if e.err != nil {
		// The error kept has no path: the first caller's may not be the
		// one this caller knows the file by.
		return nil, fmt.Errorf("read unwind table of %s: %w", path, e.err)
	}
	return e.table, nil
}

// Len returns how many files the cache holds a table or an error for.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.tables)
}

// keyOf returns the key of a file from its stat, if the system gives
// device and inode (Linux always does).
func keyOf(fi fs.FileInfo) (fileKey, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileKey{}, false
	}
	return fileKey{
		dev: uint64(st.Dev), ino: uint64(st.Ino),
		size: fi.Size(), mtimeNs: fi.ModTime().UnixNano(),
	}, true
}

// buildELF builds the table of the ELF file f.
func buildELF(f *os.File) (*Table, error) {
	ef, err := elf.NewFile(f)
	if err != nil {
		return nil, err
	}
	return Build(ef)
}

// buildFile builds the table of f, opened from path, its errors naming
// path.
func buildFile(path string, f *os.File) (*Table, error) {
	t, err := buildELF(f)
	if err != nil {
		return nil, fmt.Errorf("read unwind table of %s: %w", path, err)
	}
	return t, nil
}
