package regtest_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gotrace/gotrace/internal/peersuite"
	"github.com/gotrace/gotrace/internal/regtest"
)

// gotraceBin is gotrace built once for this test process by TestMain; ""
// when the build failed (buildErr says why).
var gotraceBin string
var buildErr error

// TestMain builds gotrace once for every test here and removes it after.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "gotrace-regtest-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	flag.Parse()
	if !testing.Short() {
		gotraceBin, buildErr = peersuite.BuildGotrace(dir)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// gotrace returns the gotrace binary, failing t if it could not be built.
func gotrace(t *testing.T) string {
	t.Helper()
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return gotraceBin
}

// script writes testdata/NAME with BITCOIND replaced by the path of the
// real bitcoind into a temporary file and returns its path.
func script(t *testing.T, name string, n *regtest.Node) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(strings.ReplaceAll(string(b), "BITCOIND", n.Bitcoind)), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
