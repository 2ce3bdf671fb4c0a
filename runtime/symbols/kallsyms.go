package symbols

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// KernelSymbol is one line of /proc/kallsyms.
type KernelSymbol struct {
	Addr uint64
	Name string
}

// Kallsyms are the kernel's symbols, sorted by address: kaddr() looks
// names up in them, ksym() and kstack name addresses with them.
type Kallsyms []KernelSymbol

// KernelSymbols reads /proc/kallsyms once, when first needed.
var KernelSymbols = sync.OnceValues(func() (Kallsyms, error) {
	return readKallsyms("/proc/kallsyms")
})

// readKallsyms reads a file in /proc/kallsyms's format: "ADDR TYPE NAME
// [MODULE]" lines. Symbols at address 0 (what an unprivileged reader sees)
// are left out.
func readKallsyms(path string) (Kallsyms, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read kernel symbols: %w", err)
	}
	defer f.Close()
	var syms Kallsyms
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 3 {
			continue
		}
		addr, err := strconv.ParseUint(fields[0], 16, 64)
		if err != nil || addr == 0 {
			continue
		}
		syms = append(syms, KernelSymbol{Addr: addr, Name: fields[2]})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read kernel symbols: %w", err)
	}
	slices.SortStableFunc(syms, func(a, b KernelSymbol) int {
		switch {
		case a.Addr < b.Addr:
			return -1
		case a.Addr > b.Addr:
			return 1
		}
		return 0
	})
	return syms, nil
}

// errNoKernelSymbol says a symbol is not in /proc/kallsyms.
var errNoKernelSymbol = errors.New("not in /proc/kallsyms (it lists this kernel's functions; data symbols are left out where the kernel is built without them)")

// Lookup returns the address of the symbol called name.
func (k Kallsyms) Lookup(name string) (uint64, error) {
	for _, s := range k {
		if s.Name == name {
			return s.Addr, nil
		}
	}
	return 0, errNoKernelSymbol
}

// At returns the symbol at or below addr, the one whose code holds it,
// and false for an address below every symbol (a user address).
func (k Kallsyms) At(addr uint64) (KernelSymbol, bool) {
	i, found := slices.BinarySearchFunc(k, addr, func(s KernelSymbol, a uint64) int {
		switch {
		case s.Addr < a:
			return -1
		case s.Addr > a:
			return 1
		}
		return 0
	})
	if !found {
		if i == 0 {
			return KernelSymbol{}, false
		}
		// The first of the symbols at the address below.
		for i--; i > 0 && k[i-1].Addr == k[i].Addr; i-- {
		}
	}
	return k[i], true
}

// KsymText names kernel address addr as ksym() prints it: the symbol, or
// the address in hex where no symbol holds it.
func KsymText(addr uint64) string {
	if syms, err := KernelSymbols(); err == nil {
		if s, ok := syms.At(addr); ok {
			return s.Name
		}
	}
	return fmt.Sprintf("%#x", addr)
}

// KernelFrame names kernel address addr as a kstack frame, "sym+off",
// in the shape FormatStack takes (a kernel frame has no file).
func KernelFrame(addr uint64) (string, string, bool) {
	syms, err := KernelSymbols()
	if err != nil {
		return "", "", false
	}
	s, ok := syms.At(addr)
	if !ok {
		return "", "", false
	}
	return fmt.Sprintf("%s+%d", s.Name, addr-s.Addr), "", true
}
