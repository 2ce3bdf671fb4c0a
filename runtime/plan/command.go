package plan

// The objects of a -c command, read from the host before the command
// starts: its executable, found on PATH, and the libraries the dynamic
// loader will map for it. The runtime asks for them before it starts the
// command; gatherHost reads them as the objects attach points without a
// path look in, and the command's interpreter, the dynamic loader whose
// later loads are watched (readLoader).

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/gotrace/gotrace/runtime/proc"
	"github.com/gotrace/gotrace/usdt"
)

// CommandObjects returns the executable of a -c command, looked up on PATH,
// followed by the shared libraries it needs at start-up, in load order:
// the objects its attach points without a path look in. They are read
// through files, which keeps them open: a plan made with the same files
// opens none of them again.
func CommandObjects(command string, files *usdt.Files) ([]string, error) {
	path, err := proc.CommandPath(command)
	if err != nil {
		return nil, err
	}
	return append([]string{path}, neededLibraries(path, files)...), nil
}

// loaderFact is what the host says of the dynamic loader of a -c
// command whose later library loads are watched: the command's path, its
// interpreter ("" for a static command, which loads nothing later), or
// why it could not be read.
type loaderFact struct {
	command, interp string
	err             error
}

// readLoader reads the interpreter of the -c command of a run on in when
// its library loads are watched, as resolve decides (a usdt attach point
// without a path), from the command's file as h read it, or opened with
// open when h did not. Planning the libraries loaded later (in extends
// the run's Spec) reads nothing: the run's plan watches the loader.
func readLoader(h *hostFacts, in Input, open opener) loaderFact {
	if !h.watchesLoads(in) || in.Codegen.Extends != nil {
		return loaderFact{}
	}
	path, err := proc.CommandPath(in.Command)
	if err != nil {
		return loaderFact{err: err}
	}
	f := h.targets[path].file
	if f == nil {
		if f, err = open(path); err != nil {
			return loaderFact{command: path, err: fmt.Errorf("read the interpreter of %s: %w", path, err)}
		}
	}
	interp, err := f.Interpreter()
	return loaderFact{command: path, interp: interp, err: err}
}

// neededLibraries resolves the DT_NEEDED closure of an executable the way
// the dynamic loader would find it: RPATH/RUNPATH (with $ORIGIN),
// LD_LIBRARY_PATH, the ld.so.conf directories and the default ones.
// Libraries that cannot be found are left out: the loader would fail on
// them, and the command with it. The objects are read through files.
func neededLibraries(exe string, files *usdt.Files) []string {
	dirs := loaderDirs()
	seen := map[string]bool{exe: true}
	var libs []string
	queue := []string{exe}
	for len(queue) > 0 {
		obj := queue[0]
		queue = queue[1:]
		f, err := files.Open(obj)
		if err != nil {
			continue
		}
		needed, runpaths := f.Libraries()
		var search []string
		for _, v := range runpaths {
			for _, d := range strings.Split(v, ":") {
				search = append(search, strings.ReplaceAll(d, "$ORIGIN", filepath.Dir(obj)))
			}
		}
		search = append(search, dirs...)
		for _, name := range needed {
			path := findLibrary(name, search)
			if path == "" || seen[path] {
				continue
			}
			seen[path] = true
			libs = append(libs, path)
			queue = append(queue, path)
		}
	}
	return libs
}

func findLibrary(name string, dirs []string) string {
	if strings.ContainsRune(name, '/') {
		return name
	}
	for _, d := range dirs {
		p := filepath.Join(d, name)
		if _, err := os.Stat(p); err == nil {
			if real, err := filepath.EvalSymlinks(p); err == nil {
				return real
			}
			return p
		}
	}
	return ""
}

// loaderDirs lists the directories the dynamic loader searches after a
// library's own RPATH/RUNPATH.
func loaderDirs() []string {
	var dirs []string
	if v := os.Getenv("LD_LIBRARY_PATH"); v != "" {
		dirs = append(dirs, strings.Split(v, ":")...)
	}
	dirs = append(dirs, ldSoConfDirs("/etc/ld.so.conf", 0)...)
	return append(dirs, "/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib")
}

// ldSoConfDirs reads an ld.so.conf file and the files it includes.
func ldSoConfDirs(conf string, depth int) []string {
	f, err := os.Open(conf)
	if err != nil || depth > 4 {
		return nil
	}
	defer f.Close()
	var dirs []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = strings.TrimSpace(line[:i])
		}
		if rest, ok := strings.CutPrefix(line, "include "); ok {
			matches, _ := filepath.Glob(strings.TrimSpace(rest))
			for _, m := range matches {
				dirs = append(dirs, ldSoConfDirs(m, depth+1)...)
			}
			continue
		}
		if line != "" {
			dirs = append(dirs, line)
		}
	}
	return dirs
}
