package runtime

// The run's uprobes: each group of a program's locations in one file is
// attached with one uprobe_multi link where the run uses them, else, or
// when the kernel refuses the link, with a perf-event uprobe per
// location (the mechanisms are runtime/attach's).

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/gotrace/gotrace/runtime/attach"
	"github.com/gotrace/gotrace/runtime/plan"
)

// attachProbe attaches prog at a USDT or uprobe site.
func (a *attachedSet) attachProbe(s plan.Site, prog *ebpf.Program) error {
	l, err := attach.Uprobe(s, prog, a.execs, a.uprobePID)
	if err != nil {
		return err
	}
	a.links = append(a.links, l)
	if a.verbose != nil {
		fmt.Fprintf(a.verbose, "attached %s to %s (semaphore at offset %#x)\n", s.Attachment.Probe, s.Where(), s.USDT.SemaphoreOffset)
	}
	return nil
}

// attachGroup attaches the locations of g: with one uprobe_multi link
// when a uses them, else, or when the kernel refuses the link (a limit of
// its own, such as a file it cannot probe that way), one perf-event
// uprobe per location, with the program loaded again from spec for that
// kind of attachment.
func (a *attachedSet) attachGroup(g attach.Group, prog *ebpf.Program, spec *ebpf.CollectionSpec) error {
	if a.uprobes != attach.MultiUprobes {
		for _, s := range g.Sites {
			if err := a.attachProbe(s, prog); err != nil {
				return err
			}
		}
		return nil
	}
	l, err := attach.UprobeMulti(g, prog, a.execs, a.uprobePID)
	if err == nil {
		a.links = append(a.links, l)
		if a.verbose != nil {
			fmt.Fprintf(a.verbose, "attached %s to %d locations of %s with one uprobe_multi link\n", g.Sites[0].Attachment.Probe, len(g.Sites), g.Sites[0].Path)
		}
		return nil
	}
	if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) {
		return err
	}
	fallback, lerr := a.loadPerfUprobe(spec, g.Sites[0].Attachment.Program)
	if lerr != nil {
		return fmt.Errorf("%w; and again for perf-event uprobes: %v", err, lerr)
	}
	if a.verbose != nil {
		fmt.Fprintf(a.verbose, "%v; attaching perf-event uprobes instead\n", err)
	}
	for _, s := range g.Sites {
		if err := a.attachProbe(s, fallback); err != nil {
			return err
		}
	}
	return nil
}

// loadPerfUprobe loads program name of spec again, for perf-event
// uprobes, sharing the maps already created.
func (a *attachedSet) loadPerfUprobe(spec *ebpf.CollectionSpec, name string) (*ebpf.Program, error) {
	spec = spec.Copy()
	for other := range spec.Programs {
		if other != name {
			delete(spec.Programs, other)
		}
	}
	coll, err := loadSharing(spec, a.coll.Maps)
	if err != nil {
		return nil, err
	}
	a.keepCollection(coll)
	return coll.Programs[name], nil
}
