package usdt

import (
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/gotrace/gotrace/internal/fixture"
	"github.com/gotrace/gotrace/internal/testenv"
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
	testenv.RequireFile(t, "/usr/bin/python3.11")
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
		if got := FindTarget(tc.name, tc.mapped, tc.loaded); got != tc.want {
			t.Errorf("FindTarget(%q, %q, %q) = %q, want %q", tc.name, tc.mapped, tc.loaded, got, tc.want)
		}
	}
}

// TestIsTargetFile checks bpftrace 0.17's test of a target file: an ELF
// file that may be executed or is a shared object. As root, any x bit
// makes a file executable.
func TestIsTargetFile(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		variant string // the fixture: PIE (a shared object) or not
		mode    os.FileMode
		want    bool
	}{
		{"bitcoind", 0o755, true},
		{"bitcoind", 0o644, true},
		{"bitcoind-nopie", 0o755, true},
		{"bitcoind-nopie", 0o644, false},
	} {
		path := filepath.Join(dir, tc.variant+tc.mode.String())
		b, err := os.ReadFile(fixture.Build(t, tc.variant))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b, tc.mode); err != nil {
			t.Fatal(err)
		}
		// The same answer whether the file is kept open for reading or
		// closed.
		var files Files
		for _, keep := range []*Files{nil, &files} {
			if got := isTargetFile(path, keep); got != tc.want {
				t.Errorf("isTargetFile(%s %v, kept open %v) = %v, want %v", tc.variant, tc.mode, keep != nil, got, tc.want)
			}
		}
		files.Close()
	}
	if isTargetFile(dir, nil) {
		t.Errorf("isTargetFile(%s), a directory, = true", dir)
	}
}
