package companion

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPathOrder checks the order of the search: the variable, then the
// running program's directory, then PATH, and the error naming them all.
func TestPathOrder(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	pathDir := t.TempDir()
	onPath := filepath.Join(pathDir, "gotrace-test-companion")
	if err := os.WriteFile(onPath, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", pathDir)

	const env = "GOTRACE_TEST_COMPANION"
	t.Setenv(env, "/named/by/env")
	if got, err := Path("gotrace-test-companion", env); err != nil || got != "/named/by/env" {
		t.Errorf("with $%s set: got %q, %v; want the variable's value", env, got, err)
	}

	t.Setenv(env, "")
	if got, err := Path("gotrace-test-companion", env); err != nil || got != onPath {
		t.Errorf("on PATH: got %q, %v; want %q", got, err, onPath)
	}

	// The test binary's own name is beside itself, and wins over PATH.
	name := filepath.Base(self)
	copyOnPath := filepath.Join(pathDir, name)
	if err := os.WriteFile(copyOnPath, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got, err := Path(name, env); err != nil || got != self {
		t.Errorf("beside the program: got %q, %v; want %q", got, err, self)
	}

	_, err = Path("gotrace-no-such-companion", env)
	if err == nil {
		t.Fatal("a missing companion was found")
	}
	for _, want := range []string{"gotrace-no-such-companion", "$" + env, filepath.Dir(self), "PATH"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
}
