package runtime

import (
	"context"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gotrace/gotrace/internal/fixture"
	"github.com/gotrace/gotrace/internal/testenv"
	"github.com/gotrace/gotrace/lang"
)

// ldconfigLibraries returns the x86-64 libraries `ldconfig -p` lists, in
// its order.
func ldconfigLibraries(t *testing.T) []ldCacheEntry {
	t.Helper()
	ldconfig := testenv.RequireTool(t, "ldconfig")
	out, err := exec.Command(ldconfig, "-p").Output()
	if err != nil {
		t.Fatalf("ldconfig -p: %v", err)
	}
	line := regexp.MustCompile(`^\t(\S+) \(libc6,x86-64[^)]*\) => (\S+)$`)
	var libs []ldCacheEntry
	for _, l := range strings.Split(string(out), "\n") {
		if m := line.FindStringSubmatch(l); m != nil {
			libs = append(libs, ldCacheEntry{name: m[1], path: m[2]})
		}
	}
	return libs
}

// TestReadLdCache reads the machine's loader cache as ldconfig -p lists it.
func TestReadLdCache(t *testing.T) {
	want := ldconfigLibraries(t)
	got, err := readLdCache()
	if err != nil {
		t.Fatal(err)
	}
	if len(want) < 10 || !slices.Equal(got, want) {
		t.Errorf("read %d libraries, ldconfig -p lists %d:\n%v\n%v", len(got), len(want), got, want)
	}
}

// ldCache builds a loader cache in the current format with the given
// entries, each flags, name and path.
func ldCache(entries ...ldCacheEntryFlags) []byte {
	head := make([]byte, ldCacheHeaderLen+len(entries)*ldCacheEntryLen)
	copy(head, ldCacheMagic)
	binary.LittleEndian.PutUint32(head[20:], uint32(len(entries)))
	strs := []byte{}
	for i, e := range entries {
		off := ldCacheHeaderLen + i*ldCacheEntryLen
		binary.LittleEndian.PutUint32(head[off:], e.flags)
		binary.LittleEndian.PutUint32(head[off+4:], uint32(len(head)+len(strs)))
		strs = append(append(strs, e.name...), 0)
		binary.LittleEndian.PutUint32(head[off+8:], uint32(len(head)+len(strs)))
		strs = append(append(strs, e.path...), 0)
	}
	return append(head, strs...)
}

type ldCacheEntryFlags struct {
	flags      uint32
	name, path string
}

func TestParseLdCache(t *testing.T) {
	good := ldCache(
		ldCacheEntryFlags{0x0303, "libz.so.1", "/lib/x86_64-linux-gnu/libz.so.1"},
		ldCacheEntryFlags{0x0003, "libz.so.1", "/lib/i386-linux-gnu/libz.so.1"},
		ldCacheEntryFlags{0x0a03, "libc.so.6", "/lib/aarch64-linux-gnu/libc.so.6"},
		ldCacheEntryFlags{0x0303, "libc.so.6", "/lib/x86_64-linux-gnu/libc.so.6"},
	)
	got, err := parseLdCache(good)
	want := []ldCacheEntry{{"libz.so.1", "/lib/x86_64-linux-gnu/libz.so.1"}, {"libc.so.6", "/lib/x86_64-linux-gnu/libc.so.6"}}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("parseLdCache = %v, %v; want %v", got, err, want)
	}
	badOffset := slices.Clone(good)
	binary.LittleEndian.PutUint32(badOffset[ldCacheHeaderLen+4:], 1<<30)
	tooMany := slices.Clone(good)
	binary.LittleEndian.PutUint32(tooMany[20:], 1<<31)
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"old format", []byte("ld.so-1.7.0\x00\x00\x00\x00\x00"), "not a glibc-ld.so.cache1.1 file"},
		{"truncated header", good[:30], "truncated header"},
		{"truncated entries", good[:ldCacheHeaderLen+30], "4 entries do not fit"},
		{"too many entries", tooMany, "entries do not fit"},
		{"string offset", badOffset, "entry 0: string offset 1073741824 is past the end"},
	} {
		if _, err := parseLdCache(tc.data); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
}

// FuzzParseLdCache checks that parseLdCache never panics.
func FuzzParseLdCache(f *testing.F) {
	f.Add(ldCache(ldCacheEntryFlags{0x0303, "libc.so.6", "/lib/x86_64-linux-gnu/libc.so.6"}))
	f.Add([]byte(ldCacheMagic))
	f.Fuzz(func(t *testing.T, data []byte) {
		entries, err := parseLdCache(data)
		if err != nil && entries != nil {
			t.Errorf("entries %v with error %v", entries, err)
		}
	})
}

// libcPath is where the loader's cache says libc.so.6 is.
func libcPath(t *testing.T) string {
	t.Helper()
	for _, l := range ldconfigLibraries(t) {
		if l.name == "libc.so.6" {
			return l.path
		}
	}
	t.Fatal("ldconfig -p lists no libc.so.6")
	return ""
}

