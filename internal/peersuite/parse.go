// Package peersuite runs bpftrace's own runtime tests (tests/runtime of the
// bpftrace repository) against a bpftrace-compatible binary, gotrace or
// bpftrace itself, by the rules of bpftrace's test engine
// (tests/runtime/engine): the same file format, command lines, environment,
// working directory, time-outs and expectations. The tests are read at run
// time from a checkout next to the repository; none of their text is kept
// here.
package peersuite

import (
	"bufio"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// defaultTimeout is the engine's time-out in seconds for a test without
// TIMEOUT.
const defaultTimeout = 5

// Expectation modes, as the engine names them.
const (
	modeText      = "text"
	modeTextNone  = "text_none"
	modeRegex     = "regex"
	modeRegexNone = "regex_none"
	modeFile      = "file"
	modeJSON      = "json"
)

// expectModes maps each expectation directive to its mode.
var expectModes = map[string]string{
	"EXPECT": modeText, "EXPECT_NONE": modeTextNone,
	"EXPECT_REGEX": modeRegex, "EXPECT_REGEX_NONE": modeRegexNone,
	"EXPECT_FILE": modeFile, "EXPECT_JSON": modeJSON,
}

// Expect is one expectation on a test's output.
type Expect struct {
	// Mode is one of text, text_none, regex, regex_none, file or json.
	Mode string
	// Text is the line, pattern or file name (relative to the tests'
	// working directory) the mode checks against.
	Text string
}

// Test is one block of a runtime test file.
type Test struct {
	// Suite is the name of the file the test is in; Suite.Name names it.
	Suite, Name string
	// Run is a shell command line with {{BPFTRACE}}; Prog a program for -e.
	// Exactly one is set.
	Run, Prog string
	Expects   []Expect
	// ExactExpect is set by EXPECT_FILE and EXPECT_JSON, which compare the
	// whole output after the probes are attached.
	ExactExpect bool
	// Timeout is in seconds, counted from the probes being attached.
	Timeout int
	// Befores are helper programs started before the test; After a command
	// run once the probes are attached; Setup and Cleanup run around it.
	Befores               []string
	After, Setup, Cleanup string
	MinKernel, MaxKernel  string
	Requires              []string
	Env                   [][2]string
	Arch                  []string
	Features, NegFeatures []string
	WillFail, NewPidNS    bool
	SkipIfEnvHas          *[2]string
	ReturnCode            int
	LocalizeTimestamps    int64
}

// ID is the test's name as the engine prints it, suite.NAME.
func (t *Test) ID() string { return t.Suite + "." + t.Name }

// Load reads every test file under dir (bpftrace's tests/runtime), skipping
// the engine's own directories as the engine does, and returns the tests
// for this machine's architecture sorted by suite and name.
func Load(dir string) ([]Test, error) {
	var tests []Test
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case "engine", "scripts", "outputs":
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasPrefix(d.Name(), ".") {
			return nil
		}
		ts, err := ParseFile(path)
		if err != nil {
			return err
		}
		tests = append(tests, ts...)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("load runtime tests: %w", err)
	}
	arch := hostArch()
	tests = slices.DeleteFunc(tests, func(t Test) bool { return !archMatches(t.Arch, arch) })
	// A name used twice in a file gets "#2" so that lists of names say
	// which test they mean.
	seen := map[string]int{}
	for i := range tests {
		id := tests[i].ID()
		if seen[id]++; seen[id] > 1 {
			tests[i].Name += fmt.Sprintf(" #%d", seen[id])
		}
	}
	slices.SortStableFunc(tests, func(a, b Test) int {
		if c := strings.Compare(a.Suite, b.Suite); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	return tests, nil
}

// ParseFile reads one test file: blocks separated by blank lines, lines
// starting with '#' ignored, a line indented past its directive continuing
// the PROG, EXPECT or EXPECT_REGEX before it.
func ParseFile(path string) ([]Test, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read test file: %w", err)
	}
	suite := filepath.Base(path)
	var lines []string
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	var tests []Test
	var block []string
	for i, line := range lines {
		// The engine skips a comment before deciding whether the file
		// ended, so a file whose last line is a comment loses its last
		// block there too.
		if strings.HasPrefix(line, "#") {
			continue
		}
		if line != "" {
			block = append(block, line)
		}
		if (line == "" || i == len(lines)-1) && len(block) > 0 {
			t, err := parseBlock(block, suite)
			if err != nil {
				return nil, fmt.Errorf("parse %s: %w", path, err)
			}
			tests = append(tests, t)
			block = nil
		}
	}
	return tests, nil
}

// parseBlock reads one test's directives.
func parseBlock(block []string, suite string) (Test, error) {
	t := Test{Suite: suite, LocalizeTimestamps: -1}
	text := map[string]*string{
		"NAME": &t.Name, "RUN": &t.Run, "PROG": &t.Prog,
		"AFTER": &t.After, "SETUP": &t.Setup, "CLEANUP": &t.Cleanup,
		"MIN_KERNEL": &t.MinKernel, "MAX_KERNEL": &t.MaxKernel,
	}
	prev := ""
	for _, item := range block {
		// A line whose first len(prev)+1 characters are blanks continues
		// the directive before it.
		if n := len(prev) + 1; len(item) >= n && strings.TrimSpace(item[:n]) == "" {
			rest := item[n:]
			switch prev {
			case "PROG":
				t.Prog += "\n" + rest
				continue
			case "EXPECT", "EXPECT_REGEX":
				t.Expects[len(t.Expects)-1].Text += "\n" + rest
				continue
			}
		}
		fields := strings.Fields(item)
		if len(fields) == 0 {
			continue
		}
		name := fields[0]
		line := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(item), name))
		prev = name
		if field, ok := text[name]; ok {
			*field = line
			continue
		}
		if mode, ok := expectModes[name]; ok {
			t.Expects = append(t.Expects, Expect{mode, line})
			t.ExactExpect = t.ExactExpect || mode == modeFile || mode == modeJSON
			continue
		}
		switch name {
		case "TIMEOUT", "RETURN_CODE", "LOCALIZE_TIMESTAMPS":
			n, err := strconv.ParseInt(line, 10, 64)
			if err != nil {
				return t, fmt.Errorf("test %q: %s: %w", t.Name, name, err)
			}
			switch name {
			case "TIMEOUT":
				t.Timeout = int(n)
			case "RETURN_CODE":
				t.ReturnCode = int(n)
			default:
				t.LocalizeTimestamps = n
			}
		case "BEFORE":
			t.Befores = append(t.Befores, line)
		case "REQUIRES":
			t.Requires = append(t.Requires, line)
		case "ENV":
			for _, e := range strings.Fields(line) {
				k, v, ok := strings.Cut(e, "=")
				if !ok {
					return t, fmt.Errorf("test %q: ENV %q is not NAME=VALUE", t.Name, e)
				}
				t.Env = append(t.Env, [2]string{k, v})
			}
		case "ARCH":
			for _, a := range strings.Split(line, "|") {
				t.Arch = append(t.Arch, strings.TrimSpace(a))
			}
		case "REQUIRES_FEATURE":
			for _, f := range strings.Fields(line) {
				if neg, ok := strings.CutPrefix(f, "!"); ok {
					t.NegFeatures = append(t.NegFeatures, neg)
				} else {
					t.Features = append(t.Features, f)
				}
			}
		case "WILL_FAIL":
			t.WillFail = true
		case "NEW_PIDNS":
			t.NewPidNS = true
		case "SKIP_IF_ENV_HAS":
			k, v, _ := strings.Cut(line, "=")
			t.SkipIfEnvHas = &[2]string{k, v}
		default:
			return t, fmt.Errorf("suite %s: field %s is not a runtime test directive", suite, name)
		}
	}
	switch {
	case t.Name == "":
		return t, fmt.Errorf("suite %s: a test has no NAME", suite)
	case t.Run == "" && t.Prog == "":
		return t, fmt.Errorf("test %s.%s: neither RUN nor PROG", suite, t.Name)
	case t.Run != "" && t.Prog != "":
		return t, fmt.Errorf("test %s.%s: both RUN and PROG", suite, t.Name)
	case len(t.Expects) == 0 && !hasDirective(block, "RETURN_CODE"):
		return t, fmt.Errorf("test %s.%s: no EXPECT", suite, t.Name)
	case len(t.Expects) > 1 && t.ExactExpect:
		return t, fmt.Errorf("test %s.%s: EXPECT_FILE or EXPECT_JSON with other EXPECTs", suite, t.Name)
	case t.ReturnCode != 0 && t.WillFail:
		return t, fmt.Errorf("test %s.%s: both WILL_FAIL and RETURN_CODE", suite, t.Name)
	}
	if !hasDirective(block, "TIMEOUT") {
		t.Timeout = defaultTimeout
	}
	return t, nil
}

// hasDirective reports whether a block has a line starting with directive.
func hasDirective(block []string, directive string) bool {
	for _, l := range block {
		if f := strings.Fields(l); len(f) > 0 && f[0] == directive {
			return true
		}
	}
	return false
}
