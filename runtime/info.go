package runtime

import (
	"fmt"
	"io"
	goruntime "runtime"
	"runtime/debug"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/gotrace/gotrace/internal/capability"
	"github.com/gotrace/gotrace/runtime/proc"
)

// testedWhere says, for each architecture gotrace builds for, where its
// probe kinds are tested (docs/vmtest.md has the table).
var testedWhere = map[string]string{
	"amd64": "x86_64 (usdt, uprobe, tracepoint, profile tested on Linux 6.18 against bpftrace 0.17; kprobe, kretprobe, kfunc, kretfunc and watchpoint in an emulated x86-64 with Debian's 6.1 against bpftrace 0.17 run there)",
	"arm64": "aarch64 (usdt, uprobe, tracepoint, software, kprobe, kretprobe tested in an emulated arm64 with Debian's 6.1, usdt, uprobe and tracepoint against gotrace's output on x86_64; that kernel refuses kfunc)",
}

// WriteInfo prints what gotrace finds on this system (--info): the
// kernel, its build, the kernel and CPU features gotrace uses, each tried
// the way gotrace would use it (internal/capability), and the privileges
// of the user.
func WriteInfo(w io.Writer, version string) {
	var u unix.Utsname
	_ = unix.Uname(&u)
	fmt.Fprintf(w, "System\n  OS: %s %s %s\n  Arch: %s\n",
		unix.ByteSliceToString(u.Sysname[:]), unix.ByteSliceToString(u.Release[:]),
		unix.ByteSliceToString(u.Version[:]), unix.ByteSliceToString(u.Machine[:]))

	fmt.Fprintf(w, "\nBuild\n  version: %s\n  Go: %s\n", version, goruntime.Version())
	fmt.Fprintf(w, "  built for: %s\n", testedWhere[goruntime.GOARCH])
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, m := range bi.Deps {
			if m.Path == "github.com/cilium/ebpf" {
				fmt.Fprintf(w, "  cilium/ebpf: %s\n", m.Version)
			}
		}
	}

	// bpftrace's own words, which its tests look for: gotrace reads
	// DWARF itself rather than with libdw.
	fmt.Fprintf(w, "  libdw (DWARF support): yes (read with Go's debug/dwarf: a uprobe's args and the parameters -lv lists)\n")

	// Every row comes from the table the runtime and the tests decide
	// by, so what --info says is what gotrace does.
	fmt.Fprintf(w, "\nKernel and CPU features (each tried here)\n")
	for _, r := range capability.All() {
		fmt.Fprintf(w, "  %s\n", r)
	}

	yes := func(what string, ok bool, note string) {
		answer := "no"
		if ok {
			answer = "yes"
		}
		if note != "" {
			answer += " (" + note + ")"
		}
		fmt.Fprintf(w, "  %s: %s\n", what, answer)
	}
	p := proc.CurrentPrivileges()
	p.ReadSettings()
	p.Try()
	writePrivileges(w, p, yes)
}

// writePrivileges prints who runs gotrace, the settings that decide what
// that user may trace, and which probe kinds will work.
func writePrivileges(w io.Writer, p proc.Privileges, yes func(what string, ok bool, note string)) {
	root := "not root"
	if p.EUID == 0 {
		root = "root"
	}
	fmt.Fprintf(w, "\nPrivileges\n  user: uid %d, effective uid %d (%s)\n", p.UID, p.EUID, root)
	var caps []string
	for _, c := range []int{unix.CAP_BPF, unix.CAP_PERFMON, unix.CAP_SYS_ADMIN} {
		if p.Has(c) {
			caps = append(caps, proc.CapName(c))
		}
	}
	if len(caps) == 0 {
		caps = append(caps, "none of CAP_BPF, CAP_PERFMON, CAP_SYS_ADMIN")
	}
	fmt.Fprintf(w, "  effective capabilities: %s (all: %#x)\n", strings.Join(caps, " "), p.Caps)
	setting := func(n int) string {
		if n == -1 {
			return "unknown"
		}
		return fmt.Sprint(n)
	}
	fmt.Fprintf(w, "  kernel.perf_event_paranoid: %s\n", setting(p.PerfEventParanoid))
	fmt.Fprintf(w, "  kernel.unprivileged_bpf_disabled: %s (tracing needs CAP_BPF whatever it says)\n", setting(p.UnprivilegedBPFDisabled))
	lockdown := p.Lockdown
	if lockdown == "" {
		lockdown = "unknown (securityfs does not say)"
	}
	fmt.Fprintf(w, "  lockdown: %s\n", lockdown)
	load := p.Check(false, func() string { return "gotrace" })
	yes("load programs and maps", load == nil, missingNote(p.Missing(false)))
	yes("BEGIN, END, interval", load == nil, "")
	uprobeNote := "needs CAP_BPF and CAP_PERFMON first"
	if load == nil {
		uprobeNote = errNote(p.UprobeErr)
		if p.UprobeErr != nil {
			uprobeNote += "; " + missingNote(p.Missing(true))
		}
	}
	yes("usdt, uprobe, uretprobe", load == nil && p.UprobeErr == nil, uprobeNote)
	profileNote := ""
	if load == nil {
		profileNote = errNote(p.ProfileErr)
	}
	yes("profile", load == nil && p.ProfileErr == nil, profileNote)
	if load != nil || p.UprobeErr != nil {
		fmt.Fprintf(w, "  to trace everything: run as root (sudo), or setcap cap_bpf,cap_perfmon,cap_sys_admin+ep on the binary\n")
	}
}

// missingNote says which capabilities are missing, "" for none.
func missingNote(m []string) string {
	if len(m) == 0 {
		return ""
	}
	return "missing " + strings.Join(m, ", ")
}

// errNote is the reason a feature probe gave, without the feature's name
// that cilium/ebpf puts first; "" for nil.
func errNote(err error) string {
	if err == nil {
		return ""
	}
	s := err.Error()
	if _, after, ok := strings.Cut(s, ": "); ok {
		return after
	}
	return s
}
