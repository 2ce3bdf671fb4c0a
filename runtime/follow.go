package runtime

import (
	"fmt"
	"sort"
	"strings"
	"syscall"

	"github.com/gotrace/gotrace/runtime/attach"
	"github.com/gotrace/gotrace/runtime/plan"
	"github.com/gotrace/gotrace/runtime/proc"
	"github.com/gotrace/gotrace/runtime/symbols"
)

// fileKey identifies a file by device and inode, as /proc/PID/maps does.
type fileKey struct{ dev, ino uint64 }

// follower attaches the probes to the processes a -c command starts. A
// command such as "sudo -u bitcoin ./bitcoind" or "runuser -u bitcoin --
// ./bitcoind" runs the traced program as its child, where the probes
// attached for the command's own PID never fire and no semaphore rises:
// each descendant that maps the file of a probe gets that probe attached
// for its PID too, within proc.FamilyPoll of mapping it.
type follower struct {
	t *tracer
	// family are the command's process and its descendants.
	family *proc.Family
	// groups are the locations in files, by the file's key; names are
	// the files' paths, for the warning.
	groups map[fileKey][]attach.Group
	names  []string
	// attached are the descendants the probes were attached to.
	attached map[int]bool
	// rootMaps says the command was seen mapping a probe's file.
	rootMaps bool
}

// newFollower returns a follower of root's descendants for the locations
// in files among sites, or nil when there is none.
func newFollower(t *tracer, root int, sites []plan.Site) *follower {
	f := &follower{t: t, family: proc.NewFamily(root), groups: map[fileKey][]attach.Group{}, attached: map[int]bool{}}
	_, groups := attach.GroupSites(sites)
	for _, g := range groups {
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
		if _, ok := f.groups[k]; !ok {
			f.names = append(f.names, g.Sites[0].Path)
		}
		f.groups[k] = append(f.groups[k], g)
	}
	if len(f.groups) == 0 {
		return nil
	}
	sort.Strings(f.names)
	return f
}

// poll attaches the probes to each new descendant of the command that maps
// a probe's file. It returns false, ending the polling, on an error, which
// ends the trace.
func (f *follower) poll() bool {
	if !f.family.Due() {
		return true
	}
	if !f.rootMaps {
		f.rootMaps = f.mapsSite(mappedFiles(f.family.Root))
	}
	for _, pid := range f.family.Descendants() {
		if f.attached[pid] {
			continue
		}
		mapped := mappedFiles(pid)
		if !f.mapsSite(mapped) {
			continue
		}
		f.attached[pid] = true
		if err := f.attach(pid, mapped); err != nil {
			if proc.Gone(pid) {
				continue
			}
			f.t.mu.Lock()
			f.t.keepErr(err)
			f.t.mu.Unlock()
			f.t.requestExit()
			return false
		}
	}
	return true
}

// mapsSite reports whether mapped holds the file of a site.
func (f *follower) mapsSite(mapped map[fileKey]bool) bool {
	for k := range mapped {
		if _, ok := f.groups[k]; ok {
			return true
		}
	}
	return false
}

// attach attaches the locations in the files pid maps, for pid, as the
// command's own are: with uprobe_multi links or perf-event uprobes.
func (f *follower) attach(pid int, mapped map[fileKey]bool) error {
	t := f.t
	n := 0
	for k, groups := range f.groups {
		if !mapped[k] {
			continue
		}
		for _, g := range groups {
			prog := t.coll.Programs[g.Sites[0].Attachment.Program]
			if prog == nil {
				return fmt.Errorf("attach %s: program %s is missing from the collection", g.Sites[0].Attachment.Probe, g.Sites[0].Attachment.Program)
			}
			if t.uprobes == attach.MultiUprobes {
				l, err := attach.UprobeMulti(g, prog, t.execs, pid)
				if err != nil {
					return fmt.Errorf("attach to process %d, which the command started: %w", pid, err)
				}
				t.links = append(t.links, l)
				n++
				continue
			}
			for _, s := range g.Sites {
				l, err := attach.Uprobe(s, prog, t.execs, pid)
				if err != nil {
					return fmt.Errorf("attach to process %d, which the command started: %w", pid, err)
				}
				t.links = append(t.links, l)
				n++
			}
		}
	}
	if t.opts.Verbose {
		t.mu.Lock()
		fmt.Fprintf(t.opts.Err, "attached %d links to process %d, which the command started\n", n, pid)
		t.mu.Unlock()
	}
	return nil
}

// warnWrapper warns when the command started processes but neither it nor
// they mapped the file of any probe: a wrapper (sudo, runuser) that ran
// something else, or a program that left gotrace's view (a daemon that
// forked and exited). The caller holds t.mu.
func (f *follower) warnWrapper() {
	if f == nil || f.t.opts.NoWarnings || f.rootMaps || len(f.attached) > 0 || !f.family.Started() {
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
