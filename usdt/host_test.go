package usdt

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/gotrace/gotrace/internal/testenv"
)

// TestObjectSymbol checks ObjectSymbol's refusal of functions and the
// size of a data symbol.
func TestObjectSymbol(t *testing.T) {
	const python = "/usr/bin/python3.11"
	testenv.RequireFile(t, python)
	if _, _, err := (&Host{}).ObjectSymbol(python, "main"); !errors.Is(err, ErrNoSymbol) {
		t.Errorf("ObjectSymbol(main) = %v, want ErrNoSymbol", err)
	}
	if addr, size, err := (&Host{}).ObjectSymbol(python, "Py_DebugFlag"); err != nil || addr == 0 || size != 4 {
		t.Errorf("ObjectSymbol(Py_DebugFlag) = %#x, %d, %v; want a 4-byte symbol", addr, size, err)
	}
}

// TestObjectSymbolNotRegular checks that ObjectSymbol does not open what
// is not a regular file (a FIFO would block).
func TestObjectSymbolNotRegular(t *testing.T) {
	for _, path := range []string{"/dev/null", "/"} {
		if _, _, err := (&Host{}).ObjectSymbol(path, "x"); !errors.Is(err, ErrNoSymbol) {
			t.Errorf("ObjectSymbol(%s) = %v, want ErrNoSymbol", path, err)
		}
	}
	if _, _, err := (&Host{}).ObjectSymbol("/no/such/file", "x"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("ObjectSymbol of a missing file = %v, want os.ErrNotExist", err)
	}
}

// TestHostFindTarget checks that the Host finds bare names as FindTarget
// does and says where it looked for one it cannot find, and that it asks
// for a -c command's objects only for a library name.
func TestHostFindTarget(t *testing.T) {
	testenv.RequireFile(t, "/usr/bin/python3.11")
	t.Setenv("PATH", "/usr/local/bin:/usr/bin:/bin")
	asked := 0
	h := &Host{Loaded: func() []string { asked++; return nil }}
	if path, err := h.FindTarget("python3.11"); err != nil || path != "/usr/bin/python3.11" {
		t.Errorf("FindTarget(python3.11) = %q, %v", path, err)
	}
	if asked != 0 {
		t.Errorf("a program's name read the command's objects")
	}
	if _, err := h.FindTarget("libnosuchlibrary"); err == nil || !strings.Contains(err.Error(), "loader's cache") {
		t.Errorf("FindTarget(libnosuchlibrary) = %v", err)
	}
	if _, err := h.FindTarget("libnosuchlibrary"); err == nil || asked != 1 {
		t.Errorf("the command's objects were read %d times, want once", asked)
	}
	if _, err := h.FindTarget("nosuchprogram"); err == nil || !strings.Contains(err.Error(), "$PATH") {
		t.Errorf("FindTarget(nosuchprogram) = %v", err)
	}
}

// TestHostProcessPath checks which target paths a -p process's mount
// namespace changes: none without -p, none relative, and none in a process
// of gotrace's own namespace (this test's).
func TestHostProcessPath(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	self := &Host{PID: os.Getpid()}
	for _, tc := range []struct {
		name string
		host *Host
		path string
	}{
		{"no -p", &Host{}, exe},
		{"relative", self, "./testprog"},
		{"same namespace", self, exe},
		{"no such file there", self, "/nonexistent/gotrace-target"},
	} {
		if got := tc.host.ProcessPath(tc.path); got != tc.path {
			t.Errorf("%s: ProcessPath(%q) = %q, want it unchanged", tc.name, tc.path, got)
		}
	}
}

// TestOwnPath checks the choice between a process's path and its
// /proc/PID/root path: the own path only when it is the same file.
func TestOwnPath(t *testing.T) {
	dir := t.TempDir()
	file, link, other := dir+"/file", dir+"/link", dir+"/other"
	for _, p := range []string{file, other} {
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Link(file, link); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path, theirs, want string
	}{
		{file, link, file},
		{file, other, other},
		{dir + "/missing", file, file},
	} {
		if got := ownPath(tc.path, tc.theirs); got != tc.want {
			t.Errorf("ownPath(%q, %q) = %q, want %q", tc.path, tc.theirs, got, tc.want)
		}
	}
}
