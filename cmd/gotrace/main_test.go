package main

import (
	"os"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// TestMain lets the test binary act as gotrace in testscript scripts (see
// script_test.go): run under the name gotrace, it runs the command.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"gotrace": func() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) },
	})
}
