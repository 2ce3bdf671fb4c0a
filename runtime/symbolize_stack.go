package runtime

import (
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/gotrace/gotrace/codegen"
	"github.com/gotrace/gotrace/codegen/layout"
)

// How far bpftrace indents the frames of a ustack: in a map key, and
// everywhere else (printf, print, map values).
const (
	keyStackIndent   = "    "
	valueStackIndent = "        "
)

// stackText formats the ustack value v (thread id << 32 | stack id, see
// codegen's ustack) of type typ with formatStack. Frames are named only
// while their process lives, as bpftrace names them. A kstack value is a
// stack id, and a kstack the kernel did not record (the probe interrupted
// user code) prints as nothing, as in bpftrace.
func (t *tracer) stackText(v uint64, f layout.Field, indent string) string {
	var addrs []uint64
	if m := t.coll.Maps[codegen.StackMap(f.StackFrames)]; m != nil {
		raw := make([]byte, 8*f.StackFrames)
		if err := m.Lookup(uint32(v), raw); err == nil {
			for i := 0; i+8 <= len(raw); i += 8 {
				addrs = append(addrs, binary.NativeEndian.Uint64(raw[i:]))
			}
		}
	}
	if f.StackKernel {
		if len(addrs) == 0 {
			return ""
		}
		return formatStack(addrs, kernelFrame, f.StackPerf, indent)
	}
	procMaps := processMappings(int(v >> 32))
	return formatStack(addrs, func(addr uint64) (string, string, bool) {
		return t.syms.frame(procMaps, addr)
	}, f.StackPerf, indent)
}

// formatStack formats the frames addrs (up to the first 0) as bpftrace
// prints a ustack: a newline, then a line per frame, indent and
// "sym+off" (the address in hex when name does not know it), or in perf
// mode a tab, the address in hex and "sym+off (file)" ("0xADDR
// ([unknown])"; a kernel frame has no file).
func formatStack(addrs []uint64, name func(uint64) (sym, file string, ok bool), perf bool, indent string) string {
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
// "sym+off", demangled, and returns the file that holds it.
func (s *symbolizer) frame(ms mappings, addr uint64) (string, string, bool) {
	path, off, ok := ms.find(addr)
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
	return fmt.Sprintf("%s+%d", demangle(sym.Name), vaddr-sym.Value), path, true
}
