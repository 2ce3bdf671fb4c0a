package debuginfo

// This file finds the debug information of a file that keeps it in a
// file of its own, as distributions ship it (Debian's -dbgsym packages
// under /usr/lib/debug), the way gdb and libdw look for it.

import (
	"bytes"
	"debug/elf"
	"encoding/hex"
	"path/filepath"
)

// debugRoot is where distributions install separate debug information.
const debugRoot = "/usr/lib/debug"

// separateDebugFiles returns the files that may hold the DWARF of the
// ELF file f at path, in the order gdb tries them: by build id under
// /usr/lib/debug/.build-id, then by the .gnu_debuglink name beside the
// file, in its .debug directory, and under /usr/lib/debug.
func separateDebugFiles(f *elf.File, path string) []string {
	var files []string
	if id := buildID(f); len(id) > 1 {
		h := hex.EncodeToString(id)
		files = append(files, filepath.Join(debugRoot, ".build-id", h[:2], h[2:]+".debug"))
	}
	if name := debugLink(f); name != "" {
		dir := filepath.Dir(path)
		if abs, err := filepath.Abs(dir); err == nil {
			dir = abs
		}
		files = append(files,
			filepath.Join(dir, name),
			filepath.Join(dir, ".debug", name),
			filepath.Join(debugRoot, dir, name))
	}
	return files
}

// buildID returns the GNU build id of f's .note.gnu.build-id, nil if it
// has none.
func buildID(f *elf.File) []byte {
	s := f.Section(".note.gnu.build-id")
	if s == nil {
		return nil
	}
	data, err := s.Data()
	if err != nil || len(data) < 16 {
		return nil
	}
	// namesz, descsz, type, then the name "GNU\0" and the id.
	order := f.ByteOrder
	namesz, descsz := order.Uint32(data[0:4]), order.Uint32(data[4:8])
	if order.Uint32(data[8:12]) != 3 || namesz != 4 || uint64(16)+uint64(descsz) > uint64(len(data)) || !bytes.Equal(data[12:16], []byte("GNU\x00")) {
		return nil
	}
	return data[16 : 16+descsz]
}

// debugLink returns the file name of f's .gnu_debuglink, "" if it has
// none: a NUL-terminated name, then padding and a CRC.
func debugLink(f *elf.File) string {
	s := f.Section(".gnu_debuglink")
	if s == nil {
		return ""
	}
	data, err := s.Data()
	if err != nil {
		return ""
	}
	name, _, found := bytes.Cut(data, []byte{0})
	if !found || len(name) == 0 || bytes.ContainsRune(name, '/') {
		return ""
	}
	return string(name)
}
