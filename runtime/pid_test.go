package runtime

import (
	"context"
	"testing"

	"github.com/gotrace/gotrace/internal/testenv"
)

// TestPIDNoMaps runs a program that needs no object of the -p process
// without reading its /proc/PID/maps: -p 1 where that is refused.
func TestPIDNoMaps(t *testing.T) {
	testenv.RequireRoot(t)
	out, errOut, err := runScript(t, context.Background(), `BEGIN { printf("ok\n"); exit(); }`, Options{PID: 1})
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, errOut)
	}
	if out != "Attaching 1 probe...\nok\n\n\n" {
		t.Errorf("output %q", out)
	}
}
