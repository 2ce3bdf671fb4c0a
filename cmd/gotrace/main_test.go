package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/gotrace/gotrace/runtime/metrics/webserver"
)

// gotraceCommand returns a path that runs this test binary as gotrace
// (see TestMain), for tests that start gotrace themselves.
func gotraceCommand(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "gotrace")
	if err := os.Symlink(os.Args[0], path); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestMain lets the test binary act as gotrace in testscript scripts (see
// script_test.go): run under the name gotrace, it runs the command.
//
// gotrace-metrics, which gotrace --metrics starts, is this test binary
// too: gotrace starts it under that name.
func TestMain(m *testing.M) {
	if exe, err := os.Executable(); err == nil {
		os.Setenv(metricsServerEnv, exe)
	}
	testscript.Main(m, map[string]func(){
		"gotrace":         func() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) },
		"gotrace-metrics": func() { os.Exit(webserver.Main(os.Args[1:], os.Stderr)) },
	})
}
