package testenv

import (
	"os/exec"
	"strings"
	"testing"
)

// Deps returns the import paths of every package the package under test
// depends on, itself included (go list -deps), for tests that keep a
// package from reaching what it must not touch. It stops t when the go
// tool is missing.
func Deps(t testing.TB) []string {
	t.Helper()
	goTool := RequireTool(t, "go")
	out, err := exec.Command(goTool, "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	return strings.Fields(string(out))
}
