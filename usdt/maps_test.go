package usdt

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gotrace/gotrace/internal/testenv"
)

func TestParseMaps(t *testing.T) {
	maps := `55d4c5a00000-55d4c5a2e000 r--p 00000000 08:01 1311 /usr/bin/python3.11
55d4c5a2e000-55d4c5d0f000 r-xp 0002e000 08:01 1311 /usr/bin/python3.11
55d4c5d0f000-55d4c5f00000 rw-p 0030f000 08:01 1311 /usr/bin/python3.11
55d4c7000000-55d4c7100000 rw-p 00000000 00:00 0                          [heap]
7f0000000000-7f0000100000 r--p 00000000 08:01 2000 /usr/lib/locale/C.utf8/LC_CTYPE
7f0000100000-7f0000200000 r-xp 00001000 08:01 2001 /opt/my app/lib/libx.so
7f0000200000-7f0000300000 r-xp 00001000 08:01 2002 /tmp/gone.so (deleted)
7f0000300000-7f0000400000 r-xp 00028000 08:01 2003 /usr/lib/x86_64-linux-gnu/libc.so.6
7f0000400000-7f0000401000 rw-s 00000000 00:01 2004 /dev/zero
7ffd00000000-7ffd00001000 r-xp 00000000 00:00 0                          [vdso]
`
	ms, err := ParseMappings([]byte(maps))
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 10 {
		t.Fatalf("ParseMappings: %d mappings, want 10", len(ms))
	}
	if want := (Mapping{Start: 0x7f0000100000, End: 0x7f0000200000, Offset: 0x1000, Perms: "r-xp", Dev: unix.Mkdev(8, 1), Ino: 2001, Path: "/opt/my app/lib/libx.so"}); ms[5] != want {
		t.Errorf("the mapping with a space in its path = %+v, want %+v", ms[5], want)
	}
	if heap := ms[3]; heap.Path != "[heap]" || heap.Dev != 0 || heap.Ino != 0 || heap.File() || heap.Executable() {
		t.Errorf("the heap's mapping = %+v (file %v, executable %v)", heap, heap.File(), heap.Executable())
	}
	got := Objects(ms, 42)
	want := []MappedObject{
		{"/usr/bin/python3.11", "/proc/42/root/usr/bin/python3.11"},
		{"/opt/my app/lib/libx.so", "/proc/42/root/opt/my app/lib/libx.so"},
		{"/usr/lib/x86_64-linux-gnu/libc.so.6", "/proc/42/root/usr/lib/x86_64-linux-gnu/libc.so.6"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Objects =\n%+v\nwant\n%+v", got, want)
	}
	for _, tt := range []struct {
		addr   uint64
		mapped bool
	}{
		{0x55d4c7000000, true}, // the heap: anonymous mappings count
		{0x55d4c70fffff, true},
		{0x55d4c7100000, false}, // End is past the mapping
		{0x1000, false},
	} {
		if got := AddressMapped(ms, tt.addr); got != tt.mapped {
			t.Errorf("AddressMapped(%#x) = %v, want %v", tt.addr, got, tt.mapped)
		}
	}

	for _, bad := range []string{
		"55d4c5a00000-55d4c5a2e000 r--p\n",
		"x rwxpq 0 0 0 /a\n",
		"55d4c5a00000-55d4c5a2e000 r--p 00000000 0801 1311 /a\n",
		"55d4c5a00000-55d4c5a2e000 r--p 00000000 08:01 inode /a\n",
		"55d4c5a00000 r--p 00000000 08:01 1311 /a\n",
	} {
		if _, err := ParseMappings([]byte(bad)); err == nil || !strings.Contains(err.Error(), "malformed") {
			t.Errorf("ParseMappings(%q) = %v, want a malformed-line error", bad, err)
		}
	}
}

// FuzzParseMappings checks that no text makes ParseMappings panic, and
// that what it parses holds together: every mapping's permissions are
// four letters, and an object is a file's executable mapping.
func FuzzParseMappings(f *testing.F) {
	f.Add([]byte("55d4c5a2e000-55d4c5d0f000 r-xp 0002e000 08:01 1311 /usr/bin/python3.11\n"))
	f.Add([]byte("7ffd00000000-7ffd00001000 r-xp 00000000 00:00 0                          [vdso]\n"))
	f.Add([]byte("7f0000200000-7f0000300000 r-xp 00001000 08:01 2002 /tmp/gone.so (deleted)\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ms, err := ParseMappings(data)
		if err != nil {
			return
		}
		for _, m := range ms {
			if len(m.Perms) != 4 {
				t.Fatalf("mapping %+v: permissions %q", m, m.Perms)
			}
		}
		for _, o := range Objects(ms, 1) {
			if !strings.HasPrefix(o.Path, "/") || strings.HasSuffix(o.Path, " (deleted)") {
				t.Fatalf("object %+v is not a file that exists", o)
			}
		}
	})
}

func TestMappedObjectsSelf(t *testing.T) {
	objs, err := MappedObjects(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	exe, _ = filepath.EvalSymlinks(exe)
	prefix := fmt.Sprintf("/proc/%d/root", os.Getpid())
	found := false
	for _, o := range objs {
		if o.OpenPath != prefix+o.Path {
			t.Errorf("object %q opens as %q", o.Path, o.OpenPath)
		}
		if o.Path == exe {
			found = true
		}
		if _, err := os.Stat(o.OpenPath); err != nil {
			t.Errorf("object %q: %v", o.Path, err)
		}
	}
	if !found {
		t.Errorf("MappedObjects(self) = %+v, want it to include the test binary %s", objs, exe)
	}
}

func TestMappedObjectsErrors(t *testing.T) {
	_, err := MappedObjects(1 << 30)
	if !errors.Is(err, fs.ErrNotExist) || !strings.HasPrefix(err.Error(), "read mapped objects of process 1073741824: ") {
		t.Errorf("MappedObjects of a missing process = %v", err)
	}
	if _, err := MappedObjects(-1); err == nil || !strings.Contains(err.Error(), "not a process id") {
		t.Errorf("MappedObjects(-1) = %v", err)
	}
}

// TestListJavaProcess starts a JVM and lists the probes of its process:
// libjvm.so is loaded after start, so it is only found through the maps.
func TestListJavaProcess(t *testing.T) {
	java := testenv.RequireTool(t, "java")
	const libjvm = "/usr/lib/jvm/java-17-openjdk-amd64/lib/server/libjvm.so"
	testenv.RequireFile(t, libjvm)
	dir := t.TempDir()
	src := "public class Sleep { public static void main(String[] a) throws Exception {" +
		" System.out.println(\"ready\"); Thread.sleep(60000); } }\n"
	if err := os.WriteFile(filepath.Join(dir, "Sleep.java"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, java, "Sleep.java")
	cmd.Dir = dir
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	// "ready" comes after the JVM has loaded libjvm.so and compiled the
	// source.
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "ready\n" {
		t.Fatalf("java Sleep.java printed %q, %v", line, err)
	}
	pid := cmd.Process.Pid

	objs, err := MappedObjects(pid)
	if err != nil {
		t.Fatal(err)
	}
	if !slicesContainsPath(objs, libjvm) {
		t.Fatalf("MappedObjects(java) = %+v, want libjvm.so", objs)
	}

	got := listString(t, ListOptions{PID: pid})
	prefix := fmt.Sprintf("usdt:/proc/%d/root%s:", pid, libjvm)
	n := 0
	for line := range strings.Lines(got) {
		if strings.HasPrefix(line, prefix) {
			n++
		}
	}
	if n != 517 {
		t.Errorf("List(-p java) has %d libjvm.so probes, want 517", n)
	}
	for _, pat := range []string{"usdt:*", "usdt:*:*", "usdt:" + libjvm + ":*", "usdt:*libjvm*:hotspot:*", "usdt:*:thread__*", "usdt:libjvm.so:*gc*"} {
		got := listString(t, ListOptions{PID: pid, Pattern: pat})
		if got == "" {
			t.Errorf("List(-p java, %q) is empty", pat)
		}
		if pat == "usdt:libjvm.so:*gc*" {
			// bpftrace 0.17 looks a bare name up in $PATH only and
			// fails; gotrace matches the object's file name.
			continue
		}
		if want := bpftraceList(t, "/", "-p", fmt.Sprint(pid), pat); got != want {
			t.Errorf("List(-p java, %q) differs from bpftrace:\n%s", pat, lineDiff(got, want))
		}
	}
}

func slicesContainsPath(objs []MappedObject, path string) bool {
	for _, o := range objs {
		if o.Path == path {
			return true
		}
	}
	return false
}
