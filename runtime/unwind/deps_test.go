package unwind

import (
	"strings"
	"testing"

	"github.com/gotrace/gotrace/internal/testenv"
)

// TestDependencies keeps unwind pure: it reads ELF files and nothing else,
// so no eBPF (the unwinder that loads its tables is the caller) and no
// package of gotrace's.
func TestDependencies(t *testing.T) {
	const self = "github.com/gotrace/gotrace/runtime/unwind"
	for _, dep := range testenv.Deps(t) {
		switch {
		case dep == self:
		case strings.HasPrefix(dep, "github.com/cilium/ebpf"):
			t.Errorf("runtime/unwind depends on %s: it must not touch BPF", dep)
		case strings.HasPrefix(dep, "github.com/gotrace/gotrace/"):
			t.Errorf("runtime/unwind depends on %s: it must stay a leaf", dep)
		}
	}
}
