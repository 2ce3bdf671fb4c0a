package runtime

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/gotrace/gotrace/internal/testenv"
)

// TestReadCgroupHierarchies reads a mount table with cgroup2, v1
// hierarchies named by their controllers and by name=, a co-mounted
// pair, a second mount of one hierarchy, a bind mount of a subtree and a
// mount point with a blank: cgroup2 first, then the others by name.
func TestReadCgroupHierarchies(t *testing.T) {
	dir := t.TempDir()
	mountinfo := filepath.Join(dir, "mountinfo")
	cgroups := filepath.Join(dir, "cgroups")
	writeFile(t, mountinfo, `24 1 0:22 / /sys/fs/cgroup rw - tmpfs tmpfs rw,mode=755
25 24 0:23 / /sys/fs/cgroup/systemd rw shared:9 - cgroup cgroup rw,xattr,name=systemd
26 24 0:24 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory
27 24 0:25 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct
28 24 0:26 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw,nsdelegate
29 1 0:24 / /mnt/memory\040again rw - cgroup cgroup rw,memory
30 1 0:26 /sub /mnt/sub rw - cgroup2 cgroup2 rw
31 1 0:27 / /mnt/pids\040here rw - cgroup cgroup rw,pids
`)
	writeFile(t, cgroups, "#subsys_name\thierarchy\tnum_cgroups\tenabled\ncpu\t3\t1\t1\ncpuacct\t3\t1\t1\nmemory\t2\t1\t1\npids\t4\t1\t1\n")
	got := readCgroupHierarchies(mountinfo, cgroups)
	want := []cgroupHierarchy{
		{"unified", "/sys/fs/cgroup/unified"},
		{"cpu,cpuacct", "/sys/fs/cgroup/cpu,cpuacct"},
		{"memory", "/sys/fs/cgroup/memory"},
		{"pids", "/mnt/pids here"},
		{"systemd", "/sys/fs/cgroup/systemd"},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("hierarchies:\n%v\nwant\n%v", got, want)
	}
	if got := readCgroupHierarchies(filepath.Join(dir, "none"), cgroups); got != nil {
		t.Errorf("hierarchies of a missing mount table: %v, want none", got)
	}
}

// TestCgroupPathsText names the directories of a tree by their inode
// numbers, as cgroup_path() names cgroups, through a filter, and passes
// over a file of the number asked for.
func TestCgroupPathsText(t *testing.T) {
	v2, v1 := t.TempDir(), t.TempDir()
	for _, d := range []string{"a/b", "c"} {
		if err := os.MkdirAll(filepath.Join(v2, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(v1, "file"), "")
	cp := cgroupPaths{found: map[uint64][]string{}, hierarchies: []cgroupHierarchy{{"unified", v2}, {"memory", v1}}}
	tests := []struct {
		id     uint64
		filter string
		want   string
	}{
		{inode(t, filepath.Join(v2, "a/b")), "", "unified:/a/b"},
		{inode(t, v2), "", "unified:/"},
		{inode(t, v1), "mem*", "memory:/"},
		{inode(t, v1), "unified", ""},
		{inode(t, filepath.Join(v1, "file")), "", ""},
	}
	for _, tt := range tests {
		if got := cp.text(tt.id, tt.filter); got != tt.want {
			t.Errorf("cgroup_path(%d, %q) = %q, want %q", tt.id, tt.filter, got, tt.want)
		}
	}
}

// TestRunCgroupPath names the cgroup2 cgroup a traced command runs in,
// made for the test, and the root cgroup in every hierarchy, with and
// without a filter, in printf, a map key and a map value, as bpftrace 0.17
// does. (Without the filter 0.17 may add a cgroup v1 file whose inode
// number happens to be the id; gotrace takes directories only.)
func TestRunCgroupPath(t *testing.T) {
	testenv.RequireRoot(t)
	unified := ""
	for _, h := range readCgroupHierarchies("/proc/self/mountinfo", "/proc/cgroups") {
		if h.name == "unified" {
			unified = h.mount
		}
	}
	if unified == "" {
		testenv.Unavailable(t, "needs a cgroup2 hierarchy mounted")
	}
	name := fmt.Sprintf("gotrace-test-%d", os.Getpid())
	cg := filepath.Join(unified, name)
	if err := os.Mkdir(cg, 0o755); err != nil {
		t.Fatalf("make a cgroup: %v", err)
	}
	t.Cleanup(func() { os.Remove(cg) })
	dir := t.TempDir()
	bin := buildC(t, dir, "nic", nicSource)
	// A script rather than sh -c '...': bpftrace 0.17 splits -c's
	// command at blanks, quotes or not.
	enter := filepath.Join(dir, "enter.sh")
	writeFile(t, enter, fmt.Sprintf("echo $$ > %s/cgroup.procs && exec %s\n", cg, bin))
	command := "/bin/sh " + enter
	src := `uprobe:` + bin + `:seen {
	printf("%s|%s\n", cgroup_path(cgroup, "unified"), cgroup_path(cgroup, "nothing*"));
	@[cgroup_path(cgroup, "unif*")] = 1;
}
END { @root = cgroup_path(1); }`
	out := traceCommand(t, command, src, Options{})
	root := rootCgroupText(t)
	want := fmt.Sprintf("unified:/%s|\n\n\n@[unified:/%s]: 1\n@root: %s\n", name, name, root)
	if out != want {
		t.Errorf("output:\n%q\nwant\n%q", out, want)
	}
	bpftrace := testenv.RequireBpftrace(t)
	// 0.17 takes no cgroup_path() as a map key ("invalid mapkey argument
	// type"): its part is left out.
	theirs, err := exec.Command(bpftrace, "-q", "-c", command, "-e", strings.Replace(src, `@[cgroup_path(cgroup, "unif*")] = 1;`, "", 1)).Output()
	if err != nil {
		t.Fatalf("bpftrace: %v", err)
	}
	if want := fmt.Sprintf("unified:/%s|\n\n\n@root: %s\n", name, root); string(theirs) != want {
		t.Errorf("bpftrace printed:\n%q\nwant\n%q", theirs, want)
	}
}

// rootCgroupText is cgroup_path(1) of this machine: the root of every
// hierarchy, whose directory is inode 1 in each.
func rootCgroupText(t *testing.T) string {
	t.Helper()
	var parts []string
	for _, h := range readCgroupHierarchies("/proc/self/mountinfo", "/proc/cgroups") {
		if inode(t, h.mount) == 1 {
			parts = append(parts, h.name+":/")
		}
	}
	return strings.Join(parts, ",")
}

// inode returns the inode number of the file at path.
func inode(t *testing.T, path string) uint64 {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	return st.Ino
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}
