package usdt

import (
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/gotrace/gotrace/lang/attachpoint"
)

// FindTarget returns the file a bare target name (no '/', no wildcard) of
// a usdt, uprobe or uretprobe stands for, or "" when there is none. As
// bpftrace 0.17 finds a uprobe's:
//
//   - for a name that starts with "lib" (libc, libpython3.11), first an
//     object of the -p process (mapped) whose path holds "/NAME." or
//     "/NAME-" (/usr/lib/x86_64-linux-gnu/libc.so.6), then the first
//     library of the loader's cache whose soname starts with "NAME.so"
//     (/lib/x86_64-linux-gnu/libc.so.6);
//   - the file of that name in the working directory, returned as name;
//   - the first file of that name in a $PATH directory
//     (python3.11: /usr/bin/python3.11).
//
// A file in the working directory or $PATH counts when it is an ELF file
// that is executable or a shared object, as bpftrace checks it. And where
// 0.17 finds nothing: a library that the -c command loads at start-up
// (loaded) but the cache does not have, found as in mapped.
func FindTarget(name string, mapped, loaded []string) string {
	if strings.HasPrefix(name, "lib") {
		for _, path := range []string{mappedLibrary(name, mapped), cachedLibrary(name), mappedLibrary(name, loaded)} {
			if path != "" {
				return path
			}
		}
	}
	if isTargetFile(name, nil) {
		return name
	}
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		if dir == "" {
			continue
		}
		if path := filepath.Join(dir, name); isTargetFile(path, nil) {
			return path
		}
	}
	return ""
}

// mappedLibrary returns the first of objs whose path holds "/NAME." or
// "/NAME-", or "".
func mappedLibrary(name string, objs []string) string {
	for _, o := range objs {
		if strings.Contains(o, "/"+name+".") || strings.Contains(o, "/"+name+"-") {
			return o
		}
	}
	return ""
}

// cachedLibrary returns the path of the first library of the loader's
// cache whose soname starts with "NAME.so", or "".
func cachedLibrary(name string) string {
	entries, err := readLdCache()
	if err != nil {
		return ""
	}
	for _, e := range entries {
		if strings.HasPrefix(e.name, name+".so") {
			return e.path
		}
	}
	return ""
}

// isTargetFile reports whether path is a file bpftrace 0.17 takes as a
// uprobe or usdt target: a regular ELF file that the caller may execute
// or that is a shared object (libstdc++.so.6.0.30 is not executable).
//
// With files, the file stays open there for its reading; without, it is
// closed.
func isTargetFile(path string, files *Files) bool {
	st, err := os.Stat(path)
	if err != nil || !st.Mode().IsRegular() {
		return false
	}
	var f *File
	if files != nil {
		f, err = files.Open(path)
	} else {
		f, err = OpenFile(path)
		if err == nil {
			defer f.Close()
		}
	}
	if err != nil {
		return false
	}
	return f.Type() == elf.ET_DYN || unix.Access(path, unix.X_OK) == nil
}

// ProcessPaths returns the files process pid maps, by the paths gotrace
// sees them under: their own when gotrace shares the process's mount
// namespace, /proc/PID/root/... otherwise.
func ProcessPaths(pid int) ([]string, error) {
	ms, err := ReadMappings(pid)
	if err != nil {
		return nil, fmt.Errorf("failed to find the objects of process %d: %w", pid, err)
	}
	return ObjectPaths(ms, pid), nil
}

// ObjectPaths returns the files among ms, the mappings of process pid,
// as ProcessPaths does.
func ObjectPaths(ms []Mapping, pid int) []string {
	objs := Objects(ms, pid)
	paths := make([]string, 0, len(objs))
	for _, o := range objs {
		paths = append(paths, ownPath(o.Path, o.OpenPath))
	}
	return paths
}

