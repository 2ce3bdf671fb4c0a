package symbols

import (
	"cmp"
	"debug/elf"
	"maps"
	"slices"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/gotrace/gotrace/usdt"
)

// DefaultCacheBytes bounds the symbol tables a Symbolizer keeps of files
// no one else holds (see SetCacheLimit): 64 MiB, some ten times
// bitcoind's function symbols, so that the files of the processes a
// trace names stay while those of processes long gone make room.
const DefaultCacheBytes = 64 << 20

// symbolCache holds the function symbols of files by path, those it read
// itself within a bound on their bytes: a system-wide trace meets a file
// for every short-lived program, and a profile runs for hours.
type symbolCache struct {
	// limit bounds bytes, the sum of the entries' bytes that are not
	// shared.
	limit, bytes int
	// clock counts uses; an entry's used is the clock of its last use.
	clock   uint64
	entries map[string]*cachedSymbols
	// evicted is the identity of each file dropped for room, by path: it
	// is read again only if its path still leads to that file.
	evicted map[string]fileID
}

// cachedSymbols is one file's entry: its symbols (nil when it has none
// or could not be read) and what the bound needs.
type cachedSymbols struct {
	es    *elfSymbols
	bytes int
	used  uint64
	id    fileID
	// shared says the file is held open for the trace (usdt.Files):
	// its tables are kept anyway, so the bound neither counts nor drops
	// them.
	shared bool
}

// fileID tells a file from another one later at the same path.
type fileID struct{ dev, ino uint64 }

// statID returns the identity of the file at path.
func statID(path string) (fileID, bool) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return fileID{}, false
	}
	return fileID{dev: st.Dev, ino: st.Ino}, true
}

// SetCacheLimit bounds the bytes of the symbol tables kept of files that
// the trace itself does not hold open (its probes' files are always
// kept): past it, those used least recently (by a frame named, a
// capture or a mapping record) are dropped, and read again when a frame
// of theirs is named and their path still leads to the same file. The
// file used last is kept even when it alone is larger. 0 restores
// DefaultCacheBytes.
func (s *Symbolizer) SetCacheLimit(bytes int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if bytes <= 0 {
		bytes = DefaultCacheBytes
	}
	s.cache.limit = bytes
	s.cache.trim()
}

// CacheBytes returns the bytes of the symbol tables kept that count
// toward SetCacheLimit's bound.
func (s *Symbolizer) CacheBytes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cache.bytes
}

// file returns the function symbols of the file at path, read once and
// kept within the bound; nil when it has none. The caller holds s.mu.
func (s *Symbolizer) file(path string) *elfSymbols {
	c := &s.cache
	c.clock++
	if e, ok := c.entries[path]; ok {
		e.used = c.clock
		return e.es
	}
	e := &cachedSymbols{used: c.clock}
	e.id, _ = statID(path)
	if old, ok := c.evicted[path]; ok && old != e.id {
		// Another file now has the path: its names would be wrong.
		e.id = old
	} else {
		f, shared := s.files.Cached(path)
		if !shared {
			var err error
			if f, err = usdt.OpenFile(path); err == nil {
				// What is kept is copied out: the file and the tables
				// read to make them go.
				defer f.Close()
			}
		}
		e.shared = shared
		if f != nil {
			e.es = readSymbols(f)
		}
	}
	e.bytes = e.es.size() + len(path) + int(unsafe.Sizeof(cachedSymbols{}))
	if c.entries == nil {
		c.entries = map[string]*cachedSymbols{}
	}
	c.entries[path] = e
	delete(c.evicted, path)
	if !e.shared {
		c.bytes += e.bytes
		c.trim()
	}
	return e.es
}

// readSymbols reads the function symbols of f sorted by address, with
// its loadable segments; nil when it has none.
func readSymbols(f *usdt.File) *elfSymbols {
	syms, err := f.PlainFunctions()
	if err != nil {
		return nil
	}
	es := &elfSymbols{loads: f.Loads(), syms: slices.Clone(syms)}
	slices.SortStableFunc(es.syms, func(a, b elf.Symbol) int {
		if a.Value != b.Value {
			return cmp.Compare(a.Value, b.Value)
		}
		return cmp.Compare(symbolRank(a), symbolRank(b))
	})
	return es
}

// size is about how many bytes es keeps: its symbols, their names and
// its segments.
func (es *elfSymbols) size() int {
	if es == nil {
		return 0
	}
	n := len(es.syms)*int(unsafe.Sizeof(elf.Symbol{})) + len(es.loads)*int(unsafe.Sizeof(elf.ProgHeader{}))
	for _, sym := range es.syms {
		n += len(sym.Name) + len(sym.Version) + len(sym.Library)
	}
	return n
}

// trim drops the entries used least recently, but the last one used,
// until the bytes counted are within the limit.
func (c *symbolCache) trim() {
	if c.limit == 0 {
		c.limit = DefaultCacheBytes
	}
	if c.bytes <= c.limit {
		return
	}
	paths := slices.Collect(maps.Keys(c.entries))
	slices.SortFunc(paths, func(a, b string) int { return cmp.Compare(c.entries[a].used, c.entries[b].used) })
	for _, path := range paths {
		e := c.entries[path]
		if c.bytes <= c.limit || e.used == c.clock {
			break
		}
		if e.shared {
			continue
		}
		delete(c.entries, path)
		c.bytes -= e.bytes
		if c.evicted == nil {
			c.evicted = map[string]fileID{}
		}
		c.evicted[path] = e.id
	}
}
