package proc

import (
	"errors"
	"fmt"
	"os"
	goruntime "runtime"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Privileges is what the current process may do with eBPF: who runs it,
// its effective capabilities, the kernel settings that decide, and the
// result of trying what capabilities alone cannot tell.
type Privileges struct {
	// UID and EUID are the real and effective user IDs.
	UID, EUID int
	// Caps is the effective capability set, one bit per CAP_ number.
	Caps uint64
	// PerfEventParanoid and UnprivilegedBPFDisabled are the sysctls
	// kernel.perf_event_paranoid and kernel.unprivileged_bpf_disabled;
	// -1 and -1 when they cannot be read (-1 is also a real value of the
	// first, which then allows everything anyway). Set by ReadSettings.
	PerfEventParanoid, UnprivilegedBPFDisabled int
	// Lockdown is the kernel lockdown mode (none, integrity,
	// confidentiality), "" when securityfs does not say. Set by
	// ReadSettings.
	Lockdown string
	// UprobeErr is why a uprobe perf event cannot be opened, nil when it
	// can; ProfileErr the same for a CPU clock perf event on every process
	// (profile probes). Set by Try.
	UprobeErr, ProfileErr error
}

// CapName is the name of capability c (CAP_SYS_ADMIN, CAP_PERFMON or
// CAP_BPF, the ones that matter to gotrace), "" for another.
func CapName(c int) string { return capNames[c] }

// capNames are the capabilities that matter to gotrace, by number.
var capNames = map[int]string{
	unix.CAP_SYS_ADMIN: "CAP_SYS_ADMIN",
	unix.CAP_PERFMON:   "CAP_PERFMON",
	unix.CAP_BPF:       "CAP_BPF",
}

// CurrentPrivileges finds out what this process may do with eBPF from
// its IDs and capabilities, without reading the kernel's settings
// (ReadSettings does) or trying anything (Try does). A trace's privilege
// check needs only these: reading the settings' three files at every
// start took 0.3 ms of a BEGIN { exit(); } on this project's VM (issue 24).
func CurrentPrivileges() Privileges {
	p := Privileges{UID: os.Getuid(), EUID: os.Geteuid()}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err == nil {
		p.Caps = uint64(data[0].Effective) | uint64(data[1].Effective)<<32
	}
	return p
}

// ReadSettings reads the kernel's settings that decide what a process
// without privileges may trace: kernel.perf_event_paranoid,
// kernel.unprivileged_bpf_disabled and the lockdown mode.
func (p *Privileges) ReadSettings() {
	p.PerfEventParanoid = readInt("/proc/sys/kernel/perf_event_paranoid")
	p.UnprivilegedBPFDisabled = readInt("/proc/sys/kernel/unprivileged_bpf_disabled")
	p.Lockdown = lockdownMode()
}

// Try opens a uprobe and a profile perf event to see whether the kernel
// allows them to this process, which capabilities alone do not tell
// (some kernels want CAP_SYS_ADMIN for uprobes).
func (p *Privileges) Try() {
	if p.CanLoad() {
		p.UprobeErr = tryUprobe()
		p.ProfileErr = tryProfile()
	}
}

// Has says whether the effective set holds capability c (a unix.CAP_
// number).
func (p Privileges) Has(c int) bool { return p.Caps&(1<<uint(c)) != 0 }

// CanLoad says whether the process may create maps and load tracing
// programs: the kernel asks for CAP_BPF and CAP_PERFMON, each of which
// CAP_SYS_ADMIN stands in for.
func (p Privileges) CanLoad() bool {
	admin := p.Has(unix.CAP_SYS_ADMIN)
	return (admin || p.Has(unix.CAP_BPF)) && (admin || p.Has(unix.CAP_PERFMON))
}

// Missing names the capabilities of CAP_BPF, CAP_PERFMON and, when
// uprobes asks for it, CAP_SYS_ADMIN that the process lacks.
func (p Privileges) Missing(uprobes bool) []string {
	var m []string
	for _, c := range []int{unix.CAP_BPF, unix.CAP_PERFMON, unix.CAP_SYS_ADMIN} {
		if c == unix.CAP_SYS_ADMIN && !uprobes {
			continue
		}
		if !p.Has(c) && !(c != unix.CAP_SYS_ADMIN && p.Has(unix.CAP_SYS_ADMIN)) {
			m = append(m, capNames[c])
		}
	}
	return m
}

// Check says what is missing, and how to get it, for a run that loads
// programs and, when uprobes is set, attaches uprobes or usdt probes; nil
// when nothing is. Without CAP_SYS_ADMIN it tries a uprobe to find out.
// exe gives the path of the gotrace binary, for setcap; it is called only
// when something is missing, as the check runs before every trace and
// finding the path reads /proc/self/exe (issue 24).
func (p Privileges) Check(uprobes bool, exe func() string) error {
	if !p.CanLoad() {
		return fmt.Errorf("gotrace needs privileges to load eBPF programs, and this process (uid %d) lacks %s: %s", p.EUID, strings.Join(p.Missing(false), " and "), howToGet(exe()))
	}
	if !uprobes || p.Has(unix.CAP_SYS_ADMIN) {
		return nil
	}
	if err := tryUprobe(); err != nil {
		return fmt.Errorf("gotrace cannot attach uprobes or usdt probes with this process's capabilities (opening a uprobe: %v); it lacks %s: %s", err, strings.Join(p.Missing(true), " and "), howToGet(exe()))
	}
	return nil
}

// howToGet says how to give the gotrace binary at exe the privileges it
// lacks.
func howToGet(exe string) string {
	return fmt.Sprintf("run it as root (sudo), or give the binary these capabilities: sudo setcap cap_bpf,cap_perfmon,cap_sys_admin+ep %s (CAP_SYS_ADMIN for uprobes and usdt probes, which some kernels open only with it; gotrace --info says whether this one does)", exe)
}

// readInt reads a decimal number from a file of /proc/sys or sysfs, -1
// when it cannot.
func readInt(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return -1
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return -1
	}
	return n
}

