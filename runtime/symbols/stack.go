package symbols

import (
	"fmt"
	"strings"
)

// How far bpftrace indents the frames of a stack: in a map key, and
// everywhere else (printf, print, map values).
const (
	KeyIndent   = "    "
	ValueIndent = "        "
)

// FormatStack formats the frames addrs (up to the first 0) as bpftrace
// prints a ustack: a newline, then a line per frame, indent and
// "sym+off" (the address in hex when name does not know it), or in perf
// mode a tab, the address in hex and "sym+off (file)" ("0xADDR
// ([unknown])"; a kernel frame has no file).
func FormatStack(addrs []uint64, name func(uint64) (sym, file string, ok bool), perf bool, indent string) string {
	var b strings.Builder
	b.WriteByte('\n')
	for _, addr := range addrs {
		if addr == 0 {
			break
		}
		sym, file, ok := name(addr)
		if perf {
			if ok && file == "" {
				fmt.Fprintf(&b, "\t%x %s\n", addr, sym)
			} else if ok {
				fmt.Fprintf(&b, "\t%x %s (%s)\n", addr, sym, file)
			} else {
				fmt.Fprintf(&b, "\t%x %#x ([unknown])\n", addr, addr)
			}
			continue
		}
		b.WriteString(indent)
		if ok {
			b.WriteString(sym)
		} else {
			fmt.Fprintf(&b, "%#x", addr)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// frame names code address addr of a process with mappings ms as
// "sym+off", demangled, and returns the file that holds it, in the shape
// FormatStack takes. The caller holds s.mu.
func (s *Symbolizer) frame(ms Mappings, addr uint64) (string, string, bool) {
	path, off, ok := ms.Find(addr)
	if !ok {
		return "", "", false
	}
	es := s.file(path)
	if es == nil {
		return "", "", false
	}
	sym, vaddr, ok := es.symbolAt(off)
	if !ok {
		return "", "", false
	}
	return fmt.Sprintf("%s+%d", s.demangle(sym.Name), vaddr-sym.Value), path, true
}
