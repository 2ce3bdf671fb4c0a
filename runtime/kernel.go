package runtime

import (
	"fmt"
	"sync"

	"github.com/cilium/ebpf/btf"

	"github.com/gotrace/gotrace/lang"
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
	syms, err := kernelSymbols()
	if err != nil {
		return 0, err
	}
	return syms.lookup(name)
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