func TestFindTarget(t *testing.T) {
	testenv.RequireFile(t, python3)
	libc := libcPath(t)
	bin := fixture.Build(t, "bitcoind")
	t.Chdir(filepath.Dir(bin))
	path := t.TempDir()
	// A file in $PATH that is not ELF (a pyenv shim) does not count.
	if err := os.WriteFile(filepath.Join(path, "python3.11"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", path+"::/usr/local/bin:/usr/bin:/bin")
	objs := []string{"/usr/bin/python3.11", "/opt/x/libfoo.so.1", "/opt/x/libbar-2.3.so", "/proc/7/root/usr/lib/x86_64-linux-gnu/libc.so.6"}
	for _, tc := range []struct {
		name           string
		mapped, loaded []string
		want           string
	}{
		{"libc", nil, nil, libc},
		// A -p process's objects come first, a -c command's last.
		{"libc", objs, nil, "/proc/7/root/usr/lib/x86_64-linux-gnu/libc.so.6"},
		{"libc", nil, objs, libc},
		{"libfoo", objs, nil, "/opt/x/libfoo.so.1"},
		{"libfoo", nil, objs, "/opt/x/libfoo.so.1"},
		{"libfoo.so", objs, nil, "/opt/x/libfoo.so.1"},
		{"libbar", objs, nil, "/opt/x/libbar-2.3.so"},
		{"libfo", objs, objs, ""},
		{"libfoo", nil, nil, ""},
		// As in bpftrace 0.17: a library is named without its .so
		// suffix, and by a name starting with lib.
		{"libc.so.6", nil, nil, ""},
		{"c", nil, nil, ""},
		{"python3.11", nil, nil, "/usr/bin/python3.11"},
		{"bash", nil, nil, "/usr/bin/bash"},
		{"bitcoind", nil, nil, "bitcoind"},
		{"bitcoind", objs, objs, "bitcoind"},
		{"no-such-program", nil, nil, ""},
	} {
		if got := findTarget(tc.name, tc.mapped, tc.loaded); got != tc.want {
			t.Errorf("findTarget(%q, %q, %q) = %q, want %q", tc.name, tc.mapped, tc.loaded, got, tc.want)
		}
	}
}

func TestResolveTargets(t *testing.T) {
	testenv.RequireFile(t, python3)
	libc := libcPath(t)
	t.Setenv("PATH", "/usr/local/bin:/usr/bin:/bin")
	sleep := exec.Command("sleep", "30")
	if err := sleep.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sleep.Process.Kill(); sleep.Wait() })
	pidLibc := ""
	for deadline := time.Now().Add(5 * time.Second); pidLibc == "" && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		objs, _ := processObjects(sleep.Process.Pid)
		pidLibc = mappedLibrary("libc", objs)
	}
	for _, tc := range []struct {
		src  string
		opts Options
		want []string // the targets, or the error
	}{
		{"uprobe:libc:malloc, uretprobe:libc:free, usdt:python3.11:python:function__entry, uprobe:/bin/sh:main, BEGIN { }", Options{},
			[]string{libc, libc, "/usr/bin/python3.11", "/bin/sh", ""}},
		{"uprobe:libc:malloc { }", Options{PID: sleep.Process.Pid}, []string{pidLibc}},
		{"usdt:*:python:function__entry, usdt::python:function__entry { }", Options{}, []string{"*", ""}},
		{"uprobe:libc.so.6:malloc { }", Options{},
			[]string{"stdin:1:1-24: ERROR: uprobe target file 'libc.so.6' does not exist or is not executable\n" +
				"uprobe:libc.so.6:malloc { }\n" + strings.Repeat("~", 23) + "\n" +
				"HINT: looked for as libc.so.6.so* in the loader's cache (ldconfig -p) and among the objects of a -p process or -c command, then in the working directory and $PATH; a library is named without .so (libc)\n"}},
		{"usdt:nope:p:n { }", Options{}, []string{"usdt target file 'nope' does not exist or is not executable"}},
	} {
		p, err := lang.Parse("stdin", tc.src)
		if err != nil {
			t.Fatal(err)
		}
		err = resolveTargets(p, tc.opts, nil)
		if err != nil {
			var msg strings.Builder
			err.(lang.ErrorList).Write(&msg, "stdin", tc.src)
			if len(tc.want) != 1 || !strings.Contains(msg.String(), tc.want[0]) {
				t.Errorf("%s: %s", tc.src, msg.String())
			}
			continue
		}
		var got []string
		for _, ap := range p.Probes[0].Attach {
			got = append(got, ap.Target)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: targets %q, want %q", tc.src, got, tc.want)
		}
	}
	if pidLibc == "" {
		t.Error("sleep maps no libc")
	}
}

// TestRunLibraryName traces uprobe:libc:malloc, bpftrace's own example,
// on a -c command: the library is found by its short name and the probe
// builtin names the file.
func TestRunLibraryName(t *testing.T) {
	testenv.RequireRoot(t)
	libc := libcPath(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, stderr, err := runScript(t, ctx, `uprobe:libc:malloc { @[probe] = count(); }`, Options{Command: quietCommand("ls", "/")})
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if !regexp.MustCompile(`(?m)^@\[uprobe:` + regexp.QuoteMeta(libc) + `:malloc\]: [1-9][0-9]*$`).MatchString(out) {
		t.Errorf("output %q lacks a count of %s:malloc", out, libc)
	}
}
