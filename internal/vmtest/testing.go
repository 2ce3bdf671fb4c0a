package vmtest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/gotrace/gotrace/internal/regtest"
	"github.com/gotrace/gotrace/internal/testenv"
)

// All reports whether the whole VM suite runs (GOTRACE_VMTEST=all, which
// hack/vmtest.sh sets) rather than the smoke set that go test ./... runs.
func All() bool { return os.Getenv("GOTRACE_VMTEST") == "all" }

// Require returns arch's assets, or stops t when qemu or the cached kernel
// is missing: that is a set-up step not run (hack/setup.sh), so under CI
// the test fails.
func Require(t testing.TB, arch Arch) Assets {
	t.Helper()
	a, err := Find(arch)
	if err != nil || testing.Short() {
		testenv.Unavailable(t, "a %s guest: %v", arch.Name, err)
	}
	return a
}

// Start boots g for t and returns the results of its cases; a guest that
// does not finish its cases fails t with the console's end. The boot is
// bounded by t's deadline (less a minute to report) or 20 minutes; qemu
// never outlives Start. Each boot's time is logged.
func Start(t testing.TB, g Guest) *Boot {
	t.Helper()
	a := Require(t, g.Arch)
	deadline := time.Now().Add(20 * time.Minute)
	if d, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		if td, ok := d.Deadline(); ok && td.Add(-time.Minute).Before(deadline) {
			deadline = td.Add(-time.Minute)
		}
	}
	ctx, cancel := context.WithDeadlineCause(context.Background(), deadline,
		fmt.Errorf("the %s guest did not finish its cases by the test's deadline", g.Arch.Name))
	defer cancel()
	b, err := Run(ctx, g)
	if err != nil {
		t.Fatalf("%v", err)
	}
	t.Logf("%s guest (%s): /init started %.1fs after qemu (guest uptime %.2fs); %d cases done and powered off after %.1fs",
		g.Arch.Name, a.KernelRelease, b.ToBoot.Seconds(), b.GuestUptime, len(b.Results), b.Total.Seconds())
	return b
}

// Result returns case name's result from b, failing t when the guest did
// not run it.
func (b *Boot) Result(t testing.TB, name string) Result {
	t.Helper()
	r, ok := b.Results[name]
	if !ok {
		t.Fatalf("case %s has no result; console:\n%s", name, tail(b.Console))
	}
	return r
}

var (
	buildMu sync.Mutex
	builds  = map[string][]byte{}
)

// Gotrace returns the gotrace binary built for goarch from this
// repository (once per test binary) as the guest's /bin/gotrace.
func Gotrace(t testing.TB, goarch string) Entry {
	t.Helper()
	data, err := buildGotrace(goarch)
	if err != nil {
		t.Fatal(err)
	}
	return Entry{Path: "/bin/gotrace", Mode: 0o755, Data: data}
}

// buildGotrace builds cmd/gotrace for goarch (static: CGO_ENABLED=0) and
// returns the binary's bytes, once per goarch in a test binary.
func buildGotrace(goarch string) ([]byte, error) {
	buildMu.Lock()
	defer buildMu.Unlock()
	if data, ok := builds[goarch]; ok {
		return data, nil
	}
	dir, err := os.MkdirTemp("", "gotrace-vmtest-build-")
	if err != nil {
		return nil, fmt.Errorf("build gotrace for %s: %w", goarch, err)
	}
	defer os.RemoveAll(dir)
	root, err := regtest.RepoRoot()
	if err != nil {
		return nil, err
	}
	bin := filepath.Join(dir, "gotrace")
	cmd := exec.Command(goTool(), "build", "-o", bin, "./cmd/gotrace")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH="+goarch, "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("build gotrace for %s: %w\n%s", goarch, err, out)
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		return nil, fmt.Errorf("build gotrace for %s: %w", goarch, err)
	}
	builds[goarch] = data
	return data, nil
}

// goTool is the go command of the toolchain running the tests.
func goTool() string {
	p := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(p); err == nil {
		return p
	}
	return "go"
}

// File returns the host file at path as an entry at guest path dst.
func File(t testing.TB, path, dst string) Entry {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	mode := os.FileMode(0o644)
	if st, err := os.Stat(path); err == nil {
		mode = st.Mode().Perm()
	}
	return Entry{Path: dst, Mode: mode, Data: data}
}
