package runtime

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/gotrace/gotrace/codegen"
	"github.com/gotrace/gotrace/codegen/layout"
	"github.com/gotrace/gotrace/runtime/plan"
	"github.com/gotrace/gotrace/runtime/symbols"
)

// stackText formats the ustack value v (thread id << 32 | stack id, see
// codegen's ustack) of type typ with symbols.FormatStack. Frames are named
// through the mappings of the process that recorded them, read while it
// runs or kept from then (bpftrace names them only while it lives), even
// when its pid went to another process since (symbols.StackFrames). A kstack value is a
// stack id, and a kstack the kernel did not record (the probe interrupted
// user code) prints as nothing, as in bpftrace.
func (pr *printer) stackText(v uint64, f layout.Field, indent string) string {
	var addrs []uint64
	name := codegen.StackMap(f.StackFrames)
	if !f.StackKernel {
		name = codegen.UserStackMap(f.StackFrames, pr.opts.StackUnwind)
	}
	if m := pr.coll.Maps[name]; m != nil {
		raw := make([]byte, 8*f.StackFrames)
		if err := m.Lookup(uint32(v), raw); err == nil {
			// The frames end at the first 0: the kernel zeroes the rest,
			// the eh_frame walk leaves the older frames of its buffer.
			for i := 0; i+8 <= len(raw) && binary.NativeEndian.Uint64(raw[i:]) != 0; i += 8 {
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
	return symbols.FormatStack(addrs, pr.syms.StackFrames(int(v>>32), addrs), f.StackPerf, indent)
}

// siteSymbols are the symbols of the uprobe sites among sites, for the
// symbolizer to name addresses of a process it cannot read the maps of.
func siteSymbols(sites []plan.Site) []symbols.Site {
	var out []symbols.Site
	for _, st := range sites {
		if st.Symbol != "" {
			out = append(out, symbols.Site{Name: st.Symbol, Offset: st.Offset})
		}
	}
	return out
}

// reportUnmapped says once, at the end of the trace, how many user frames
// printed as addresses because their process exited before its mappings
// could be read. The caller holds pr.mu.
func (pr *printer) reportUnmapped() {
	if n := pr.syms.Unmapped(); n > 0 && !pr.opts.NoWarnings {
		fmt.Fprintf(pr.opts.Err, "WARNING: %d user stack frames print as addresses: their processes exited before their memory maps could be read\n", n)
	}
}

// namesUserAddresses reports whether a record or map of spec holds a user
// stack or a user symbol (usym, func).
func namesUserAddresses(spec *codegen.Spec) bool {
	var user func(fields []layout.Field) bool
	user = func(fields []layout.Field) bool {
		return slices.ContainsFunc(fields, func(f layout.Field) bool {
			return f.Kind == layout.Usym || f.Kind == layout.Stack && !f.StackKernel || user(f.Elems)
		})
	}
	for _, ev := range spec.Events {
		if user(ev.Args) {
			return true
		}
	}
	for _, m := range spec.Maps {
		if user(m.KeyFields) || user([]layout.Field{m.Value}) {
			return true
		}
	}
	return false
}
