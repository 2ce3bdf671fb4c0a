package peersuite

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// DefaultTestsDir is where the runtime tests are, relative to the
// repository's root: bpftrace's tests/runtime in a checkout next to it.
const DefaultTestsDir = "../shared/bpftrace-tests/runtime"

// Options say what to run.
type Options struct {
	// Binary is the program under test (gotrace or bpftrace).
	Binary string
	// TestsDir is bpftrace's tests/runtime directory.
	TestsDir string
	// Workers is how many tests run at once.
	Workers int
	// Filter, when set, selects the tests whose suite.NAME it matches.
	Filter *regexp.Regexp
	// CoreOnly runs only the measured population (see Test.Core).
	CoreOnly bool
	// ScratchDir, when set, is an empty directory the tests run in, where
	// the helper programs they need are built (see Helpers); without it
	// they run in the tests' own parent directory and the tests that need
	// a helper are skipped.
	ScratchDir string
	// Progress, when set, receives a line per test as it finishes.
	Progress io.Writer
	// BuiltinVar says whether a name is a builtin variable of the
	// language, for the causes of failures (see Cause); nil: none is.
	BuiltinVar func(name string) bool
}

// Report is the outcome of a run.
type Report struct {
	Results []Result
	// Core marks the results of the measured population.
	Core map[*Test]bool
	// Causes is the cause of each failure (see Cause), by test.
	Causes map[*Test]string
	runner *Runner
}

// Run loads the tests and runs them against the binary.
func Run(ctx context.Context, opt Options) (*Report, error) {
	tests, err := Load(opt.TestsDir)
	if err != nil {
		return nil, err
	}
	workDir := filepath.Dir(filepath.Clean(opt.TestsDir))
	r := &Runner{Binary: opt.Binary, WorkDir: workDir, Env: os.Environ()}
	if opt.ScratchDir != "" {
		if r.Helpers, err = NewHelpers(opt.TestsDir, opt.ScratchDir); err != nil {
			return nil, err
		}
		r.WorkDir, workDir = opt.ScratchDir, opt.ScratchDir
	}
	rep := &Report{Core: map[*Test]bool{}, Causes: map[*Test]string{}, runner: r}
	var selected []*Test
	for i := range tests {
		t := &tests[i]
		if opt.Filter != nil && !opt.Filter.MatchString(t.ID()) {
			continue
		}
		core := t.Core(workDir)
		if opt.CoreOnly && !core {
			continue
		}
		rep.Core[t] = core
		selected = append(selected, t)
	}
	rep.Results = make([]Result, len(selected))
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		jobs  = make(chan int)
		locks fileLocks
	)
	for range max(opt.Workers, 1) {
		wg.Go(func() {
			for i := range jobs {
				t := selected[i]
				unlock := locks.lock(t.files())
				res := r.Run(ctx, t)
				unlock()
				var cause string
				if res.Status == Fail {
					cause = Cause(&res, workDir, opt.BuiltinVar)
				}
				mu.Lock()
				rep.Results[i] = res
				if res.Status == Fail {
					rep.Causes[t] = cause
				}
				if opt.Progress != nil {
					fmt.Fprintln(opt.Progress, rep.line(&res))
				}
				mu.Unlock()
			}
		})
	}
	for i := range selected {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	return rep, ctx.Err()
}

// tmpFile matches a fixed file name in /tmp that a test writes.
var tmpFile = regexp.MustCompile(`/tmp/[\w.-]+`)

