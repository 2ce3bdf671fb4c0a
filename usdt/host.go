package usdt

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
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
	// mapped are the objects the -p process maps, read once, when a
	// library name first needs them.
	mappedOnce sync.Once
	mapped     []string
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
			h.mappedOnce.Do(func() { h.mapped, _ = ProcessPaths(h.PID) })
			mapped = h.mapped
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

// ProcessPath returns the path gotrace opens the file by that the absolute
// path names for the -p process, which may run in another mount namespace
// (a container): path itself when it is the same file here, otherwise
// /proc/PID/root followed by path. Without -p, for a relative path or when
// the process's root has no such file, it is path.
func (h *Host) ProcessPath(path string) string {
	if h.PID == 0 || !filepath.IsAbs(path) {
		return path
	}
	theirs := fmt.Sprintf("/proc/%d/root%s", h.PID, path)
	if _, err := os.Stat(theirs); err != nil {
		return path
	}
	return ownPath(path, theirs)
}

// ErrNoSymbol is returned by ObjectSymbol for a file without the symbol.
var ErrNoSymbol = errors.New("no such data symbol")

// ObjectSymbol returns the address and size of the data symbol name of
// the ELF file path (File.ObjectSymbol): what uaddr() resolves. A path
// that is not a regular file has no symbols: opening a FIFO or a device
// could block.
func (h *Host) ObjectSymbol(path, name string) (addr, size uint64, err error) {
	st, err := os.Stat(path)
	if err != nil {
		return 0, 0, fmt.Errorf("resolve symbol %s: %w", name, err)
	}
	if !st.Mode().IsRegular() {
		return 0, 0, fmt.Errorf("resolve symbol %s: %s is not a regular file: %w", name, path, ErrNoSymbol)
	}
	f, err := OpenFile(path)
	if err != nil {
		return 0, 0, fmt.Errorf("resolve symbol %s: %w", name, err)
	}
	defer f.Close()
	sym, ok := f.ObjectSymbol(name)
	if !ok {
		return 0, 0, fmt.Errorf("resolve symbol %s in %s: %w", name, path, ErrNoSymbol)
	}
	return sym.Value, sym.Size, nil
}
