package runtime

import (
	"encoding/binary"
	"fmt"
	"sync"

	"github.com/cilium/ebpf/btf"
	"golang.org/x/sys/unix"

	"github.com/gotrace/gotrace/lang"
	"github.com/gotrace/gotrace/runtime/symbols"
)

// NewKernel returns the running kernel as the checker sees it: its BTF,
// read once, when a script first names a kernel type or curtask, and its
// symbols (/proc/kallsyms) for kaddr().
func NewKernel() lang.Kernel { return &kernel{} }

// kernel implements lang.Kernel.
type kernel struct {
	once sync.Once
	spec *btf.Spec
	err  error
}

// Symbol returns the address of the kernel symbol name.
func (k *kernel) Symbol(name string) (uint64, error) {
	syms, err := symbols.KernelSymbols()
	if err != nil {
		return 0, err
	}
	return syms.Lookup(name)
}

// CgroupID returns the id of the cgroup at path: the 64-bit handle the
// cgroup file system gives its directories, which is what
// bpf_get_current_cgroup_id returns.
func (k *kernel) CgroupID(path string) (uint64, error) {
	h, _, err := unix.NameToHandleAt(unix.AT_FDCWD, path, 0)
	if err != nil {
		return 0, err
	}
	b := h.Bytes()
	if len(b) != 8 {
		return 0, fmt.Errorf("%s is not in a cgroup file system (a handle of %d bytes)", path, len(b))
	}
	return binary.LittleEndian.Uint64(b), nil
}

// Types returns the kernel's BTF, loaded on the first call.
func (k *kernel) Types() (*btf.Spec, error) {
	k.once.Do(func() {
		k.spec, k.err = btf.LoadKernelSpec()
		if k.err != nil {
			k.err = fmt.Errorf("load kernel BTF: %w", k.err)
		}
	})
	return k.spec, k.err
}
