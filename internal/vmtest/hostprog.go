package vmtest

import (
	"debug/elf"
	"fmt"
	"os"
	"path/filepath"
)

// libDirs are where the dynamic loader of a Debian amd64 system finds
// shared libraries; a guest gets each library at the path it has here, and
// the loader finds it there without an ld.so.cache (these are its built-in
// directories on Debian).
var libDirs = []string{"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib", "/usr/lib"}

// HostProgram returns the entries that let the host's dynamically linked
// amd64 program at path run in an amd64 guest: the program at the same
// path, its dynamic loader (its PT_INTERP) and the closure of the shared
// libraries it needs, each at the host's path. This is how bpftrace gets
// into the guest without a Debian root file system: the guest's kernel is
// Debian's, so the host's Debian build of the program runs there as it
// does here.
func HostProgram(path string) ([]Entry, error) {
	var entries []Entry
	seen := map[string]bool{}
	var add func(p string, needInterp bool) error
	add = func(p string, needInterp bool) error {
		if seen[p] {
			return nil
		}
		seen[p] = true
		data, err := os.ReadFile(p)
		if err != nil {
			return fmt.Errorf("read %s for the guest: %w", p, err)
		}
		st, err := os.Stat(p)
		if err != nil {
			return fmt.Errorf("read %s for the guest: %w", p, err)
		}
		entries = append(entries, Entry{Path: p, Mode: st.Mode().Perm(), Data: data})
		f, err := elf.Open(p)
		if err != nil {
			return fmt.Errorf("read %s for the guest: %w", p, err)
		}
		defer f.Close()
		if needInterp {
			for _, prog := range f.Progs {
				if prog.Type != elf.PT_INTERP {
					continue
				}
				b := make([]byte, prog.Filesz)
				if _, err := prog.ReadAt(b, 0); err != nil {
					return fmt.Errorf("read %s's loader name: %w", p, err)
				}
				// The name ends with a NUL. On a merged-/usr system it
				// is a symbolic link (/lib64 to usr/lib64); the guest
				// gets the file's content at that name.
				if err := add(string(b[:len(b)-1]), false); err != nil {
					return err
				}
			}
		}
		libs, err := f.ImportedLibraries()
		if err != nil {
			return fmt.Errorf("read %s's libraries: %w", p, err)
		}
		for _, lib := range libs {
			found := ""
			for _, d := range libDirs {
				if _, err := os.Stat(filepath.Join(d, lib)); err == nil {
					found = filepath.Join(d, lib)
					break
				}
			}
			if found == "" {
				return fmt.Errorf("find %s's library %s in %v: not there", p, lib, libDirs)
			}
			if err := add(found, false); err != nil {
				return err
			}
		}
		return nil
	}
	if err := add(path, true); err != nil {
		return nil, err
	}
	return entries, nil
}
