package output

import (
	"strings"
	"testing"

	"github.com/gotrace/gotrace/internal/testenv"
)

// TestDependencies keeps output a formatter of what the Spec describes:
// it must not need the language (the Spec's layouts and parsed formats
// say everything) nor eBPF.
func TestDependencies(t *testing.T) {
	for _, dep := range testenv.Deps(t) {
		if strings.Contains(dep, "gotrace/lang") || strings.HasPrefix(dep, "github.com/cilium/ebpf") {
			t.Errorf("runtime/output depends on %s", dep)
		}
	}
}
