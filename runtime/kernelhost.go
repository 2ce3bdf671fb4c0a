package runtime

import (
	"errors"
	"os"
	"sync"

	"github.com/cilium/ebpf/btf"

	"github.com/gotrace/gotrace/lang"
	"github.com/gotrace/gotrace/lang/attachpoint"
	"github.com/gotrace/gotrace/runtime/debuginfo"
	"github.com/gotrace/gotrace/runtime/tracefs"
	"github.com/gotrace/gotrace/usdt"
)

// host is gotrace's lang.Host: usdt.Host finds files and symbols, and
// the kernel's tracefs and BTF describe tracepoints (lang.TracepointHost).
type host struct {
	*usdt.Host

	btfOnce sync.Once
	btf     *btf.Spec
	// debug reads the uprobe targets' DWARF, each file once.
	debug debuginfo.Files
}

// Tracepoints returns the tracepoints category:name matches, with the
// fields of their format files. tracefs is mounted when it is missing
// and gotrace is root.
func (h *host) Tracepoints(category, name string) ([]*lang.Tracepoint, error) {
	dir, err := tracefs.Find(os.Geteuid() == 0)
	if err != nil {
		return nil, err
	}
	events, err := tracefs.Events(dir)
	if err != nil {
		return nil, err
	}
	var tps []*lang.Tracepoint
	for _, ev := range events {
		if !attachpoint.Star.Match(category, ev.Category) || !attachpoint.Star.Match(name, ev.Name) {
			continue
		}
		f, err := tracefs.ReadFormat(dir, ev)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				// Listed but without a format: not attachable.
				continue
			}
			return nil, err
		}
		tp := &lang.Tracepoint{Category: ev.Category, Name: ev.Name}
		for _, fl := range f.Fields {
			if fl.Common {
				continue
			}
			tp.Fields = append(tp.Fields, lang.TracepointField{
				Name: fl.Name, CType: fl.Type, Offset: fl.Offset, Size: fl.Size,
				Signed: fl.Signed, ArrayLen: fl.ArrayLen, DataLoc: fl.DataLoc,
			})
		}
		tps = append(tps, tp)
	}
	return tps, nil
}

// IntTypedef resolves a kernel type name through the kernel's BTF to the
// integer (or enum) it stands for.
func (h *host) IntTypedef(name string) (size int, signed bool, ok bool) {
	h.btfOnce.Do(func() {
		// Without BTF, fields keep their format's size and sign.
		h.btf, _ = btf.LoadKernelSpec()
	})
	if h.btf == nil {
		return 0, false, false
	}
	typ, err := h.btf.AnyTypeByName(name)
	if err != nil {
		return 0, false, false
	}
	switch t := btf.UnderlyingType(typ).(type) {
	case *btf.Int:
		return int(t.Size), t.Encoding&btf.Signed != 0, true
	case *btf.Enum:
		return int(t.Size), t.Signed, true
	}
	return 0, false, false
}

// FuncParams returns the parameters of function in the uprobe target
// path, from its debug information, which a uprobe's args reads.
func (h *host) FuncParams(path, function string) (*lang.Tracepoint, []*lang.StructDef, error) {
	return h.debug.FuncParams(path, function)
}

// Structs returns the struct or union called name in the DWARF of the
// uprobe target path, which a cast names.
func (h *host) Structs(path, name string) []*lang.StructDef {
	return h.debug.Structs(path, name)
}
