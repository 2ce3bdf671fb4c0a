package golden

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeTB records what Compare reports instead of failing the test. Its
// Fatalf returns, as Compare expects no more of it than a return after.
type fakeTB struct {
	testing.TB
	errors, fatals []string
}

func (f *fakeTB) Helper() {}

func (f *fakeTB) Errorf(format string, args ...any) {
	f.errors = append(f.errors, fmt.Sprintf(format, args...))
}

func (f *fakeTB) Fatalf(format string, args ...any) {
	f.fatals = append(f.fatals, fmt.Sprintf(format, args...))
}

// compareTests are a golden file, the output compared with it, and what
// the one error names ("" for none).
var compareTests = []struct {
	name, want, got string
	errs            []string
}{
	{"equal", "a\nb\n", "a\nb\n", nil},
	{"empty", "", "", nil},
	{"middle line", "a\nb\nc\n", "a\nB\nc\n", []string{"at line 2:", `want "b\n"`, `got "B\n"`}},
	{"first differing line only", "a\nb\nc\n", "a\nx\ny\n", []string{"at line 2:", `want "b\n"`, `got "x\n"`}},
	{"longer", "a\n", "a\nb\n", []string{"at line 2:", "want (no line)", `got "b\n"`}},
	{"shorter", "a\nb\n", "a\n", []string{"at line 2:", `want "b\n"`, "got (no line)"}},
	{"no final newline", "a\nb\n", "a\nb", []string{"at line 2:", `want "b\n"`, `got "b"`}},
	{"empty output", "a\n", "", []string{"at line 1:", `want "a\n"`, "got (no line)"}},
	{"carriage return", "a\n", "a\r\n", []string{"at line 1:", `want "a\n"`, `got "a\r\n"`}},
}

// TestCompare compares each output with its golden file: equal output
// passes, and a difference is one error naming the file and the first
// line that differs.
func TestCompare(t *testing.T) {
	for _, tt := range compareTests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "golden.txt")
			if err := os.WriteFile(path, []byte(tt.want), 0o644); err != nil {
				t.Fatal(err)
			}
			f := &fakeTB{TB: t}
			Compare(f, path, []byte(tt.got))
			if len(f.fatals) != 0 {
				t.Fatalf("fatal: %q", f.fatals)
			}
			if tt.errs == nil {
				if len(f.errors) != 0 {
					t.Errorf("equal output reported: %q", f.errors)
				}
				return
			}
			if len(f.errors) != 1 {
				t.Fatalf("%d errors, want 1: %q", len(f.errors), f.errors)
			}
			for _, want := range append([]string{path}, tt.errs...) {
				if !strings.Contains(f.errors[0], want) {
					t.Errorf("the error lacks %q:\n%s", want, f.errors[0])
				}
			}
		})
	}
}

// TestCompareFails checks that a difference fails even where nothing
// else of the test would, that the message names the file and the first
// differing line (not a later one), and that the golden file is left as
// it was.
func TestCompareFails(t *testing.T) {
	path := filepath.Join(t.TempDir(), "listing.txt")
	want := "r0 = 1\nr1 = 2\nexit\n"
	if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
		t.Fatal(err)
	}
	f := &fakeTB{TB: t}
	Compare(f, path, []byte("r0 = 1\nr1 = 3\nexit 1\n"))
	if len(f.errors)+len(f.fatals) == 0 {
		t.Fatal("a difference passed")
	}
	msg := strings.Join(append(f.errors, f.fatals...), "\n")
	for _, s := range []string{path, "line 2:", `want "r1 = 2\n"`, `got "r1 = 3\n"`} {
		if !strings.Contains(msg, s) {
			t.Errorf("the message lacks %q:\n%s", s, msg)
		}
	}
	if strings.Contains(msg, "line 3") || strings.Contains(msg, "exit 1") {
		t.Errorf("the message names a line after the first difference:\n%s", msg)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != want {
		t.Errorf("the golden file changed without -update: %q, %v", b, err)
	}
}

// TestCompareMissing checks that a golden file that is not there is a
// fatal error naming it.
func TestCompareMissing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "none.txt")
	f := &fakeTB{TB: t}
	Compare(f, path, []byte("x\n"))
	if len(f.fatals) != 1 || !strings.Contains(f.fatals[0], path) {
		t.Errorf("fatals %q, want one naming %s", f.fatals, path)
	}
}

// TestCompareUpdate checks that with -update the file (and its directory)
// is written with the output, and nothing is reported.
func TestCompareUpdate(t *testing.T) {
	defer func(old bool) { *update = old }(*update)
	*update = true
	path := filepath.Join(t.TempDir(), "new", "golden.txt")
	f := &fakeTB{TB: t}
	Compare(f, path, []byte("new\n"))
	if len(f.errors)+len(f.fatals) != 0 {
		t.Errorf("reported under -update: %q %q", f.errors, f.fatals)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "new\n" {
		t.Errorf("the file holds %q, %v; want the output", b, err)
	}
}
