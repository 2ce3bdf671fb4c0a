package attach

// Perf-event uprobes: one link per site (a usdt location, a uprobe's
// symbol or address), on the file descriptor the plan opened; the
// fallback where uprobe_multi links are not used (uprobe_multi.go).

import (
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"

	"github.com/gotrace/gotrace/lang"
	"github.com/gotrace/gotrace/runtime/plan"
	"github.com/gotrace/gotrace/usdt"
)

// Uprobe attaches prog at each of sites (usdt locations, a uprobe's
// symbol or address) with a perf-event uprobe, filtered on t.UprobePID
// when it is not 0; -v notes each. On an error it returns the links made
// before it with it.
func Uprobe(sites []plan.Site, prog *ebpf.Program, t *Target) ([]link.Link, error) {
	var links []link.Link
	for _, s := range sites {
		l, err := perfUprobe(s, prog, t.Execs, t.UprobePID)
		if err != nil {
			return links, err
		}
		links = append(links, l)
		notef(t.Verbose, "attached %s to %s (semaphore at offset %#x)\n", s.Attachment.Probe, s.Where(), s.USDT.SemaphoreOffset)
	}
	return links, nil
}

// perfUprobe attaches prog at site s with a perf-event uprobe, filtered
// on pid when it is not 0.
func perfUprobe(s plan.Site, prog *ebpf.Program, execs *Executables, pid int) (link.Link, error) {
	ex, err := execs.Open(s)
	if err != nil {
		return nil, err
	}
	var l link.Link
	switch s.Attachment.Kind {
	case lang.ProbeUSDT:
		l, err = ex.Uprobe("", prog, &link.UprobeOptions{
			Address:      s.USDT.Offset,
			RefCtrOffset: s.USDT.SemaphoreOffset,
			Cookie:       s.USDT.Cookie,
			PID:          pid,
		})
	case lang.ProbeUprobe:
		l, err = ex.Uprobe(s.Symbol, prog, &link.UprobeOptions{Address: s.Offset, PID: pid})
	case lang.ProbeUretprobe:
		l, err = ex.Uretprobe(s.Symbol, prog, &link.UprobeOptions{Address: s.Offset, PID: pid})
	default:
		return nil, fmt.Errorf("attach %s: probes of this kind cannot be attached", s.Attachment.Probe)
	}
	if err != nil {
		return nil, fmt.Errorf("attach %s to %s: %w", s.Attachment.Probe, s.Where(), err)
	}
	return l, nil
}

// Executables are the files of a run's uprobes, each opened once. The
// kernel is handed the descriptor files holds (File.KernelPath), not the
// path: the file it attaches to is the one opened (with the user's rights,
// see usdt.SetOpenRights) and read, even if the path (a symlink) has been
// changed since.
type Executables struct {
	files  *usdt.Files
	byPath map[string]*link.Executable
}

// NewExecutables returns the executables of a run whose files are files.
func NewExecutables(files *usdt.Files) *Executables {
	return &Executables{files: files, byPath: map[string]*link.Executable{}}
}

// Open returns the executable of a site's file, opened once.
func (e *Executables) Open(s plan.Site) (*link.Executable, error) {
	if ex, ok := e.byPath[s.Path]; ok {
		return ex, nil
	}
	f, err := e.files.Open(s.Path)
	if err != nil {
		return nil, fmt.Errorf("attach %s: %w", s.Attachment.Probe, err)
	}
	ex, err := link.OpenExecutable(f.KernelPath())
	if err != nil {
		return nil, fmt.Errorf("attach %s: %w", s.Attachment.Probe, err)
	}
	e.byPath[s.Path] = ex
	return ex, nil
}
