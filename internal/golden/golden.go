// Package golden owns the tests' comparison of output with a golden file
// (codegen's listings, lang's AST dumps, runtime/metrics' expositions and
// runtime/flamegraph's drawing under testdata/, cmd/gotrace's gotrace.8):
// reading the file, reporting a difference by the first line that
// differs, and the -update flag that rewrites the files instead. Only
// tests import it; the flag is defined once here, so a test package that
// uses Compare defines no -update of its own.
package golden

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata with what the tests produce")

// Compare checks that got is the content of the golden file at path. On a
// difference it fails t, naming the file and the first line that differs
// (its number, the golden file's text and got's). With -update it writes
// got to path instead, creating the directory, and does not compare.
func Compare(t testing.TB, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatalf("update golden file: %v", err)
			return
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatalf("update golden file: %v", err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden file: %v (go test -update writes it)", err)
		return
	}
	if bytes.Equal(got, want) {
		return
	}
	line, w, g := firstDiff(want, got)
	t.Errorf("output differs from %s at line %d:\nwant %s\n got %s\n(go test -update rewrites the file; review its diff)", path, line, w, g)
}

// firstDiff returns the number (from 1) of the first line that differs
// between want and got, which differ, and that line of each, quoted with
// its newline, or "(no line)" where one ends before it.
func firstDiff(want, got []byte) (int, string, string) {
	w, g := lines(want), lines(got)
	i := 0
	for i < len(w) && i < len(g) && bytes.Equal(w[i], g[i]) {
		i++
	}
	return i + 1, lineText(w, i), lineText(g, i)
}

// lines splits b after each newline; a last line without one is a line.
func lines(b []byte) [][]byte {
	l := bytes.SplitAfter(b, []byte("\n"))
	if len(l[len(l)-1]) == 0 {
		l = l[:len(l)-1]
	}
	return l
}

func lineText(lines [][]byte, i int) string {
	if i >= len(lines) {
		return "(no line)"
	}
	return strconv.Quote(string(lines[i]))
}
