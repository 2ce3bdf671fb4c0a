package runtime

// The follower of a -c command's family (family.go): polling /proc
// remains only to say which member maps which probe's file (-v) and to
// warn when none did.

import (
	"fmt"
	"sort"
	"strings"
	"syscall"

	"github.com/gotrace/gotrace/runtime/proc"
	"github.com/gotrace/gotrace/runtime/symbols"
)

// fileKey identifies a file by device and inode, as /proc/PID/maps does.
type fileKey struct{ dev, ino uint64 }

// follower watches the processes a -c command starts, to say (-v) which of
// them map which probe's file, and to warn at the end when none of them
// nor the command did.
type follower struct {
	t *tracer
	// family are the command's process and its descendants.
	family *proc.Family
	// files are the paths of the probes' files, by the file's key;
	// names are the paths, sorted, for the warning.
	files map[fileKey]string
	names []string
	// mapping are the descendants seen mapping a probe's file.
	mapping map[int]bool
	// rootMaps says the command was seen mapping a probe's file.
	rootMaps bool
}

// newFollower returns a follower of root's descendants for paths, the
// files of the probes, or nil when none can be read.
func newFollower(t *tracer, root int, paths []string) *follower {
	f := &follower{t: t, family: proc.NewFamily(root), files: map[fileKey]string{}, mapping: map[int]bool{}}
	for _, path := range paths {
		// The file that was read and is attached to, by its descriptor.
		file, err := t.files.Open(path)
		if err != nil {
			continue
		}
		var st syscall.Stat_t
		if err := syscall.Stat(file.KernelPath(), &st); err != nil {
			continue
		}
		k := fileKey{dev: st.Dev, ino: st.Ino}
		if _, ok := f.files[k]; !ok {
			f.files[k] = path
			f.names = append(f.names, path)
		}
	}
	if len(f.files) == 0 {
		return nil
	}
	sort.Strings(f.names)
	return f
}

// poll notes each new descendant of the command that maps a probe's file.
// It always returns true: polling goes on until the trace ends.
func (f *follower) poll() bool {
	if !f.family.Due() {
		return true
	}
	if !f.rootMaps {
		f.rootMaps = len(f.mapsSites(mappedFiles(f.family.Root))) > 0
	}
	for _, pid := range f.family.Descendants() {
		if f.mapping[pid] {
			continue
		}
		paths := f.mapsSites(mappedFiles(pid))
		if len(paths) == 0 {
			continue
		}
		f.mapping[pid] = true
		if f.t.opts.Verbose {
			f.t.mu.Lock()
			fmt.Fprintf(f.t.opts.Err, "process %d%s, which the command started, maps %s\n", pid, proc.NameNote(pid), strings.Join(paths, ", "))
			f.t.mu.Unlock()
		}
	}
	return true
}

// mapsSites returns the paths of the probes' files that mapped holds,
// sorted.
func (f *follower) mapsSites(mapped map[fileKey]bool) []string {
	var paths []string
	for k := range mapped {
		if p, ok := f.files[k]; ok {
			paths = append(paths, p)
		}
	}
	sort.Strings(paths)
	return paths
}

// warnWrapper warns when the command started processes but neither it nor
// they mapped the file of any probe, and no probe of the family fired: a
// wrapper (sudo, runuser) that ran something else, or a program that left
// gotrace's view. Without the family filter it also says that the
// processes the command started were not traced. The caller holds t.mu.
func (f *follower) warnWrapper() {
	if f == nil || f.t.opts.NoWarnings {
		return
	}
	if f.t.noFamily != nil && len(f.mapping) > 0 {
		fmt.Fprintf(f.t.opts.Err, "WARNING: the processes the -c command started were not traced, though %d of them mapped %s: %v\n",
			len(f.mapping), strings.Join(f.names, ", "), f.t.noFamily)
	}
	if f.t.familyHit() || f.rootMaps || len(f.mapping) > 0 || !f.family.Started() {
		return
	}
	fmt.Fprintf(f.t.opts.Err, "WARNING: no probe could fire: neither the -c command (%s) nor the processes it started mapped %s\n",
		f.t.child.Path, strings.Join(f.names, ", "))
}

// mappedFiles returns the files pid maps.
func mappedFiles(pid int) map[fileKey]bool {
	files := map[fileKey]bool{}
	for _, m := range symbols.ProcessMappings(pid) {
		files[fileKey{dev: m.Dev, ino: m.Ino}] = true
	}
	return files
}
