package main

import (
	"os"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// TestMain lets the test binary act as gotrace in testscript scripts (see
// script_test.go) and removes what the tests built.
func TestMain(m *testing.M) {
	testscript.Main(cleanupM{m}, map[string]func(){
		"gotrace": func() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) },
	})
}

// cleanupM runs the tests, then removes buildDirs.
type cleanupM struct{ m *testing.M }

// Run runs the tests and returns their exit code.
func (c cleanupM) Run() int {
	code := c.m.Run()
	for _, dir := range buildDirs {
		os.RemoveAll(dir)
	}
	return code
}
