package runtime

import (
	"testing"

	"github.com/gotrace/gotrace/lang"
	"github.com/gotrace/gotrace/runtime/output"
)

// TestMaxSignalAgrees keeps the bound the checker puts on signal() and
// the one past which signal_name() prints "N/A" the same number: output
// holds its own copy because it does not import the language.
func TestMaxSignalAgrees(t *testing.T) {
	if output.MaxSignal != lang.MaxSignal {
		t.Errorf("output.MaxSignal = %d, lang.MaxSignal = %d", output.MaxSignal, lang.MaxSignal)
	}
}
