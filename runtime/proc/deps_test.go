package proc

import (
	"strings"
	"testing"

	"github.com/gotrace/gotrace/internal/testenv"
)

// TestDependencies keeps proc about processes alone: nothing of the
// language, the code generator, probes (usdt, eBPF) or the runtime that
// calls it.
func TestDependencies(t *testing.T) {
	const self = "github.com/gotrace/gotrace/runtime/proc"
	for _, dep := range testenv.Deps(t) {
		gotrace, ok := strings.CutPrefix(dep, "github.com/gotrace/gotrace/")
		switch {
		case dep == self:
		case strings.HasPrefix(dep, "github.com/cilium/ebpf"):
			t.Errorf("runtime/proc depends on %s", dep)
		case ok && !strings.HasPrefix(gotrace, "internal/"):
			t.Errorf("runtime/proc depends on %s: it must not reach lang, codegen, usdt or the runtime", dep)
		}
	}
}
