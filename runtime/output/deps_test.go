package output

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/gotrace/gotrace/internal/testenv"
)

// TestDependencies keeps output a formatter of what the Spec describes:
// it must not need the language (the Spec's layouts and parsed formats
// say everything) nor eBPF.
func TestDependencies(t *testing.T) {
	goTool := testenv.RequireTool(t, "go")
	out, err := exec.Command(goTool, "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.Contains(dep, "gotrace/lang") || strings.HasPrefix(dep, "github.com/cilium/ebpf") {
			t.Errorf("runtime/output depends on %s", dep)
		}
	}
}
