// Command testlog reads `go test -json` on standard input and writes what
// a plain `go test` would print: each package's result line, and the whole
// output of every test that failed. Then it lists every test that was
// skipped, with the reason it gave, so that a CI log shows which tests did
// not run on this machine and why (a missing hardware feature is a skip,
// never a failure). It exits 0; the caller takes go test's exit status.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
)

// event is one line of go test -json (cmd/test2json's TestEvent).
type event struct {
	Action  string
	Package string
	Test    string
	Output  string
}

// test names a test of a package.
type test struct{ pkg, name string }

func main() {
	if err := run(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "testlog: %v\n", err)
	}
}

func run(in io.Reader, out io.Writer) error {
	outputs := map[test][]string{}
	var skipped []string
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			// Not an event (a build error printed as text): as it is.
			fmt.Fprintln(out, sc.Text())
			continue
		}
		key := test{e.Package, e.Test}
		switch {
		case e.Action == "build-output":
			// A package that does not build (go 1.24 reports it as events).
			fmt.Fprint(out, e.Output)
		case e.Action == "output" && e.Test == "":
			// The package's own lines: ok, FAIL, a panic outside tests.
			if !strings.HasPrefix(e.Output, "=== ") && !strings.HasPrefix(e.Output, "PASS\n") {
				fmt.Fprint(out, e.Output)
			}
		case e.Action == "output":
			outputs[key] = append(outputs[key], e.Output)
		case e.Action == "fail" && e.Test != "":
			for _, line := range outputs[key] {
				if !strings.HasPrefix(line, "=== ") {
					fmt.Fprint(out, line)
				}
			}
			delete(outputs, key)
		case e.Action == "skip" && e.Test != "":
			skipped = append(skipped, fmt.Sprintf("%s %s: %s", e.Package, e.Test, reason(outputs[key])))
			delete(outputs, key)
		case e.Action == "pass":
			delete(outputs, key)
		}
	}
	fmt.Fprintf(out, "\nskipped tests: %d\n", len(skipped))
	for _, s := range skipped {
		fmt.Fprintf(out, "  %s\n", s)
	}
	return sc.Err()
}

// reason is what a skipped test said: its output without the run and
// skip headers, on one line.
func reason(lines []string) string {
	var parts []string
	for _, line := range lines {
		t := strings.TrimSpace(line)
		if t == "" || strings.HasPrefix(t, "=== ") || strings.HasPrefix(t, "--- SKIP") {
			continue
		}
		parts = append(parts, t)
	}
	if len(parts) == 0 {
		return "(no reason given)"
	}
	return strings.Join(parts, " ")
}
