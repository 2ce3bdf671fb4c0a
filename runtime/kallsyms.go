package runtime

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

// kernelSymbol is one line of /proc/kallsyms.
type kernelSymbol struct {
	addr uint64
	name string
}

// kallsyms are the kernel's symbols, sorted by address; kaddr() looks
// names up in them and ksym() and kstack name addresses with them.
type kallsyms []kernelSymbol

// kernelSymbols reads /proc/kallsyms once, when first needed.
var kernelSymbols = sync.OnceValues(func() (kallsyms, error) {
	return readKallsyms("/proc/kallsyms")
})

// readKallsyms reads a file in /proc/kallsyms's format: "ADDR TYPE NAME
// [MODULE]" lines. Symbols at address 0 (what an unprivileged reader sees)
// are left out.
func readKallsyms(path string) (kallsyms, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read kernel symbols: %w", err)
	}
	defer f.Close()
	var syms kallsyms
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
		syms = append(syms, kernelSymbol{addr: addr, name: fields[2]})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read kernel symbols: %w", err)
	}
	slices.SortStableFunc(syms, func(a, b kernelSymbol) int {
		switch {
		case a.addr < b.addr:
			return -1
		case a.addr > b.addr:
			return 1
		}
		return 0
	})
	return syms, nil
}

// errNoKernelSymbol says a symbol is not in /proc/kallsyms.
var errNoKernelSymbol = errors.New("not in /proc/kallsyms (it lists this kernel's functions; data symbols are left out where the kernel is built without them)")

// lookup returns the address of the symbol called name.
func (k kallsyms) lookup(name string) (uint64, error) {
	for _, s := range k {
		if s.name == name {
			return s.addr, nil
		}
	}
	return 0, errNoKernelSymbol
}

// at returns the symbol at or below addr, the one whose code holds it,
// and false for an address below every symbol (a user address).
func (k kallsyms) at(addr uint64) (kernelSymbol, bool) {
	i, found := slices.BinarySearchFunc(k, addr, func(s kernelSymbol, a uint64) int {
		switch {
		case s.addr < a:
			return -1
		case s.addr > a:
			return 1
		}
		return 0
	})
	if !found {
		if i == 0 {
			return kernelSymbol{}, false
		}
		// The first of the symbols at the address below.
		for i--; i > 0 && k[i-1].addr == k[i].addr; i-- {
		}
	}
	return k[i], true
}

// ksymText names kernel address addr as ksym() prints it: the symbol, or
// the address in hex where no symbol holds it.
func ksymText(addr uint64) string {
	if syms, err := kernelSymbols(); err == nil {
		if s, ok := syms.at(addr); ok {
			return s.name
		}
	}
	return fmt.Sprintf("%#x", addr)
}

// kernelFrame names kernel address addr as a kstack frame, "sym+off".
func kernelFrame(addr uint64) (string, string, bool) {
	syms, err := kernelSymbols()
	if err != nil {
		return "", "", false
	}
	s, ok := syms.at(addr)
	if !ok {
		return "", "", false
	}
	return fmt.Sprintf("%s+%d", s.name, addr-s.addr), "", true
}
