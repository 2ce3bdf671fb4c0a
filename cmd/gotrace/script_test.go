package main

// Command-line tests: testscript files in testdata/script run gotrace (this
// test binary, see TestMain) and check its output and exit codes.

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/gotrace/gotrace/internal/fixture"
	"github.com/gotrace/gotrace/internal/testenv"
)

// TestScript runs testdata/script/*.txtar. Each script's work directory
// holds a copy of the bitcoind fixture as ./bitcoind when gcc and
// <sys/sdt.h> are available (condition [fixture]). The condition [root]
// says whether eBPF can be loaded; under CI both must hold.
func TestScript(t *testing.T) {
	var fixtureBin string
	if err := fixture.Check(); err == nil {
		fixtureBin = fixture.Build(t, "bitcoind")
	} else if testenv.InCI() {
		t.Fatalf("required under CI: %v", err)
	}
	if testenv.InCI() {
		testenv.RequireRoot(t)
	}
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		RequireExplicitExec: true,
		Setup: func(env *testscript.Env) error {
			if fixtureBin == "" {
				return nil
			}
			_, err := fixture.Copy(fixtureBin, env.WorkDir)
			return err
		},
		Condition: func(cond string) (bool, error) {
			switch cond {
			case "root":
				return os.Geteuid() == 0, nil
			case "fixture":
				return fixtureBin != "", nil
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"exits": cmdExits,
		},
	})
}

// cmdExits runs a program like exec and checks its exact exit code:
//
//	exits CODE PROGRAM [ARG...]
//
// stdout and stderr are then those of the program, as after exec.
func cmdExits(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! exits")
	}
	if len(args) < 2 {
		ts.Fatalf("usage: exits CODE PROGRAM [ARG...]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("exits: bad exit code %q", args[0])
	}
	got := 0
	if err := ts.Exec(args[1], args[2:]...); err != nil {
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			ts.Fatalf("exits: %v", err)
		}
		got = exit.ExitCode()
	}
	if got != want {
		ts.Fatalf("%s exited with %d, want %d", args[1], got, want)
	}
}
