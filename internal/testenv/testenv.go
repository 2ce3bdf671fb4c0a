// Package testenv decides whether a test that needs the machine (root for
// eBPF, gcc, bpftrace, a system binary) can run. In a developer's shell a
// missing requirement skips the test; under CI (CI=true) it fails it, so that
// CI never passes by skipping; only a feature the machine lacks
// (RequireCapability) skips under CI too.
//
// There are two tiers. go test -short is the hermetic one: every test
// that asks for something of the machine through this package is skipped,
// so what runs needs neither root, nor bpftrace, nor a real target, and
// runs as any user in about a minute. The full tier (no -short) is what
// CI runs.
package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"testing"

	"github.com/gotrace/gotrace/internal/capability"
)

// init drops what sudo sets: under sudo, gotrace runs a -c command as the
// user who ran sudo, and the tests' commands write where only root may.
// "sudo go test" then tests what a run as root tests.
func init() {
	for _, name := range []string{"SUDO_UID", "SUDO_GID", "SUDO_USER"} {
		os.Unsetenv(name)
	}
}

// InCI reports whether the tests run under CI (CI=true).
func InCI() bool { return os.Getenv("CI") == "true" }

// Unavailable skips t, or fails it under CI, saying why. Under -short
// it skips t always: that tier asks nothing of the machine.
func Unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	if testing.Short() {
		t.Skipf("-short: "+format, args...)
	}
	if InCI() {
		t.Fatalf("required under CI: "+format, args...)
	}
	t.Skipf(format, args...)
}

// RequireRoot stops t unless it runs as root, which loading eBPF needs,
// and under -short.
func RequireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 || testing.Short() {
		Unavailable(t, "needs root to load eBPF programs")
	}
}

// RequireTool returns the path of the named program, or stops t when it is
// not installed.
func RequireTool(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil || testing.Short() {
		Unavailable(t, "needs %s: %v", name, err)
	}
	return p
}

// RequireFile stops t unless path exists (a system binary that a test reads).
func RequireFile(t testing.TB, path string) {
	t.Helper()
	if _, err := os.Stat(path); err != nil || testing.Short() {
		Unavailable(t, "needs %s: %v", path, err)
	}
}

// RequireBpftrace returns the path of bpftrace, the oracle that tests
// compare gotrace with, or stops t when it is not installed or cannot run:
// it loads eBPF programs, so it needs root.
func RequireBpftrace(t testing.TB) string {
	t.Helper()
	RequireRoot(t)
	return RequireTool(t, "bpftrace")
}

// RequireCapability stops t unless this machine has feature f, as
// internal/capability finds by trying it (the table gotrace --info
// prints), and returns f's row. A machine that lacks the feature is a fact
// of the machine, not a set-up step missed, so t skips even under CI,
// naming the feature and what trying it showed; notes (another tool's
// result, say) are added to the message. Where this process may not try
// the feature (no CAP_BPF), and under -short, t is Unavailable.
func RequireCapability(t testing.TB, f capability.Feature, notes ...string) capability.Row {
	t.Helper()
	if testing.Short() {
		Unavailable(t, "needs %s", f)
	}
	r := capability.Of(f)
	msg := fmt.Sprintf("%s: %s", f, r.Evidence)
	for _, n := range notes {
		msg += "; " + n
	}
	switch {
	case r.Unknown:
		Unavailable(t, "needs %s", msg)
	case !r.Available:
		t.Skipf("this machine lacks %s", msg)
	}
	return r
}

// TakePID has start start processes until one gets pid, a pid that is
// free, and returns: before each, ns_last_pid is set to the pid before
// it, so that the next process created gets it. start returns the pid
// its process got, and ends the process itself when it is not pid.
// Another process of the machine may take the pid first, so it tries
// again, a bounded number of times, and fails t after them. Setting
// ns_last_pid needs root.
func TakePID(t testing.TB, pid int, start func() int) {
	t.Helper()
	const tries = 200
	for range tries {
		if err := os.WriteFile("/proc/sys/kernel/ns_last_pid", []byte(fmt.Sprint(pid-1)), 0); err != nil {
			Unavailable(t, "set ns_last_pid: %v", err)
		}
		if start() == pid {
			return
		}
	}
	t.Fatalf("no process got pid %d in %d tries: others took it first", pid, tries)
}
