// Command peersuite runs bpftrace's runtime tests against gotrace or
// bpftrace and prints PASS, FAIL or SKIP for each with the reason, the
// causes of the failures by count and "N passed, M failed, K skipped".
//
//	go run ./internal/peersuite/cmd [-bin PATH] [-tests DIR] [-run REGEXP] [-core] [-j N] [-q] [-passed FILE]
//
// Without -bin it builds gotrace from this repository.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"regexp"
	"runtime"
	"strings"

	"github.com/gotrace/gotrace/internal/peersuite"
	"github.com/gotrace/gotrace/lang"
)

func main() {
	bin := flag.String("bin", "", "the binary under test (default: gotrace built from this repository)")
	tests := flag.String("tests", peersuite.DefaultTestsDir, "bpftrace's tests/runtime directory")
	run := flag.String("run", "", "run only the tests whose suite.NAME matches this regular expression")
	core := flag.Bool("core", false, "run only the measured population")
	workers := flag.Int("j", 4*runtime.NumCPU(), "tests run at once")
	passed := flag.String("passed", "", "write the names of the passing tests to this file")
	quiet := flag.Bool("q", false, "print only the summary, not a line per test")
	flag.Parse()
	opt := peersuite.Options{Binary: *bin, TestsDir: *tests, Workers: *workers, CoreOnly: *core, BuiltinVar: lang.IsBuiltinVar}
	if err := mainErr(opt, *run, *passed, *quiet); err != nil {
		fmt.Fprintln(os.Stderr, "peersuite:", err)
		os.Exit(1)
	}
}

func mainErr(opt peersuite.Options, run, passed string, quiet bool) error {
	bin := opt.Binary
	if run != "" {
		re, err := regexp.Compile(run)
		if err != nil {
			return fmt.Errorf("parse -run: %w", err)
		}
		opt.Filter = re
	}
	if !quiet {
		opt.Progress = os.Stdout
	}
	scratch, err := os.MkdirTemp("", "peersuite-work")
	if err != nil {
		return fmt.Errorf("create scratch directory: %w", err)
	}
	defer os.RemoveAll(scratch)
	opt.ScratchDir = scratch
	if bin == "" {
		dir, err := os.MkdirTemp("", "peersuite")
		if err != nil {
			return fmt.Errorf("create build directory: %w", err)
		}
		defer os.RemoveAll(dir)
		opt.Binary, err = peersuite.BuildGotrace(dir)
		if err != nil {
			return err
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	rep, err := peersuite.Run(ctx, opt)
	if err != nil {
		return err
	}
	rep.Write(os.Stdout, false)
	if passed != "" {
		version, _ := exec.Command(opt.Binary, "--version").Output()
		text := fmt.Sprintf("# bpftrace's runtime tests that %s passes, written by\n# go run ./internal/peersuite/cmd -bin %s -passed FILE\n%s\n",
			strings.TrimSpace(string(version)), bin, strings.Join(rep.Passed(), "\n"))
		if err := os.WriteFile(passed, []byte(text), 0o644); err != nil {
			return fmt.Errorf("write passing tests: %w", err)
		}
	}
	return nil
}
