package usdt

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
)

// ldCacheFile is the dynamic loader's cache of the libraries it finds by
// name, which ldconfig writes.
const ldCacheFile = "/etc/ld.so.cache"

// The cache's current format (glibc 2.32 and later write only this one):
// a header, entries, then the strings the entries point into, by offsets
// from the start of the header.
const (
	ldCacheMagic     = "glibc-ld.so.cache1.1"
	ldCacheHeaderLen = 48
	ldCacheEntryLen  = 24
	// The flags of an x86-64 library for glibc: FLAG_ELF_LIBC6 in the
	// type byte, FLAG_X8664_LIB64 in the required byte.
	ldCacheFlagsMask   = 0xffff
	ldCacheFlagsX86_64 = 0x0303
)

// ldCacheEntry is one library of the loader's cache: its soname, such as
// libc.so.6, and its path.
type ldCacheEntry struct {
	name, path string
}

// readLdCache returns the x86-64 libraries of the loader's cache, in its
// order.
func readLdCache() ([]ldCacheEntry, error) {
	data, err := os.ReadFile(ldCacheFile)
	if err != nil {
		return nil, fmt.Errorf("read loader cache: %w", err)
	}
	entries, err := parseLdCache(data)
	if err != nil {
		return nil, fmt.Errorf("read loader cache %s: %w", ldCacheFile, err)
	}
	return entries, nil
}

// parseLdCache returns the x86-64 libraries of an ld.so.cache file in the
// current format, in the file's order.
func parseLdCache(data []byte) ([]ldCacheEntry, error) {
	if !bytes.HasPrefix(data, []byte(ldCacheMagic)) {
		return nil, errors.New("not a " + ldCacheMagic + " file")
	}
	if len(data) < ldCacheHeaderLen {
		return nil, errors.New("truncated header")
	}
	n := uint64(binary.LittleEndian.Uint32(data[20:]))
	if ldCacheHeaderLen+n*ldCacheEntryLen > uint64(len(data)) {
		return nil, fmt.Errorf("%d entries do not fit in %d bytes", n, len(data))
	}
	var entries []ldCacheEntry
	for i := range n {
		e := data[ldCacheHeaderLen+i*ldCacheEntryLen:]
		if binary.LittleEndian.Uint32(e)&ldCacheFlagsMask != ldCacheFlagsX86_64 {
			continue
		}
		name, err := cacheString(data, binary.LittleEndian.Uint32(e[4:]))
		if err != nil {
			return nil, fmt.Errorf("entry %d: %w", i, err)
		}
		path, err := cacheString(data, binary.LittleEndian.Uint32(e[8:]))
		if err != nil {
			return nil, fmt.Errorf("entry %d: %w", i, err)
		}
		entries = append(entries, ldCacheEntry{name: name, path: path})
	}
	return entries, nil
}

// cacheString returns the NUL-terminated string at offset off of data.
func cacheString(data []byte, off uint32) (string, error) {
	if uint64(off) >= uint64(len(data)) {
		return "", fmt.Errorf("string offset %d is past the end", off)
	}
	s := data[off:]
	if i := bytes.IndexByte(s, 0); i >= 0 {
		s = s[:i]
	}
	return string(s), nil
}
