package plan

import (
	"testing"

	"github.com/gotrace/gotrace/internal/testenv"
)

// TestDependencies keeps the plan a stage before the run: it never
// reaches the runtime that loads and attaches what it planned, nor what
// the run writes. (The capability table it asks does attach, to try a
// feature, so cilium/ebpf's link package is among its dependencies.)
func TestDependencies(t *testing.T) {
	for _, dep := range testenv.Deps(t) {
		switch dep {
		case "github.com/gotrace/gotrace/runtime", "github.com/gotrace/gotrace/runtime/output",
			"github.com/gotrace/gotrace/runtime/capture", "github.com/gotrace/gotrace/runtime/metrics":
			t.Errorf("runtime/plan depends on %s: it must not reach the run that executes it", dep)
		}
	}
}