// files returns the fixed /tmp files the test's commands name: tests that
// share one must not run at once.
func (t *Test) files() []string {
	var names []string
	for _, s := range []string{t.Run, t.Prog, t.After, t.Setup, t.Cleanup} {
		names = append(names, tmpFile.FindAllString(s, -1)...)
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// fileLocks serializes the tests that use the same files.
type fileLocks struct {
	mu    sync.Mutex
	locks map[string]*sync.Mutex
}

// lock takes the locks of the names (sorted, so that two tests never wait
// for each other) and returns a function that releases them.
func (l *fileLocks) lock(names []string) (unlock func()) {
	l.mu.Lock()
	if l.locks == nil {
		l.locks = map[string]*sync.Mutex{}
	}
	var ms []*sync.Mutex
	for _, n := range names {
		if l.locks[n] == nil {
			l.locks[n] = new(sync.Mutex)
		}
		ms = append(ms, l.locks[n])
	}
	l.mu.Unlock()
	for _, m := range ms {
		m.Lock()
	}
	return func() {
		for _, m := range ms {
			m.Unlock()
		}
	}
}

// Retry runs a failed test once more, alone, and keeps the new result if it
// passes: a timing test can fail on a machine loaded by the others running
// at once. It reports whether the test passed this time.
func (rep *Report) Retry(ctx context.Context, i int) bool {
	res := rep.runner.Run(ctx, rep.Results[i].Test)
	if res.Status != Pass {
		return false
	}
	delete(rep.Causes, res.Test)
	rep.Results[i] = res
	return true
}

// line is a test's line in the log: PASS, FAIL or SKIP, its name and why.
func (rep *Report) line(res *Result) string {
	s := fmt.Sprintf("%s %s (%dms)", res.Status, res.Test.ID(), res.Elapsed.Milliseconds())
	if res.Reason != "" {
		s += ": " + res.Reason
	}
	if c := rep.Causes[res.Test]; c != "" {
		s += " [" + c + "]"
	}
	return s
}

// Counts returns how many results passed, failed and were skipped; core
// restricts them to the measured population.
func (rep *Report) Counts(core bool) (passed, failed, skipped int) {
	for i := range rep.Results {
		res := &rep.Results[i]
		if core && !rep.Core[res.Test] {
			continue
		}
		switch res.Status {
		case Pass:
			passed++
		case Fail:
			failed++
		default:
			skipped++
		}
	}
	return
}

// Passed returns the names (suite.NAME) of the tests that passed.
func (rep *Report) Passed() []string {
	var names []string
	for i := range rep.Results {
		if rep.Results[i].Status == Pass {
			names = append(names, rep.Results[i].Test.ID())
		}
	}
	slices.Sort(names)
	return names
}

// causeCount is a cause and how many failures it explains.
type causeCount struct {
	cause string
	n     int
}

// table counts values, most frequent first.
func table(values []string) []causeCount {
	counts := map[string]int{}
	for _, v := range values {
		counts[v]++
	}
	var rows []causeCount
	for c, n := range counts {
		rows = append(rows, causeCount{c, n})
	}
	slices.SortFunc(rows, func(a, b causeCount) int {
		return cmp.Or(cmp.Compare(b.n, a.n), strings.Compare(a.cause, b.cause))
	})
	return rows
}

// Write prints the log: a line per test, the causes of the failures by
// count, the counts of the measured population and the closing line
// "N passed, M failed, K skipped".
func (rep *Report) Write(w io.Writer, perTest bool) {
	if perTest {
		for i := range rep.Results {
			fmt.Fprintln(w, rep.line(&rep.Results[i]))
		}
	}
	var causes, coreCauses []string
	for i := range rep.Results {
		t := rep.Results[i].Test
		c, ok := rep.Causes[t]
		if !ok {
			continue
		}
		causes = append(causes, c)
		if rep.Core[t] {
			coreCauses = append(coreCauses, c)
		}
	}
	writeTable(w, "causes of failure, all tests run", causes)
	writeTable(w, "causes of failure, measured population", coreCauses)
	p, f, s := rep.Counts(true)
	fmt.Fprintf(w, "measured population (issue 12: PROG tests of begin/end/interval probes without helper programs, struct types, kernel stacks, WILL_FAIL or EXPECT_FILE/JSON): %d passed, %d failed, %d skipped of %d\n", p, f, s, p+f+s)
	p, f, s = rep.Counts(false)
	fmt.Fprintf(w, "%d passed, %d failed, %d skipped\n", p, f, s)
}

// writeTable prints a table of values by count.
func writeTable(w io.Writer, title string, values []string) {
	if len(values) == 0 {
		return
	}
	fmt.Fprintf(w, "\n%s (%d):\n", title, len(values))
	for _, row := range table(values) {
		fmt.Fprintf(w, "%6d  %s\n", row.n, row.cause)
	}
	fmt.Fprintln(w)
}

// BuildGotrace builds gotrace from the repository this package is in into
// dir and returns the binary's path.
func BuildGotrace(dir string) (string, error) {
	bin := filepath.Join(dir, "gotrace")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/gotrace/gotrace/cmd/gotrace")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build gotrace: %v: %s", err, out)
	}
	return bin, nil
}
