package attach

// uprobe_multi links: one link for every location of one program in one
// file (Linux 6.6), attached and detached at once; uprobe.go's perf-event
// uprobes are the fallback.

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/gotrace/gotrace/codegen"
	"github.com/gotrace/gotrace/internal/capability"
	"github.com/gotrace/gotrace/lang"
	"github.com/gotrace/gotrace/runtime/plan"
)

// Mode is how the programs of usdt, uprobe and uretprobe probes are
// attached to their locations.
type Mode int

const (
	// PerfUprobes attaches a perf-event uprobe at each location. Every
	// kernel with uprobes has them, but the kernel tears each one down on
	// its own: detaching the JVM's 531 USDT locations took a minute.
	PerfUprobes Mode = iota
	// MultiUprobes attaches one uprobe_multi link for all the locations of
	// one program in one file (Linux 6.6), attached and detached at once.
	MultiUprobes
)

// String says how the Mode attaches, for -v.
func (m Mode) String() string {
	if m == MultiUprobes {
		return "one uprobe_multi link per program and file"
	}
	return "one perf-event uprobe per location"
}

// pidFilterFixed is the first kernel whose uprobe_multi links filter by
// PID as perf-event uprobes do (in 6.6 to 6.9 a link with a PID also ran
// for other processes' threads).
var pidFilterFixed = [2]int{6, 10}

// ChooseMode picks MultiUprobes where the kernel has uprobe_multi
// links (the capability table's, tried once per process) and, for a
// trace filtered by PID, filters by PID correctly; why says why not.
func ChooseMode(disabled bool, pid int) (mode Mode, why string) {
	if disabled {
		return PerfUprobes, "uprobe_multi disabled"
	}
	if r := capability.Of(capability.UprobeMulti); !r.Available {
		return PerfUprobes, "no uprobe_multi links: " + r.Evidence
	}
	if pid != 0 {
		if v, ok := kernelRelease(); !ok || v[0] < pidFilterFixed[0] || v[0] == pidFilterFixed[0] && v[1] < pidFilterFixed[1] {
			return PerfUprobes, fmt.Sprintf("uprobe_multi filters by PID only from Linux %d.%d", pidFilterFixed[0], pidFilterFixed[1])
		}
	}
	return MultiUprobes, ""
}

// kernelRelease returns the major and minor version of the running kernel.
func kernelRelease() ([2]int, bool) {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return [2]int{}, false
	}
	release := unix.ByteSliceToString(u.Release[:])
	major, rest, _ := strings.Cut(release, ".")
	minor, _, _ := strings.Cut(rest, ".")
	minor = strings.TrimRightFunc(minor, func(r rune) bool { return r < '0' || r > '9' })
	a, err1 := strconv.Atoi(major)
	b, err2 := strconv.Atoi(minor)
	return [2]int{a, b}, err1 == nil && err2 == nil
}

// ForUprobeMulti returns a copy of spec whose programs attached to
// locations in files load as uprobe_multi programs: the kernel attaches a
// program to a uprobe_multi link only when it was loaded for one.
func ForUprobeMulti(spec *ebpf.CollectionSpec, atts []codegen.Attachment) *ebpf.CollectionSpec {
	spec = spec.Copy()
	for _, a := range atts {
		if p := spec.Programs[a.Program]; p != nil && plan.UserKind(a.Kind) {
			p.AttachType = ebpf.AttachTraceUprobeMulti
		}
	}
	return spec
}

// Group is the sites of one attachment in one file, attached with one
// uprobe_multi link.
type Group struct {
	Sites []plan.Site
}

// GroupSites splits sites into the runtime's own sites (BEGIN, END,
// interval, profile), kept one by one in order, and the groups of
// locations of each attachment and file, last probe first: the kernel runs
// the handlers of one location newest first, so attaching in reverse runs
// two probes of one function in script order, as bpftrace does.
func GroupSites(sites []plan.Site) (own []plan.Site, groups []Group) {
	index := map[[2]any]int{}
	for _, s := range sites {
		if !plan.UserKind(s.Attachment.Kind) {
			own = append(own, s)
			continue
		}
		key := [2]any{s.Attachment, s.Path}
		i, ok := index[key]
		if !ok {
			i = len(groups)
			index[key] = i
			groups = append(groups, Group{})
		}
		groups[i].Sites = append(groups[i].Sites, s)
	}
	slices.Reverse(groups)
	return own, groups
}

// UprobeMulti attaches prog at every location of g with one uprobe_multi
// link, filtered on pid when it is not 0.
func UprobeMulti(g Group, prog *ebpf.Program, execs *Executables, pid int) (link.Link, error) {
	first := g.Sites[0]
	ex, err := execs.Open(first)
	if err != nil {
		return nil, err
	}
	opts := &link.UprobeMultiOptions{PID: uint32(pid)}
	semaphores := false
	for _, s := range g.Sites {
		opts.Addresses = append(opts.Addresses, s.USDT.Offset+s.Offset)
		opts.RefCtrOffsets = append(opts.RefCtrOffsets, s.USDT.SemaphoreOffset)
		opts.Cookies = append(opts.Cookies, s.USDT.Cookie)
		semaphores = semaphores || s.USDT.SemaphoreOffset != 0
	}
	if !semaphores {
		opts.RefCtrOffsets = nil
	}
	var l link.Link
	if first.Attachment.Kind == lang.ProbeUretprobe {
		l, err = ex.UretprobeMulti(nil, prog, opts)
	} else {
		l, err = ex.UprobeMulti(nil, prog, opts)
	}
	if err != nil {
		return nil, fmt.Errorf("attach %s to %d locations of %s with uprobe_multi: %w", first.Attachment.Probe, len(g.Sites), first.Path, err)
	}
	return l, nil
}
