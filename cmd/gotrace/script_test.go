package main

// Command-line tests: testscript files in testdata/script run gotrace (this
// test binary, see TestMain) and check its output and exit codes.

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/gotrace/gotrace/internal/capability"
	"github.com/gotrace/gotrace/internal/fixture"
	"github.com/gotrace/gotrace/internal/testenv"
)

// TestScript runs testdata/script/*.txtar. Each script's work directory
// holds a copy of the bitcoind fixture as ./bitcoind when gcc and
// <sys/sdt.h> are available (condition [fixture]). The condition [root]
// says whether eBPF can be loaded; under CI both must hold.
func TestScript(t *testing.T) {
	if testing.Short() {
		// gotrace checks for eBPF privileges before it reads a script,
		// and most scripts load programs: none is hermetic.
		t.Skip("-short: the CLI scripts run gotrace, which needs eBPF privileges")
	}
	var fixtureBin string
	if err := fixture.Check(); err == nil {
		fixtureBin = fixture.Build(t, "bitcoind")
	} else if testenv.InCI() {
		t.Fatalf("required under CI: %v", err)
	}
	if testenv.InCI() {
		testenv.RequireRoot(t)
	}
	t.Cleanup(func() {
		if staticGotraceDir != "" {
			os.RemoveAll(staticGotraceDir)
		}
	})
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		RequireExplicitExec: true,
		Setup: func(env *testscript.Env) error {
			// Scripts do not inherit the environment TestMain set.
			env.Setenv(metricsServerEnv, os.Getenv(metricsServerEnv))
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
			case "pmu":
				return capability.Of(capability.PMU).Available, nil
			case "kprobes":
				return capability.Of(capability.Kprobes).Available, nil
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"exits":   cmdExits,
			"signals": cmdSignals,
			"privbin": cmdPrivbin,
			"asuser":  cmdAsUser,
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

// cmdSignals runs a program, sends it signals and checks its exit code:
//
//	signals [-watch=FILE] [-ready=REGEXP] CODE SIG[,SIG...] PROGRAM [ARG...]
//
// Each signal (USR1, INT, TERM, HUP, QUIT) is sent once the program has written
// to standard output (or to FILE), or with -ready once that output matches
// REGEXP (a line BEGIN prints: a signal that comes before BEGIN's output is
// read races with it), and after each the command waits until
// that output grows, the program exits or a second passes. The program's standard
// output and error are left in the files signals.stdout and
// signals.stderr of the work directory, for cmp.
func cmdSignals(ts *testscript.TestScript, neg bool, args []string) {
	watch, ready := "", regexp.MustCompile(".")
	for len(args) > 0 && strings.HasPrefix(args[0], "-") {
		switch name, value, _ := strings.Cut(args[0], "="); name {
		case "-watch":
			watch = ts.MkAbs(value)
		case "-ready":
			ready = regexp.MustCompile(value)
		default:
			ts.Fatalf("signals: unknown option %s", args[0])
		}
		args = args[1:]
	}
	if neg || len(args) < 3 {
		ts.Fatalf("usage: signals CODE SIG[,SIG...] PROGRAM [ARG...]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("signals: bad exit code %q", args[0])
	}
	names := map[string]syscall.Signal{"USR1": syscall.SIGUSR1, "INT": syscall.SIGINT, "TERM": syscall.SIGTERM, "HUP": syscall.SIGHUP, "QUIT": syscall.SIGQUIT}
	var sigs []syscall.Signal
	for _, name := range strings.Split(args[1], ",") {
		sig, ok := names[name]
		if !ok {
			ts.Fatalf("signals: unknown signal %q", name)
		}
		sigs = append(sigs, sig)
	}
	// The script's PATH, which holds gotrace, is not the test's.
	path := ""
	for _, dir := range filepath.SplitList(ts.Getenv("PATH")) {
		if fi, err := os.Stat(filepath.Join(dir, args[2])); err == nil && fi.Mode()&0o111 != 0 {
			path = filepath.Join(dir, args[2])
			break
		}
	}
	if path == "" {
		ts.Fatalf("signals: %s not found on the script's PATH", args[2])
	}
	stdout, err := os.Create(ts.MkAbs("signals.stdout"))
	ts.Check(err)
	defer stdout.Close()
	stderr, err := os.Create(ts.MkAbs("signals.stderr"))
	ts.Check(err)
	defer stderr.Close()
	cmd := exec.Command(path, args[3:]...)
	cmd.Dir = ts.MkAbs(".")
	cmd.Stdout, cmd.Stderr = stdout, stderr
	ts.Check(cmd.Start())
	done := make(chan struct{})
	go func() {
		cmd.Wait()
		close(done)
	}()
	output := func() []byte {
		name := stdout.Name()
		if watch != "" {
			name = watch
		}
		b, _ := os.ReadFile(name)
		return b
	}
	size := func() int64 { return int64(len(output())) }
	// waitFor waits until cond holds, the program has exited or limit
	// has passed.
	waitFor := func(cond func() bool, limit time.Duration) {
		for end := time.Now().Add(limit); time.Now().Before(end); {
			select {
			case <-done:
				return
			case <-time.After(20 * time.Millisecond):
			}
			if cond() {
				return
			}
		}
	}
	waitFor(func() bool { return ready.Match(output()) }, 10*time.Second)
	for _, sig := range sigs {
		n := size()
		if err := cmd.Process.Signal(sig); err != nil {
			break // exited already: its exit code tells
		}
		waitFor(func() bool { return size() > n }, time.Second)
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		<-done
		ts.Fatalf("%s still running 10s after the last signal", args[2])
	}
	if got := cmd.ProcessState.ExitCode(); got != want {
		ts.Fatalf("%s exited with %d (%v), want %d", args[2], got, cmd.ProcessState, want)
	}
}
