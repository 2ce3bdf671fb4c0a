package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/gotrace/gotrace/internal/thread"
	"github.com/gotrace/gotrace/lang"
	"github.com/gotrace/gotrace/runtime/proc"
	"github.com/gotrace/gotrace/usdt"
)

// privileges is what this process may do, found out once.
var privileges = sync.OnceValue(proc.CurrentPrivileges)

// elevated says whether gotrace runs with privileges for a user who is
// not root (file capabilities, set-uid or set-gid): the files that user
// names are then opened with the user's own rights (asUser).
func elevated() bool {
	p := privileges()
	return p.UID != 0 && (p.EUID != p.UID || os.Getegid() != os.Getgid() || p.Caps != 0)
}

// asUser runs fn with the file-system rights of the user who started
// gotrace when gotrace is elevated, and plainly otherwise. fn runs on a
// thread of its own whose file-system user and group are the real ones
// and whose effective capabilities are dropped, so every file it opens is
// checked as that user's; the thread is thrown away afterwards (its
// goroutine ends locked to it), so no other code ever runs with the
// lowered rights. fn must open its files on its own goroutine.
func asUser(fn func() error) error {
	if !elevated() {
		return fn()
	}
	return thread.Restricted(lowerThreadRights, fn)
}

// lowerThreadRights gives the calling thread the real user's and group's
// file-system identity and no effective capabilities.
func lowerThreadRights() error {
	if err := unix.Setfsgid(os.Getgid()); err != nil {
		return fmt.Errorf("take the user's group for opening files: %w", err)
	}
	if err := unix.Setfsuid(os.Getuid()); err != nil {
		return fmt.Errorf("take the user's rights for opening files: %w", err)
	}
	// setfsuid reports no error; read the value back.
	if got, _ := unix.SetfsuidRetUid(-1); got != os.Getuid() {
		return fmt.Errorf("take the user's rights for opening files: file-system uid is %d, not %d", got, os.Getuid())
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("read capabilities: %w", err)
	}
	data[0].Effective, data[1].Effective = 0, 0
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("drop capabilities for opening files: %w", err)
	}
	return nil
}

// readFileAsUser is os.ReadFile with the user's rights.
func readFileAsUser(name string) ([]byte, error) {
	var b []byte
	err := asUser(func() error {
		var err error
		b, err = os.ReadFile(name)
		return err
	})
	return b, err
}

// createAsUser is os.Create with the user's rights: an -o file the user
// may not write is not overwritten, and a new one belongs to the user.
func createAsUser(name string) (*os.File, error) {
	var f *os.File
	err := asUser(func() error {
		var err error
		f, err = os.Create(name)
		return err
	})
	return f, err
}

// checkPrivileges refuses, before the script is read, a run that needs
// more than the process has: loading programs without CAP_BPF and
// CAP_PERFMON (and naming how to get them), and for an elevated user,
// what would hand the privileges on (--unsafe's system() and cat(), a -c
// command started by a set-uid gotrace or as another user).
func checkPrivileges(f *flags, args []string) error {
	if elevated() {
		if f.unsafe {
			return errors.New("--unsafe is refused when gotrace runs with privileges for a user who is not root: system() and cat() would use them")
		}
		if f.user != "" {
			return errors.New("--user is refused when gotrace runs with privileges for a user who is not root: the command runs as you")
		}
		if p := privileges(); f.command != "" && p.EUID != p.UID {
			return errors.New("-c is refused when gotrace is set-uid for a user who is not root: the command would run as the file's owner; start it yourself and use -p PID")
		}
	}
	if !loads(f) || f.program == "" && len(args) == 0 {
		// Without a program, the usage error comes first.
		return nil
	}
	return privileges().Check(false, executable)
}

// loads says whether the flags ask for a run that loads programs (not a
// dry run, a debug listing or a listing of probes).
func loads(f *flags) bool {
	return !f.list && !f.dryRun && f.debug.level == 0 && f.debug.stage == ""
}

// executable is the path of the running gotrace, for the setcap hint.
func executable() string {
	exe, err := os.Executable()
	if err != nil {
		return "gotrace"
	}
	return exe
}

// checkProgram refuses, before anything is compiled, what the checked
// program needs and the process cannot give: uprobes where this kernel
// refuses them to its capabilities, and, for an elevated user, a target
// file that user may not read or a -p process that is not the user's.
func checkProgram(f *flags, prog *lang.Program, params []string, pid int) error {
	uprobes := false
	for _, p := range prog.Probes {
		for _, a := range p.Attach {
			switch a.Kind {
			case lang.ProbeUSDT, lang.ProbeUprobe, lang.ProbeUretprobe:
				uprobes = true
				if elevated() {
					if err := userMayRead(targetName(a.Target, params)); err != nil {
						return fmt.Errorf("%s: %w", a.Raw, err)
					}
				}
			}
		}
	}
	if elevated() && pid != 0 {
		if err := userOwnsProcess(pid); err != nil {
			return err
		}
	}
	if uprobes && loads(f) {
		return privileges().Check(true, executable)
	}
	return nil
}

// targetName is an attach point's target with a positional parameter
// ($1) replaced by its value.
func targetName(target string, params []string) string {
	if n, err := strconv.Atoi(strings.TrimPrefix(target, "$")); err == nil && strings.HasPrefix(target, "$") && n >= 1 && n <= len(params) {
		return params[n-1]
	}
	return target
}

// userMayRead checks, with the user's rights, that every file a target
// names can be read, for a message at the attach point (the files are
// read and attached to only through descriptors opened with those rights
// too: usdt.SetOpenRights): a path or glob (with a slash) must match at least
// one file the user can open; a bare name is looked up as attaching
// looks it up (a library in the loader's cache, the working directory,
// $PATH). An empty target (usdt::provider:name with -p or -c) names the
// process's own files.
func userMayRead(target string) error {
	if target == "" {
		return nil
	}
	return asUser(func() error {
		names := []string{target}
		if strings.Contains(target, "/") {
			matches, err := filepath.Glob(target)
			if err != nil || len(matches) == 0 {
				if _, statErr := os.Stat(target); statErr != nil {
					return fmt.Errorf("cannot read %s with your rights: %w", target, statErr)
				}
				matches = []string{target}
			}
			names = matches
		} else if found := usdt.FindTarget(target, nil, nil); found != "" {
			names = []string{found}
		} else {
			// Not found: attaching says so with its own diagnostic.
			return nil
		}
		for _, name := range names {
			file, err := os.Open(name)
			if err != nil {
				return fmt.Errorf("cannot read %s with your rights: %w", name, err)
			}
			file.Close()
		}
		return nil
	})
}

// userOwnsProcess checks that process pid runs as the user (real, saved
// and effective uid), as tracing it without privileges would ask.
func userOwnsProcess(pid int) error {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if errors.Is(err, fs.ErrNotExist) {
		return nil // -p's own check says that the process does not exist
	}
	if err != nil {
		return fmt.Errorf("read the owner of process %d: %w", pid, err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		ids, ok := strings.CutPrefix(line, "Uid:")
		if !ok {
			continue
		}
		uid := strconv.Itoa(os.Getuid())
		for _, id := range strings.Fields(ids) {
			if id != uid {
				return fmt.Errorf("process %d does not run as you (uid %s): with privileges from file capabilities or set-uid, gotrace traces only your own processes", pid, uid)
			}
		}
		return nil
	}
	return fmt.Errorf("read the owner of process %d: no Uid line", pid)
}
