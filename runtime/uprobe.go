package runtime

// Perf-event uprobes: one link per site (a usdt location, a uprobe's
// symbol or address), on the file descriptor the plan opened; the
// fallback where uprobe_multi links are not used (uprobe_multi.go).

import (
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"

	"github.com/gotrace/gotrace/lang"
	"github.com/gotrace/gotrace/usdt"
)

// attachSite attaches the program of a USDT or uprobe site, filtered on
// pid when it is not 0.
func attachSite(s site, prog *ebpf.Program, execs *executables, pid int) (link.Link, error) {
	ex, err := execs.open(s)
	if err != nil {
		return nil, err
	}
	var l link.Link
	switch s.att.Kind {
	case lang.ProbeUSDT:
		l, err = ex.Uprobe("", prog, &link.UprobeOptions{
			Address:      s.usdt.Offset,
			RefCtrOffset: s.usdt.SemaphoreOffset,
			Cookie:       s.usdt.Cookie,
			PID:          pid,
		})
	case lang.ProbeUprobe:
		l, err = ex.Uprobe(s.symbol, prog, &link.UprobeOptions{Address: s.offset, PID: pid})
	case lang.ProbeUretprobe:
		l, err = ex.Uretprobe(s.symbol, prog, &link.UprobeOptions{Address: s.offset, PID: pid})
	default:
		return nil, fmt.Errorf("attach %s: probes of this kind cannot be attached", s.att.Probe)
	}
	if err != nil {
		return nil, fmt.Errorf("attach %s to %s: %w", s.att.Probe, s.where(), err)
	}
	return l, nil
}

// executables are the files of a run's uprobes, each opened once. The
// kernel is handed the descriptor files holds (File.KernelPath), not the
// path: the file it attaches to is the one opened (with the user's rights,
// see usdt.SetOpenRights) and read, even if the path (a symlink) has been
// changed since.
type executables struct {
	files  *usdt.Files
	byPath map[string]*link.Executable
}

// newExecutables returns the executables of a run whose files are files.
func newExecutables(files *usdt.Files) *executables {
	return &executables{files: files, byPath: map[string]*link.Executable{}}
}

// open returns the executable of a site's file.
func (e *executables) open(s site) (*link.Executable, error) {
	if ex, ok := e.byPath[s.path]; ok {
		return ex, nil
	}
	f, err := e.files.Open(s.path)
	if err != nil {
		return nil, fmt.Errorf("attach %s: %w", s.att.Probe, err)
	}
	ex, err := link.OpenExecutable(f.KernelPath())
	if err != nil {
		return nil, fmt.Errorf("attach %s: %w", s.att.Probe, err)
	}
	e.byPath[s.path] = ex
	return ex, nil
}

// where names the place of a USDT or uprobe site in messages.
func (s site) where() string {
	if s.symbol != "" {
		return s.path + ":" + s.symbol
	}
	return fmt.Sprintf("%s at offset %#x", s.path, s.usdt.Offset+s.offset)
}

// attachProbe attaches prog at a USDT or uprobe site.
func (t *tracer) attachProbe(s site, prog *ebpf.Program) error {
	l, err := attachSite(s, prog, t.execs, t.pid)
	if err != nil {
		return err
	}
	t.links = append(t.links, l)
	if t.opts.Verbose {
		fmt.Fprintf(t.opts.Err, "attached %s to %s (semaphore at offset %#x)\n", s.att.Probe, s.where(), s.usdt.SemaphoreOffset)
	}
	return nil
}