// ownPath returns path, a file's path in another mount namespace, when it
// names the same file in gotrace's, and theirs, the path that opens it
// through /proc/PID/root, when it does not.
func ownPath(path, theirs string) string {
	own, err1 := os.Stat(path)
	other, err2 := os.Stat(theirs)
	if err1 == nil && err2 == nil && os.SameFile(own, other) {
		return path
	}
	return theirs
}

// expandGlob returns the paths that match pattern, whose `*` and `?` stand
// for any run of characters and any one character within a path element,
// as glob(3) expands them for bpftrace: the elements without a wildcard
// are kept as written ("./", ".."), and a wildcard does not match a
// leading dot. The result is in no particular order.
func expandGlob(pattern string) []string {
	paths := []string{""}
	elems := strings.Split(pattern, "/")
	for i, elem := range elems {
		sep := "/"
		if i == len(elems)-1 {
			sep = ""
		}
		var next []string
		for _, p := range paths {
			if !strings.ContainsAny(elem, "*?") {
				next = append(next, p+elem+sep)
				continue
			}
			dir := p
			if dir == "" {
				dir = "."
			}
			entries, err := os.ReadDir(dir)
			if err != nil {
				continue
			}
			for _, e := range entries {
				name := e.Name()
				if strings.HasPrefix(name, ".") && !strings.HasPrefix(elem, ".") {
					continue
				}
				if attachpoint.Glob.Match(elem, name) {
					next = append(next, p+name+sep)
				}
			}
		}
		paths = next
	}
	return paths
}

// targetFiles returns the files a target pattern of kind ("usdt" or
// "uprobe") names, each with the path a listing shows for it. A pattern
// with a wildcard lists every target file it matches, relative to the
// working directory and, when it has no '/', in every $PATH directory,
// each path as expanded; an empty list is an error. A bare name is
// FindTarget's file (mapped are the -p process's objects), any other path
// itself.
func targetFiles(kind, path string, mapped []string, files *Files) ([]target, error) {
	if !strings.ContainsAny(path, "*?") {
		if !strings.Contains(path, "/") {
			if found := FindTarget(path, mapped, nil); found != "" {
				return []target{{display: found, open: found}}, nil
			}
		} else if isTargetFile(path, files) {
			return []target{{display: path, open: path}}, nil
		}
		return nil, targetFileError(kind, path)
	}
	patterns := []string{path}
	if !strings.Contains(path, "/") {
		for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
			if dir != "" {
				patterns = append(patterns, strings.TrimSuffix(dir, "/")+"/"+path)
			}
		}
	}
	var targets []target
	seen := make(map[string]bool)
	for _, p := range patterns {
		for _, m := range expandGlob(p) {
			if !seen[m] && isTargetFile(m, nil) {
				seen[m] = true
				targets = append(targets, target{display: m, open: m, optional: true})
			}
		}
	}
	if len(targets) == 0 {
		return nil, targetFileError(kind, path)
	}
	return targets, nil
}

// GlobTargets returns the target files a usdt or uprobe target with a
// wildcard (./testprogs/usdt_test*) matches, as -l lists them: relative to
// the working directory or, for a pattern without '/', in every $PATH
// directory, each as expanded. kind ("usdt" or "uprobe") names the probe
// in the error for a pattern that matches nothing.
func GlobTargets(kind, pattern string) ([]string, error) {
	targets, err := targetFiles(kind, pattern, nil, nil)
	if err != nil {
		// The message alone: the caller positions it on the attach point.
		if pe, ok := err.(*PatternError); ok {
			return nil, errors.New(pe.Msg)
		}
		return nil, err
	}
	paths := make([]string, len(targets))
	for i, t := range targets {
		paths[i] = t.open
	}
	slices.Sort(paths)
	return paths, nil
}

// targetFileError is bpftrace's message for a path that names no target
// file.
func targetFileError(kind, path string) error {
	return &PatternError{Msg: fmt.Sprintf("%s target file '%s' does not exist or is not executable", kind, path)}
}
