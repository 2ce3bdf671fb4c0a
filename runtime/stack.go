package runtime

import (
	"encoding/binary"

	"github.com/gotrace/gotrace/codegen"
	"github.com/gotrace/gotrace/codegen/layout"
	"github.com/gotrace/gotrace/runtime/symbols"
)

// stackText formats the ustack value v (thread id << 32 | stack id, see
// codegen's ustack) of type typ with symbols.FormatStack. Frames are named only
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
		return symbols.FormatStack(addrs, symbols.KernelFrame, f.StackPerf, indent)
	}
	procMaps := symbols.ProcessMappings(int(v >> 32))
	return symbols.FormatStack(addrs, func(addr uint64) (string, string, bool) {
		return t.syms.Frame(procMaps, addr)
	}, f.StackPerf, indent)
}

// siteSymbols are the symbols of the uprobe sites among sites, for the
// symbolizer to name addresses of a process it cannot read the maps of.
func siteSymbols(sites []site) []symbols.Site {
	var out []symbols.Site
	for _, st := range sites {
		if st.symbol != "" {
			out = append(out, symbols.Site{Name: st.symbol, Offset: st.offset})
		}
	}
	return out
}
