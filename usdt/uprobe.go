package usdt

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/gotrace/gotrace/lang/attachpoint"
)

// FunctionNames returns the names bpftrace 0.17 lists for uprobes in the
// ELF file at path, sorted and each once: those of File.FunctionSymbols
// but gcc's partial functions (tp_utxo.part.0), which bpftrace leaves out
// as untraceable.
func FunctionNames(path string) ([]string, error) {
	f, err := OpenFile(path)
	if err != nil {
		return nil, fmt.Errorf("read function symbols: %w", err)
	}
	defer f.Close()
	syms, err := f.FunctionSymbols()
	if err != nil {
		return nil, err
	}
	var names []string
	for _, s := range syms {
		if !strings.Contains(s.Name, ".part.") {
			names = append(names, s.Name)
		}
	}
	slices.Sort(names)
	return slices.Compact(names), nil
}

// uprobePattern is a uprobe or uretprobe pattern of -l.
type uprobePattern struct {
	kind string // "uprobe" or "uretprobe"
	// path is the target file pattern; "" is the -p process's
	// executable.
	path string
	// fn matches function names; an offset (Py_Main+4) is dropped, as
	// bpftrace 0.17 lists the function.
	fn string
}

// parseUprobe checks the arguments of a uprobe or uretprobe pattern with
// bpftrace 0.17's messages: TARGET:FUNCTION, or FUNCTION alone with a PID.
func parseUprobe(kind string, args []string, withPID bool) (uprobePattern, error) {
	p := uprobePattern{kind: kind}
	switch {
	case len(args) == 2:
		p.path, p.fn = args[0], args[1]
		if p.path == "" {
			return p, fmt.Errorf("%s should have a target", kind)
		}
	case len(args) == 1 && withPID:
		p.fn = args[0]
	default:
		return p, attachpoint.ArgCountError(kind, "2 arguments")
	}
	if p.fn == "" {
		return p, fmt.Errorf("%s should be attached to a function and/or address", kind)
	}
	if _, ok := attachpoint.ParseNumber(p.fn); ok {
		return p, fmt.Errorf("%s is an address: -l lists functions by name", p.fn)
	}
	if name, _, ok := attachpoint.SplitOffset(p.fn); ok {
		if kind == "uretprobe" {
			return p, errors.New("Offset not allowed")
		}
		p.fn = name
	}
	return p, nil
}

// uprobeLines returns the lines "KIND:PATH:FUNCTION" of the functions
// that p names. PATH is as targetFiles shows it, or with a PID and no
// path the process's executable under /proc/PID/root, as bpftrace 0.17
// shows it.
func uprobeLines(p uprobePattern, pid int) ([]string, error) {
	var targets []target
	var err error
	switch {
	case p.path == "":
		var exe string
		exe, err = os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
		if err != nil {
			return nil, fmt.Errorf("find the executable of process %d: %w", pid, err)
		}
		path := fmt.Sprintf("/proc/%d/root%s", pid, exe)
		targets = []target{{display: path, open: path}}
	default:
		var mapped []string
		if pid != 0 && strings.HasPrefix(p.path, "lib") {
			// The process's own library comes first, as in bpftrace.
			mapped, _ = ProcessPaths(pid)
		}
		targets, err = targetFiles("uprobe", p.path, mapped)
	}
	if err != nil {
		return nil, err
	}
	var lines []string
	for _, t := range targets {
		names, err := FunctionNames(t.open)
		if err != nil {
			if t.optional {
				continue
			}
			return nil, err
		}
		for _, name := range names {
			if attachpoint.Glob.MatchFunction(p.fn, name) {
				lines = append(lines, p.kind+":"+t.display+":"+name)
			}
		}
	}
	return lines, nil
}
