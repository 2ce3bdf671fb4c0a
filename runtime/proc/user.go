package proc

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"strconv"
	"strings"
	"syscall"
)

// childSignal is the signal the -c command gets when gotrace dies without
// ending the trace (SIGKILL, a crash): SIGTERM, which ends it at the normal
// end of a trace too, lets bitcoind shut down cleanly.
const childSignal = syscall.SIGTERM

// credential is the user a -c command runs as.
type credential struct {
	uid, gid uint32
	groups   []uint32
	// name and home, when known, become USER, LOGNAME and HOME.
	name, home string
}

// RunAs chooses the user a -c command runs as.
type RunAs struct {
	// User is a user name or a numeric uid (--user); only root can
	// run the command as another user.
	User string
	// Root keeps gotrace's own user, root under sudo (--as-root); it
	// excludes User.
	Root bool
}

// credential returns whom the -c command runs as, or nil to run it as
// gotrace itself: the user as.User names; with no user named and gotrace
// running as root under sudo, the user who ran sudo (SUDO_UID, SUDO_GID),
// so that a bitcoind leaves no root-owned files in its data directory;
// as.Root keeps gotrace's own user.
func (as RunAs) credential() (*credential, error) {
	switch {
	case as.Root && as.User != "":
		return nil, errors.New("choose the command's user: --user and --as-root exclude each other")
	case as.Root:
		return nil, nil
	case as.User != "":
		if os.Geteuid() != 0 {
			return nil, fmt.Errorf("run the command as %s: only root can, and gotrace runs as uid %d", as.User, os.Geteuid())
		}
		return lookupCredential(as.User)
	}
	uid, ok := os.LookupEnv("SUDO_UID")
	if !ok || os.Geteuid() != 0 || uid == "0" {
		return nil, nil
	}
	return sudoCredential(uid, os.Getenv("SUDO_GID"), os.Getenv("SUDO_USER"))
}

// lookupCredential finds a user by name or numeric uid in the user
// database, with its primary group and supplementary groups.
func lookupCredential(name string) (*credential, error) {
	var u *user.User
	var err error
	if _, numErr := strconv.ParseUint(name, 10, 32); numErr == nil {
		u, err = user.LookupId(name)
	} else {
		u, err = user.Lookup(name)
	}
	if err != nil {
		return nil, fmt.Errorf("look up user %s: %w", name, err)
	}
	return userCredential(u)
}

// userCredential is u's credential: its uid, primary gid and every group
// the group database lists it in.
func userCredential(u *user.User) (*credential, error) {
	c := &credential{name: u.Username, home: u.HomeDir}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("read uid of user %s: %w", u.Username, err)
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("read gid of user %s: %w", u.Username, err)
	}
	c.uid, c.gid = uint32(uid), uint32(gid)
	ids, err := u.GroupIds()
	if err != nil {
		return nil, fmt.Errorf("read groups of user %s: %w", u.Username, err)
	}
	for _, id := range ids {
		g, err := strconv.ParseUint(id, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("read groups of user %s: %w", u.Username, err)
		}
		c.groups = append(c.groups, uint32(g))
	}
	if len(c.groups) == 0 {
		c.groups = []uint32{c.gid}
	}
	return c, nil
}

// sudoCredential is the credential of the user who ran sudo: SUDO_UID and
// SUDO_GID, with the groups and home directory the user database gives
// that uid (only the primary group if it has no entry).
func sudoCredential(uidText, gidText, name string) (*credential, error) {
	uid, err := strconv.ParseUint(uidText, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("read SUDO_UID %q: %w", uidText, err)
	}
	c := &credential{uid: uint32(uid), gid: uint32(uid), name: name}
	if u, err := user.LookupId(uidText); err == nil {
		if c, err = userCredential(u); err != nil {
			return nil, err
		}
	}
	if gidText != "" {
		gid, err := strconv.ParseUint(gidText, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("read SUDO_GID %q: %w", gidText, err)
		}
		c.gid = uint32(gid)
	}
	if len(c.groups) == 0 {
		c.groups = []uint32{c.gid}
	}
	return c, nil
}

// env returns environ for a command run as c: HOME, USER and LOGNAME are
// c's.
func (c *credential) env(environ []string) []string {
	set := map[string]string{}
	if c.home != "" {
		set["HOME"] = c.home
	}
	if c.name != "" {
		set["USER"], set["LOGNAME"] = c.name, c.name
	}
	out := make([]string, 0, len(environ)+4)
	for _, kv := range environ {
		k, _, _ := strings.Cut(kv, "=")
		if _, ok := set[k]; !ok {
			out = append(out, kv)
		}
	}
	for _, k := range []string{"HOME", "USER", "LOGNAME"} {
		if v, ok := set[k]; ok {
			out = append(out, k+"="+v)
		}
	}
	return out
}

// sys is c as the credential the child takes in Go's fork, before it
// executes the gate: groups first, then the group, then the user.
func (c *credential) sys() *syscall.Credential {
	return &syscall.Credential{Uid: c.uid, Gid: c.gid, Groups: c.groups}
}
