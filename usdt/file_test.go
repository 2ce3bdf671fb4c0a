package usdt

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// claimed is the size the crafted files below give a section or a segment:
// far more than they hold.
const claimed = 256 << 20

// setSection sets the offset (when off is not 0) and the size of the
// section called name in the ELF file b.
func setSection(t *testing.T, b []byte, name string, off, size uint64) {
	t.Helper()
	f, err := elf.NewFile(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	shoff := binary.LittleEndian.Uint64(b[0x28:])
	for i, s := range f.Sections {
		if s.Name != name {
			continue
		}
		hdr := b[shoff+uint64(i)*64:]
		if off != 0 {
			binary.LittleEndian.PutUint64(hdr[0x18:], off)
		}
		binary.LittleEndian.PutUint64(hdr[0x20:], size)
		return
	}
	t.Fatalf("no section %s", name)
}

// TestBoundedReads reads files whose notes, symbol tables and interpreter
// claim 256 MB, in a file of a few KB and in a sparse file of 256 MB that
// holds them as zeros, and checks that what File allocates stays far
// below what they claim: a claimed size is checked against the file, and
// the notes are read as a stream.
func TestBoundedReads(t *testing.T) {
	notes := noteBytes(0x401010, 0x402000, 0, "p", "n", "8@%rdi")
	base := testELF{notes: notes, baseAddr: 0x402000, symbols: map[string]uint64{"sym": 0x403010}}.bytes()
	probes := func(f *File) error { _, err := f.Probes(); return err }
	functions := func(f *File) error { _, err := f.FunctionSymbols(); return err }
	tests := []struct {
		name string
		// craft changes a copy of base; sparse, when not 0, is the size
		// the file is extended to with a hole.
		craft  func(b []byte) []byte
		sparse int64
		read   func(f *File) error
		// msg is what the error says, "" for none.
		msg string
	}{
		{"notes past the end", func(b []byte) []byte {
			setSection(t, b, ".note.stapsdt", 0, claimed)
			return b
		}, 0, probes, "runs past the end of the file"},
		{"notes in a sparse file", func(b []byte) []byte {
			// The notes move to the end, where the hole follows them:
			// zeros read as empty notes of no owner.
			setSection(t, b, ".note.stapsdt", uint64(len(b)), uint64(len(notes))+claimed/12*12)
			return append(b, notes...)
		}, claimed + 1<<20, probes, ""},
		{"symbol table past the end", func(b []byte) []byte {
			setSection(t, b, ".symtab", 0, claimed)
			return b
		}, 0, functions, "runs past the end of the file"},
		{"string table past the end", func(b []byte) []byte {
			setSection(t, b, ".strtab", 0, claimed)
			return b
		}, 0, functions, "runs past the end of the file"},
		{"interpreter", func(b []byte) []byte {
			// The first segment becomes a PT_INTERP of 256 MB.
			phdr := b[64:]
			binary.LittleEndian.PutUint32(phdr[0:], uint32(elf.PT_INTERP))
			binary.LittleEndian.PutUint64(phdr[0x20:], claimed)
			return b
		}, claimed + 1<<20, func(f *File) error { _, err := f.Interpreter(); return err }, "longer than 4096 bytes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := writeTemp(t, "crafted", tc.craft(bytes.Clone(base)))
			if tc.sparse != 0 {
				if err := os.Truncate(path, tc.sparse); err != nil {
					t.Fatal(err)
				}
			}
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			f, err := OpenFile(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			err = tc.read(f)
			runtime.ReadMemStats(&after)
			switch {
			case tc.msg == "" && err != nil:
				t.Errorf("read: %v", err)
			case tc.msg != "" && (err == nil || !strings.Contains(err.Error(), tc.msg)):
				t.Errorf("read = %v, want an error saying %q", err, tc.msg)
			}
			if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
				t.Errorf("reading allocated %d bytes, more than 1 MiB", n)
			}
		})
	}
}

// TestNotesInSparseFile checks that the probes before a long run of zeros
// in the note section are read.
func TestNotesInSparseFile(t *testing.T) {
	notes := noteBytes(0x401010, 0, 0, "p", "n", "8@%rdi")
	b := testELF{notes: notes}.bytes()
	setSection(t, b, ".note.stapsdt", uint64(len(b)), uint64(len(notes))+12<<10)
	path := writeTemp(t, "sparse", append(b, notes...))
	if err := os.Truncate(path, int64(len(b))+2<<20); err != nil {
		t.Fatal(err)
	}
	probes, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(probes) != 1 || probes[0].Name != "n" || len(probes[0].Locations) != 1 {
		t.Errorf("probes = %+v, want n with one location", probes)
	}
}

