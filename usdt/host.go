package usdt

import (
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
)

// Host answers what gotrace's front end asks of the machine (lang.Host,
// which it implements without importing lang): the file a bare target
// names, and the data symbols uaddr() reads. The zero Host finds targets
// as bpftrace 0.17 does without -p or -c.
type Host struct {
	// PID is the -p process: for a library name, the objects it maps
	// come first.
	PID int
	// Loaded returns the objects a -c command loads at start-up, looked
	// at for a library name the loader's cache does not have; nil without
	// -c. It is called at most once, when a library name needs it.
	Loaded func() []string

	once   sync.Once
	loaded []string
}

// FindTarget returns the file a bare target name (no '/', no wildcard) of
// a usdt, uprobe or uretprobe attach point stands for (see the function
// FindTarget), or an error that says where it was looked for.
func (h *Host) FindTarget(name string) (string, error) {
	var mapped, loaded []string
	if strings.HasPrefix(name, "lib") {
		if h.PID != 0 {
			// When the process's objects cannot be read, the other
			// places still count.
			mapped, _ = ProcessPaths(h.PID)
		}
		if h.Loaded != nil {
			h.once.Do(func() { h.loaded = h.Loaded() })
			loaded = h.loaded
		}
	}
	if path := FindTarget(name, mapped, loaded); path != "" {
		return path, nil
	}
	if strings.HasPrefix(name, "lib") {
		return "", fmt.Errorf("looked for as %s.so* in the loader's cache (ldconfig -p) and among the objects of a -p process or -c command, then in the working directory and $PATH; a library is named without .so (libc)", name)
	}
	return "", errors.New("looked for in the working directory and $PATH; a library is named by lib and its name without .so (libc)")
}

// ObjectSymbol returns ObjectSymbol(path, name).
func (h *Host) ObjectSymbol(path, name string) (addr, size uint64, err error) {
	return ObjectSymbol(path, name)
}

// ErrNoSymbol is returned by ObjectSymbol for a file without the symbol.
var ErrNoSymbol = errors.New("no such data symbol")

// ObjectSymbol returns the address and size of the data symbol (an ELF
// STT_OBJECT) name in the symbol table, or else the dynamic symbol table,
// of the ELF file path: what uaddr() resolves. As in bpftrace 0.17,
// functions and untyped symbols are not data symbols, and the address is
// the symbol's value in the file, not relocated for a PIE's load address.
func ObjectSymbol(path, name string) (addr, size uint64, err error) {
	// Only a regular file: opening a FIFO or a device could block.
	st, err := os.Stat(path)
	if err != nil {
		return 0, 0, fmt.Errorf("resolve symbol %s: %w", name, err)
	}
	if !st.Mode().IsRegular() {
		return 0, 0, fmt.Errorf("resolve symbol %s: %s is not a regular file: %w", name, path, ErrNoSymbol)
	}
	f, err := elf.Open(path)
	if err != nil {
		return 0, 0, fmt.Errorf("resolve symbol %s: %w", name, err)
	}
	defer f.Close()
	for _, read := range []func() ([]elf.Symbol, error){f.Symbols, f.DynamicSymbols} {
		syms, err := read()
		if err != nil {
			continue
		}
		for _, s := range syms {
			if s.Name == name && elf.ST_TYPE(s.Info) == elf.STT_OBJECT && s.Section != elf.SHN_UNDEF {
				return s.Value, s.Size, nil
			}
		}
	}
	return 0, 0, fmt.Errorf("resolve symbol %s in %s: %w", name, path, ErrNoSymbol)
}
