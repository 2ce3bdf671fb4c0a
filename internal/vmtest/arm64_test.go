package vmtest

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gotrace/gotrace/internal/fixture"
	"github.com/gotrace/gotrace/internal/regtest"
	"github.com/gotrace/gotrace/internal/testenv"
)

// netmsgScript is scripts/netmsg.bt with the header the differential
// test gives it (testdata/diff/scripts/netmsg.header): the fixture's
// arguments and the masks of its timestamps.
func netmsgScript(t *testing.T) *fixture.Script {
	t.Helper()
	root, err := regtest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(root, "scripts", "netmsg.bt")
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	header, err := os.ReadFile(filepath.Join(root, "testdata", "diff", "scripts", "netmsg.header"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := fixture.ParseHeader(path, string(header))
	if err != nil {
		t.Fatal(err)
	}
	s.Source = string(src)
	return s
}

// TestARM64 runs gotrace in an emulated arm64 with Debian's arm64 kernel:
// scripts/netmsg.bt on the fixture cross-built for arm64 must print what
// it prints on this x86-64 machine, timestamps masked. The whole suite
// adds the kernel probe cases, on arm64's pt_regs.
func TestARM64(t *testing.T) {
	t.Parallel()
	Require(t, ARM64)
	testenv.RequireRoot(t) // the x86-64 reference run
	s := netmsgScript(t)
	guestFixture := "/tmp/fixture.out"
	cases := []vmCase{{
		Case:  Case{Name: "netmsg", Script: "cd /work && gotrace -c '" + s.Command("--output", guestFixture) + "' netmsg.bt 2>/tmp/netmsg.err || { cat /tmp/netmsg.err; exit 1; }"},
		smoke: true,
	}, {
		Case: Case{Name: "list-usdt", Script: "gotrace -l 'usdt:/work/bitcoind:net:*'; gotrace -e 'usdt:/work/bitcoind:net:inbound_message { printf(\"%d %s %d\\n\", (int64)arg0, str(arg3), reg(\"r0\") == arg0); exit(); }' -c /work/bitcoind"},
		want: []string{`usdt:/work/bitcoind:net:inbound_message`, `usdt:/work/bitcoind:net:outbound_message`, `[0-9]+ [a-z]+ 1`},
	}}
	for _, c := range kernelCases {
		c.smoke = false
		if c.Name == "kfunc" || c.Name == "kfunc-wildcard" {
			// Debian's arm64 6.1 has no BPF trampolines (arm64 got
			// them with direct calls in 6.4): gotrace must say so.
			c.want = []string{`ERROR: attach kfunc:do_sys_open[a-z0-9]*: the kernel refuses fentry/fexit programs: .*`}
			c.exit = 1
		}
		cases = append(cases, c)
	}
	libs := append(arm64Libs(t),
		File(t, fixture.BuildARM64(t, s.Variant), "/work/bitcoind"),
		Entry{Path: "/work/netmsg.bt", Mode: 0o644, Data: []byte(s.Source)},
	)
	b := runCases(t, ARM64, cases, libs...)

	guest := b.Result(t, "netmsg")
	if guest.Exit != 0 {
		t.Fatalf("netmsg.bt in the arm64 guest: exit %d:\n%s", guest.Exit, guest.Output)
	}
	host := hostNetmsg(t, s)
	if g, h := s.Normalize(guest.Output), s.Normalize(host); g != h {
		t.Errorf("netmsg.bt on arm64 and on x86-64 differ, timestamps masked:\n--- arm64\n%s\n--- x86-64\n%s", g, h)
	}
	for _, e := range s.Expect {
		n := 0
		for _, l := range strings.Split(guest.Output, "\n") {
			if e.Re.MatchString(l) {
				n++
			}
		}
		if n != e.Count {
			t.Errorf("arm64 output has %d lines matching %v, want %d", n, e.Re, e.Count)
		}
	}
}

// arm64Libs are the guest's C library, from Debian's cross toolchain, at
// the paths an arm64 Debian has them: the fixture is linked against it.
func arm64Libs(t *testing.T) []Entry {
	return []Entry{
		File(t, "/usr/aarch64-linux-gnu/lib/ld-linux-aarch64.so.1", "/lib/ld-linux-aarch64.so.1"),
		File(t, "/usr/aarch64-linux-gnu/lib/libc.so.6", "/lib/aarch64-linux-gnu/libc.so.6"),
	}
}

// hostNetmsg runs netmsg.bt with gotrace on this machine on the x86-64
// fixture, in a directory of its own, and returns its standard output.
func hostNetmsg(t *testing.T, s *fixture.Script) string {
	t.Helper()
	dir := t.TempDir()
	gt := Gotrace(t, "amd64")
	if err := os.WriteFile(filepath.Join(dir, "gotrace"), gt.Data, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := fixture.Copy(fixture.Build(t, s.Variant), dir); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "netmsg.bt"), []byte(s.Source), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(dir, "gotrace"), "-c", s.Command("--output", filepath.Join(dir, "fixture.out")), "netmsg.bt")
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("netmsg.bt on this machine: %v\n%s", err, stderr.String())
	}
	return strings.TrimRight(string(out), "\n") + "\n"
}
