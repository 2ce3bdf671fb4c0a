package runtime

// This file names cgroup ids as cgroup_path() prints them.

import (
	"bufio"
	"bytes"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// cgroupHierarchy is one mounted cgroup hierarchy: its name as
// cgroup_path() prints it ("unified" for cgroup2, the controllers or the
// name= of a cgroup v1 mount) and where its root is mounted.
type cgroupHierarchy struct {
	name, mount string
}

// cgroupPaths names cgroup ids: in each hierarchy, the directory whose
// inode number is the id (a cgroup's id is its directory's inode on
// 64-bit kernels), by its path from the hierarchy's root. Hierarchies
// are read from the mount table once, and each id looked up once: ids
// are not reused, and a cgroup removed since keeps the name it had.
type cgroupPaths struct {
	hierarchies []cgroupHierarchy
	// found is each id's directory in each hierarchy, "" where it has
	// none, in the order of hierarchies; nil until the hierarchies are
	// read.
	found map[uint64][]string
}

// text formats id as cgroup_path(id, filter) prints it, as bpftrace does:
// "name:/path" of each hierarchy whose name matches the glob filter (""
// matches all) and has a cgroup of that id, joined by commas, cgroup2
// first, then the others by name; "" when none has one.
func (cp *cgroupPaths) text(id uint64, filter string) string {
	if cp.found == nil {
		cp.hierarchies = readCgroupHierarchies("/proc/self/mountinfo", "/proc/cgroups")
		cp.found = map[uint64][]string{}
	}
	dirs, ok := cp.found[id]
	if !ok {
		dirs = make([]string, len(cp.hierarchies))
		for i, h := range cp.hierarchies {
			dirs[i] = cgroupDir(h.mount, id)
		}
		cp.found[id] = dirs
	}
	var parts []string
	for i, h := range cp.hierarchies {
		if dirs[i] == "" {
			continue
		}
		if filter != "" {
			if match, _ := path.Match(filter, h.name); !match {
				continue
			}
		}
		parts = append(parts, h.name+":"+dirs[i])
	}
	return strings.Join(parts, ",")
}

// cgroupDir returns the path from root of the directory under it whose
// inode number is id ("/" for root itself), or "" when there is none.
// Files are passed over: bpftrace 0.17 also takes a file of that inode
// number (memory:/memory.kmem.max_usage_in_bytes).
func cgroupDir(root string, id uint64) string {
	found := ""
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		if st, ok := info.Sys().(*syscall.Stat_t); ok && st.Ino == id {
			rel, _ := filepath.Rel(root, p)
			found = path.Clean("/" + filepath.ToSlash(rel))
			return filepath.SkipAll
		}
		return nil
	})
	return found
}

// readCgroupHierarchies reads the cgroup hierarchies mounted in this
// mount namespace from mountinfo (the first mount of each hierarchy's
// root), naming a v1 hierarchy by its name= option or else by the
// controllers among its options, which cgroups (/proc/cgroups) lists:
// cgroup2 first, then the others by name. A file that cannot be read
// gives no hierarchies, and every cgroup_path() prints "".
func readCgroupHierarchies(mountinfo, cgroups string) []cgroupHierarchy {
	data, err := os.ReadFile(mountinfo)
	if err != nil {
		return nil
	}
	controllers := map[string]bool{}
	if list, err := os.ReadFile(cgroups); err == nil {
		for _, line := range strings.Split(string(list), "\n") {
			if f := strings.Fields(line); len(f) > 0 && !strings.HasPrefix(f[0], "#") {
				controllers[f[0]] = true
			}
		}
	}
	var v2, v1 []cgroupHierarchy
	seen := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		// ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - TYPE SOURCE SUPEROPTIONS
		fields := strings.Fields(sc.Text())
		sep := slices.Index(fields, "-")
		if sep < 5 || len(fields) < sep+4 || fields[3] != "/" {
			continue
		}
		mount := unescapeMount(fields[4])
		var h cgroupHierarchy
		switch fields[sep+1] {
		case "cgroup2":
			h = cgroupHierarchy{name: "unified", mount: mount}
		case "cgroup":
			h = cgroupHierarchy{name: cgroupV1Name(fields[sep+3], controllers), mount: mount}
		default:
			continue
		}
		if h.name == "" || seen[h.name] {
			continue
		}
		seen[h.name] = true
		if h.name == "unified" {
			v2 = append(v2, h)
		} else {
			v1 = append(v1, h)
		}
	}
	slices.SortFunc(v1, func(a, b cgroupHierarchy) int { return strings.Compare(a.name, b.name) })
	return append(v2, v1...)
}

// cgroupV1Name names a cgroup v1 hierarchy from its mount's super options:
// its name= option, else its controllers joined by commas.
func cgroupV1Name(superOptions string, controllers map[string]bool) string {
	var names []string
	for _, opt := range strings.Split(superOptions, ",") {
		if name, ok := strings.CutPrefix(opt, "name="); ok {
			return name
		}
		if controllers[opt] {
			names = append(names, opt)
		}
	}
	return strings.Join(names, ",")
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a blank).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) && isOctal(s[i+1]) && isOctal(s[i+2]) && isOctal(s[i+3]) {
			b.WriteByte((s[i+1]-'0')<<6 | (s[i+2]-'0')<<3 | (s[i+3] - '0'))
			i += 3
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isOctal(c byte) bool { return c >= '0' && c <= '7' }