// lockdownMode is the selected mode of /sys/kernel/security/lockdown
// ("none [integrity] confidentiality" gives integrity), "" when that file
// cannot be read.
func lockdownMode() string {
	b, err := os.ReadFile("/sys/kernel/security/lockdown")
	if err != nil {
		return ""
	}
	s := string(b)
	if i := strings.IndexByte(s, '['); i >= 0 {
		if j := strings.IndexByte(s[i:], ']'); j > 0 {
			return s[i+1 : i+j]
		}
	}
	return strings.TrimSpace(s)
}

// uprobeCheckPath is a path that never exists (no descriptor is -1):
// the kernel checks the caller's rights for a uprobe before it looks the
// path up, so ENOENT means allowed, and nothing is registered (adding
// and removing a real uprobe takes it a second or more).
const uprobeCheckPath = "/proc/self/fd/-1"

// tryUprobe opens a uprobe perf event as attaching does, on a path that
// does not exist, to learn whether the kernel allows it.
func tryUprobe() error {
	typ := readInt("/sys/bus/event_source/devices/uprobe/type")
	if typ < 0 {
		return errors.New("this kernel has no uprobe PMU")
	}
	path, err := unix.BytePtrFromString(uprobeCheckPath)
	if err != nil {
		return err
	}
	attr := unix.PerfEventAttr{
		Size: unix.PERF_ATTR_SIZE_VER1,
		Type: uint32(typ),
		Ext1: uint64(uintptr(unsafe.Pointer(path))),
	}
	fd, err := unix.PerfEventOpen(&attr, -1, 0, -1, unix.PERF_FLAG_FD_CLOEXEC)
	goruntime.KeepAlive(path)
	switch {
	case errors.Is(err, unix.ENOENT):
		return nil
	case err != nil:
		return err
	}
	unix.Close(fd)
	return fmt.Errorf("opened a uprobe on %s, which cannot exist", uprobeCheckPath)
}

// tryProfile opens a CPU clock perf event for every process on CPU 0, as
// a profile probe does.
func tryProfile() error {
	attr := unix.PerfEventAttr{
		Size:   uint32(unsafe.Sizeof(unix.PerfEventAttr{})),
		Type:   unix.PERF_TYPE_SOFTWARE,
		Config: unix.PERF_COUNT_SW_CPU_CLOCK,
		Sample: 1000000,
		Bits:   unix.PerfBitDisabled,
	}
	fd, err := unix.PerfEventOpen(&attr, -1, 0, -1, unix.PERF_FLAG_FD_CLOEXEC)
	if err != nil {
		return err
	}
	return unix.Close(fd)
}
