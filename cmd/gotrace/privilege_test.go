package main

// testscript commands for the privilege tests (testdata/script/privileges.txtar):
// a real static gotrace binary with file capabilities or set-uid, run by
// an unprivileged user.

import (
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/rogpeppe/go-internal/testscript"
	"golang.org/x/sys/unix"
)

// testUser is the unprivileged user the privilege tests run gotrace as;
// created (without a home) when missing.
const testUser = "gotrace-unpriv"

// testCaps are the capabilities privbin can give, by setcap's names.
var testCaps = map[string]int{
	"cap_bpf":             unix.CAP_BPF,
	"cap_perfmon":         unix.CAP_PERFMON,
	"cap_sys_admin":       unix.CAP_SYS_ADMIN,
	"cap_dac_override":    unix.CAP_DAC_OVERRIDE,
	"cap_dac_read_search": unix.CAP_DAC_READ_SEARCH,
}

// staticGotraceDir holds the binary staticGotrace builds; TestScript
// removes it at the end.
var staticGotraceDir string

// staticGotrace builds gotrace once per test run as the package does
// (CGO_ENABLED=0), into a directory anyone may read.
var staticGotrace = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "gotrace-privtest-")
	if err != nil {
		return "", err
	}
	staticGotraceDir = dir
	if err := os.Chmod(dir, 0o755); err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "gotrace")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return bin, nil
})

// unprivilegedUser looks up testUser, creating it when missing.
var unprivilegedUser = sync.OnceValues(func() (*user.User, error) {
	if u, err := user.Lookup(testUser); err == nil {
		return u, nil
	}
	out, err := exec.Command("useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", testUser).CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("useradd %s: %v\n%s", testUser, err, out)
	}
	return user.Lookup(testUser)
})

// cmdPrivbin copies a static gotrace into the work directory as NAME,
// with file capabilities (setcap's names, comma-separated, effective and
// permitted), set-uid root, or neither:
//
//	privbin NAME [CAP,CAP...|setuid]
//
// It also opens the work directory and its parents to everyone, so that
// the unprivileged user can reach the files a script names.
func cmdPrivbin(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 1 || len(args) > 2 {
		ts.Fatalf("usage: privbin NAME [CAP,CAP...|setuid]")
	}
	src, err := staticGotrace()
	ts.Check(err)
	b, err := os.ReadFile(src)
	ts.Check(err)
	dst := ts.MkAbs(args[0])
	ts.Check(os.WriteFile(dst, b, 0o755))
	for dir := ts.MkAbs("."); dir != os.TempDir() && dir != "/"; dir = filepath.Dir(dir) {
		fi, err := os.Stat(dir)
		ts.Check(err)
		ts.Check(os.Chmod(dir, fi.Mode().Perm()|0o055))
	}
	if len(args) == 1 {
		return
	}
	if args[1] == "setuid" {
		ts.Check(os.Chmod(dst, 0o755|os.ModeSetuid))
		return
	}
	var caps uint64
	for _, name := range strings.Split(args[1], ",") {
		c, ok := testCaps[name]
		if !ok {
			ts.Fatalf("privbin: unknown capability %q", name)
		}
		caps |= 1 << c
	}
	ts.Check(unix.Setxattr(dst, "security.capability", fileCaps(caps), 0))
}

// fileCaps encodes a permitted set as the kernel's security.capability
// attribute (struct vfs_cap_data, revision 2) with the effective flag:
// what setcap CAPS+ep writes.
func fileCaps(permitted uint64) []byte {
	const revision2, effective = 0x02000000, 0x1
	b := make([]byte, 0, 20)
	for _, v := range []uint32{revision2 | effective, uint32(permitted), 0, uint32(permitted >> 32), 0} {
		b = binary.LittleEndian.AppendUint32(b, v)
	}
	return b
}

// cmdAsUser runs a program as the unprivileged test user (its uid and
// gid, no supplementary groups) through setpriv, like exec:
//
//	[!] asuser PROGRAM [ARG...]
func cmdAsUser(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 1 {
		ts.Fatalf("usage: asuser PROGRAM [ARG...]")
	}
	u, err := unprivilegedUser()
	ts.Check(err)
	uid, err := strconv.Atoi(u.Uid)
	ts.Check(err)
	gid, err := strconv.Atoi(u.Gid)
	ts.Check(err)
	setpriv := []string{fmt.Sprintf("--reuid=%d", uid), fmt.Sprintf("--regid=%d", gid), "--clear-groups", "--"}
	err = ts.Exec("setpriv", append(setpriv, args...)...)
	if neg {
		if err == nil {
			ts.Fatalf("unexpected success")
		}
		return
	}
	ts.Check(err)
}