// TestOffset checks the one conversion of addresses to file offsets
// against testELF's segments: code only in the executable segment's file
// bytes, data anywhere in a segment's memory image.
func TestOffset(t *testing.T) {
	f, err := newFile(bytes.NewReader(testELF{}.bytes()), 0x2100, "test")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		addr uint64
		exec bool
		off  uint64
		ok   bool
	}{
		{textAddr, true, textOff, true},
		{textAddr + 0xff, true, textOff + 0xff, true},
		{textAddr + 0x100, true, 0, false},
		{dataAddr, true, 0, false},
		{dataAddr + 0x10, false, dataOff + 0x10, true},
		{dataAddr + 0x1ff, false, dataOff + 0x1ff, true},
		{dataAddr + 0x200, false, 0, false},
		{1 << 63, false, 0, false},
		{^uint64(0), true, 0, false},
	} {
		off, ok := f.Offset(tc.addr, tc.exec)
		if off != tc.off || ok != tc.ok {
			t.Errorf("Offset(%#x, %v) = %#x, %v; want %#x, %v", tc.addr, tc.exec, off, ok, tc.off, tc.ok)
		}
		if tc.ok {
			if addr, ok := f.Address(off); tc.exec && (!ok || addr != tc.addr) {
				t.Errorf("Address(%#x) = %#x, %v; want %#x", off, addr, ok, tc.addr)
			}
		}
	}
}

// TestOpenFileFIFO checks that OpenFile refuses a FIFO without opening
// it, which would block until a writer came.
func TestOpenFileFIFO(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fifo")
	if err := unix.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenFile(path); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("OpenFile(FIFO) = %v, want an error saying it is not a regular file", err)
	}
}

// FuzzFile reads every part of a File made of arbitrary bytes: none may
// panic, and what it reads lies within the file.
func FuzzFile(f *testing.F) {
	f.Add(testELF{notes: noteBytes(0x401010, 0x402000, 0, "p", "n", "8@sym(%rip)"), baseAddr: 0x402000,
		symbols: map[string]uint64{"sym": 0x403010}}.bytes())
	f.Add(testELF{}.bytes())
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := newFile(bytes.NewReader(data), int64(len(data)), "fuzz")
		if err != nil {
			return
		}
		file.Probes()
		file.FunctionSymbols()
		file.PlainFunctions()
		file.ObjectSymbol("sym")
		file.Interpreter()
		file.Libraries()
		file.DebugFile()
		for _, addr := range []uint64{textAddr, dataAddr, 0, ^uint64(0)} {
			if code, err := file.ReadCode(addr, 64); err == nil && len(code) > len(data) {
				t.Errorf("ReadCode(%#x) read %d bytes of a %d-byte file", addr, len(code), len(data))
			}
			if off, ok := file.Offset(addr, false); ok {
				file.Address(off)
			}
		}
	})
}

// TestSetOpenRights checks that every ELF file is opened through the
// rights SetOpenRights sets (an elevated gotrace's user's): a refusal
// there is the answer of OpenFile, Files.Open and a target's lookup, and
// nothing opens the file another way.
func TestSetOpenRights(t *testing.T) {
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { SetOpenRights(func(open func() error) error { return open() }) })
	opened := 0
	SetOpenRights(func(open func() error) error {
		opened++
		return open()
	})
	f, err := OpenFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if opened != 1 {
		t.Errorf("OpenFile opened through the rights %d times, want 1", opened)
	}

	t.Chdir(filepath.Dir(bin))
	if got := FindTarget(filepath.Base(bin), nil, nil); got != filepath.Base(bin) {
		t.Errorf("FindTarget(%s) = %q, want the file in the working directory", filepath.Base(bin), got)
	}

	refused := errors.New("refused with the user's rights")
	SetOpenRights(func(func() error) error { return refused })
	if _, err := OpenFile(bin); !errors.Is(err, refused) {
		t.Errorf("OpenFile = %v, want %v", err, refused)
	}
	var files Files
	if _, err := files.Open(bin); !errors.Is(err, refused) {
		t.Errorf("Files.Open = %v, want %v", err, refused)
	}
	if got := FindTarget(filepath.Base(bin), nil, nil); got != "" {
		t.Errorf("FindTarget found %s through refused rights", got)
	}
}
