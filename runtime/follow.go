package runtime

// The family of a -c command. A command such as "sudo -u bitcoin
// ./bitcoind", "runuser -u bitcoin -- ./bitcoind" or "sh -c ./prog" runs
// the traced program in a process it starts. The probes of a -c trace are
// therefore attached for every process, and their programs count only the
// hits of the command's family, which the kernel keeps (codegen/family.go):
// the command's PID goes in before it leaves its gate, and a child of a
// member is a member from its fork, so nothing it runs is missed. Polling
// /proc remains only to say which member maps which probe's file (-v) and
// to warn when none did.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"syscall"

	"github.com/gotrace/gotrace/codegen"
	"github.com/gotrace/gotrace/runtime/attach"
	"github.com/gotrace/gotrace/runtime/plan"
	"github.com/gotrace/gotrace/runtime/proc"
	"github.com/gotrace/gotrace/runtime/symbols"
	"github.com/gotrace/gotrace/runtime/tracefs"
)

// familyRecords reads where this kernel's sched_process_fork and
// sched_process_exit records hold the fields the family programs read.
func familyRecords() (*codegen.FamilyRecords, error) {
	dir, err := tracefs.Find(os.Geteuid() == 0)
	if err != nil {
		return nil, fmt.Errorf("keep the -c command's processes: %w", err)
	}
	offset := func(event, field string) (int, error) {
		f, err := tracefs.ReadFormat(dir, tracefs.Event{Category: "sched", Name: event})
		if err != nil {
			return 0, fmt.Errorf("keep the -c command's processes: %w", err)
		}
		for _, fl := range f.Fields {
			if fl.Name == field {
				return fl.Offset, nil
			}
		}
		return -1, nil
	}
	rec := &codegen.FamilyRecords{}
	if rec.ChildPID, err = offset("sched_process_fork", "child_pid"); err != nil {
		return nil, err
	}
	if rec.ChildPID < 0 {
		return nil, errors.New("keep the -c command's processes: sched_process_fork's record has no child_pid")
	}
	if rec.GroupDead, err = offset("sched_process_exit", "group_dead"); err != nil {
		return nil, err
	}
	return rec, nil
}

// familyInput returns in with the reader of the kernel's records the
// plan chooses a -c command's family filter by.
func familyInput(in plan.Input) plan.Input {
	in.FamilyRecords = familyRecords
	return in
}

// withFamily returns in with the family filter the run's plan chose, for
// planning the libraries a -c command loads later (Loaded).
func (t *tracer) withFamily(in plan.Input) plan.Input {
	in.Codegen.Family = t.familyRecs
	return in
}

// keepFamily puts the -c command's PID in the family map, before the
// command leaves its gate; the programs that keep its descendants there
// are gotrace's own sites of the plan (plan.Plan.Own), attached after.
func (t *tracer) keepFamily() error {
	fam := t.spec.Family
	if fam == nil {
		return nil
	}
	bitmap := make([]byte, codegen.FamilyBitmapBytes)
	setFamilyBit(bitmap, t.child.PID)
	if err := t.coll.Maps[fam.Map].Put(uint32(0), bitmap); err != nil {
		return fmt.Errorf("add the -c command to its family: %w", err)
	}
	t.verbosef("usdt and uprobe probes: attached for every process, counting the hits of the -c command's family (process %d and those it starts)", t.child.PID)
	return nil
}

// setFamilyBit sets pid's bit in a family bitmap (codegen.FamilyBitmapBytes).
func setFamilyBit(bitmap []byte, pid int) {
	word := binary.NativeEndian.Uint32(bitmap[pid/32*4:])
	binary.NativeEndian.PutUint32(bitmap[pid/32*4:], word|1<<(pid%32))
}

// familyHit reports whether a probe's program let a hit of the family
// through.
func (t *tracer) familyHit() bool {
	fam := t.spec.Family
	if fam == nil {
		return false
	}
	var hit uint64
	return t.coll.Maps[fam.Stats].Lookup(uint32(0), &hit) == nil && hit != 0
}

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

// newFollower returns a follower of root's descendants for the files of
// sites, or nil when there is none.
func newFollower(t *tracer, root int, sites []plan.Site) *follower {
	f := &follower{t: t, family: proc.NewFamily(root), files: map[fileKey]string{}, mapping: map[int]bool{}}
	for _, g := range attach.GroupSites(sites) {
		if !plan.UserKind(g.Sites[0].Attachment.Kind) {
			continue
		}
		// The file that was read and is attached to, by its descriptor.
		file, err := t.files.Open(g.Sites[0].Path)
		if err != nil {
			continue
		}
		var st syscall.Stat_t
		if err := syscall.Stat(file.KernelPath(), &st); err != nil {
			continue
		}
		k := fileKey{dev: st.Dev, ino: st.Ino}
		if _, ok := f.files[k]; !ok {
			f.files[k] = g.Sites[0].Path
			f.names = append(f.names, g.Sites[0].Path)
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
