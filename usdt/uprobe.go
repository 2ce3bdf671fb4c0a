package usdt

import (
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
	var fs Files
	defer fs.Close()
	return fs.FunctionNames(path)
}

// FunctionNames returns the names of FunctionNames for the file at path,
// opened through fs.
func (fs *Files) FunctionNames(path string) ([]string, error) {
	f, err := fs.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read function symbols: %w", err)
	}
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

// uprobeLine is one function a uprobe pattern lists: its line
// "KIND:PATH:FUNCTION", and the file it is read from and its name.
type uprobeLine struct {
	text, path, function string
}

// uprobeLines returns the lines "KIND:PATH:FUNCTION" of the functions
// that p names. PATH is as targetFiles shows it, or with a PID and no
// path the process's executable under /proc/PID/root, as bpftrace 0.17
// shows it.
func uprobeLines(p attachpoint.Point, pid int, files *Files) ([]uprobeLine, error) {
	var targets []target
	var err error
	switch {
	case p.Target == "":
		var exe string
		exe, err = os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
		if err != nil {
			return nil, fmt.Errorf("find the executable of process %d: %w", pid, err)
		}
		path := fmt.Sprintf("/proc/%d/root%s", pid, exe)
		targets = []target{{display: path, open: path}}
	default:
		var mapped []string
		if pid != 0 && strings.HasPrefix(p.Target, "lib") {
			// The process's own library comes first, as in bpftrace.
			mapped, _ = ProcessPaths(pid)
		}
		targets, err = targetFiles("uprobe", p.Target, mapped, files)
	}
	if err != nil {
		return nil, err
	}
	var lines []uprobeLine
	for _, t := range targets {
		src, done := t.files(files)
		names, err := src.FunctionNames(t.open)
		done()
		if err != nil {
			if t.optional {
				continue
			}
			return nil, err
		}
		for _, name := range names {
			if attachpoint.Glob.MatchFunction(p.Func, name) {
				lines = append(lines, uprobeLine{text: p.Kind.String() + ":" + t.display + ":" + name, path: t.open, function: name})
			}
		}
	}
	return lines, nil
}
