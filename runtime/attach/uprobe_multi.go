package attach

// uprobe_multi links: one link for every location of one program in one
// file (Linux 6.6), attached and detached at once; uprobe.go's perf-event
// uprobes are the fallback.

import (
	"errors"
	"fmt"
	"io"
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

// Loadable chooses how the usdt, uprobe and uretprobe programs of spec
// are attached for the process pid (0: every process): with uprobe_multi
// links where the kernel serves them and they are not disabled
// (--no-uprobe-multi), else with perf-event uprobes. It returns that mode
// and the collection spec to load for it; verbose, when not nil,
// receives -v's note of the choice. A spec without such programs asks the kernel
// nothing: whether it has uprobe_multi links is found out by loading and
// attaching test programs (6% of the CPU time of BEGIN { exit(); }).
func Loadable(spec *codegen.Spec, disabled bool, pid int, verbose io.Writer) (Mode, *ebpf.CollectionSpec) {
	if !slices.ContainsFunc(spec.Attachments, func(a codegen.Attachment) bool { return plan.UserKind(a.Kind) }) {
		notef(verbose, "uprobes: none in the script\n")
		return PerfUprobes, spec.Collection
	}
	mode, why := chooseMode(disabled, pid)
	if why != "" {
		why = " (" + why + ")"
	}
	notef(verbose, "uprobes: %s%s\n", mode, why)
	return mode, mode.Loadable(spec)
}

// chooseMode picks MultiUprobes where the kernel has uprobe_multi
// links (the capability table's, tried once per process) and, for a
// trace filtered by PID, filters by PID correctly; why says why not.
func chooseMode(disabled bool, pid int) (mode Mode, why string) {
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

// Loadable returns the collection spec of spec to load for uprobes
// attached as m says: as compiled, or with the programs of usdt and
// uprobe probes loaded as uprobe_multi programs, since the kernel
// attaches a program to a uprobe_multi link only when it was loaded for
// one. The libraries a -c command loads later are loaded so too.
func (m Mode) Loadable(spec *codegen.Spec) *ebpf.CollectionSpec {
	if m != MultiUprobes {
		return spec.Collection
	}
	coll := spec.Collection.Copy()
	for _, a := range spec.Attachments {
		if p := coll.Programs[a.Program]; p != nil && plan.UserKind(a.Kind) {
			p.AttachType = ebpf.AttachTraceUprobeMulti
		}
	}
	return coll
}

// uprobeGroup attaches prog at the locations of g: with one uprobe_multi
// link in MultiUprobes mode, else, or when the kernel refuses the link (a
// limit of its own, such as a file it cannot probe that way), with a
// perf-event uprobe per location, the program loaded again for that kind
// of attachment (Target.Reload).
func uprobeGroup(g plan.Group, prog *ebpf.Program, t *Target) ([]link.Link, error) {
	if t.Mode != MultiUprobes {
		return Uprobe(g.Sites, prog, t)
	}
	links, err := UprobeMulti(g, prog, t)
	if err == nil || errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) || t.Reload == nil {
		return links, err
	}
	fallback, lerr := t.Reload(g.Sites[0].Attachment.Program)
	if lerr != nil {
		return nil, fmt.Errorf("%w; and again for perf-event uprobes: %v", err, lerr)
	}
	notef(t.Verbose, "%v; attaching perf-event uprobes instead\n", err)
	return Uprobe(g.Sites, fallback, t)
}

// UprobeMulti attaches prog at every location of g with one uprobe_multi
// link, filtered on t.UprobePID when it is not 0; -v notes it.
func UprobeMulti(g plan.Group, prog *ebpf.Program, t *Target) ([]link.Link, error) {
	first := g.Sites[0]
	ex, err := t.Execs.Open(first)
	if err != nil {
		return nil, err
	}
	opts := &link.UprobeMultiOptions{PID: uint32(t.UprobePID)}
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
	notef(t.Verbose, "attached %s to %d locations of %s with one uprobe_multi link\n", first.Attachment.Probe, len(g.Sites), first.Path)
	return []link.Link{l}, nil
}
