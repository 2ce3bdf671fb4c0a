package usdt

import (
	"bufio"
	"bytes"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gotrace/gotrace/internal/testenv"
)

// The system files with USDT probes that the tests compare against
// bpftrace and readelf.
var systemFiles = []struct {
	path   string
	probes int // distinct provider:name
	notes  int
}{
	{"/usr/bin/python3.11", 8, 8},
	{"/usr/lib/postgresql/15/bin/postgres", 57, 71},
	{"/usr/lib/jvm/java-17-openjdk-amd64/lib/server/libjvm.so", 517, 531},
	{"/usr/lib/x86_64-linux-gnu/libstdc++.so.6", 3, 3},
}

func listString(t *testing.T, opts ListOptions) string {
	t.Helper()
	var b bytes.Buffer
	if err := List(&b, opts); err != nil {
		t.Fatalf("List(%+v): %v", opts, err)
	}
	return b.String()
}

// quotePath quotes a path that bpftrace's parser would not take bare (a
// '+' in it).
func quotePath(path string) string {
	if strings.ContainsAny(path, "+") {
		return strconv.Quote(path)
	}
	return path
}

// bpftraceList runs `bpftrace -l` with extra arguments in dir and returns
// its output (its warnings go to stderr).
func bpftraceList(t *testing.T, dir string, args ...string) string {
	t.Helper()
	bt := testenv.RequireBpftrace(t)
	cmd := exec.Command(bt, append([]string{"-l"}, args...)...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("bpftrace -l %q: %v\n%s", args, err, stderr.Bytes())
	}
	return string(out)
}

// TestListMatchesBpftrace compares List with bpftrace 0.17's -l output,
// byte for byte, on the system files and several patterns.
func TestListMatchesBpftrace(t *testing.T) {
	for _, f := range systemFiles {
		t.Run(filepath.Base(f.path), func(t *testing.T) {
			testenv.RequireFile(t, f.path)
			q := quotePath(f.path)
			patterns := []string{
				"usdt:" + q + ":*",
				"usdt:" + q + ":*:*",
				"*:" + q + ":*",
				"usdt:" + q + ":*:*loaded*",
				"usdt:" + q + ":*gc*",
				"usdt:" + q + ":hotspot:*",
				"usdt:" + q + ":python:*",
				"usdt:" + q + ":*:*__start",
				"u*:" + q + ":*:*throw",
			}
			for _, pat := range patterns {
				got := listString(t, ListOptions{Pattern: pat})
				want := bpftraceList(t, "/", pat)
				if got != want {
					t.Errorf("List(%q) differs from bpftrace:\n%s", pat, lineDiff(got, want))
				}
			}
			all := listString(t, ListOptions{Pattern: "usdt:" + q + ":*"})
			if n := strings.Count(all, "\n"); n != f.probes {
				t.Errorf("%s: %d probes, want %d", f.path, n, f.probes)
			}
		})
	}
}

// TestListRelativePaths checks paths relative to the working directory and
// bare names found through $PATH against bpftrace.
func TestListRelativePaths(t *testing.T) {
	const python = "/usr/bin/python3.11"
	testenv.RequireFile(t, python)
	for _, tc := range []struct{ dir, pattern string }{
		{"/usr/bin", "usdt:./python3.11:*"},
		{"/usr/lib", "usdt:../bin/python3.11:*:line"},
		{"/", "usdt:usr/bin/python3.11:*:gc*"},
		{"/", "usdt:python3.11:*"},
		{"/usr", "usdt:bin/python3.1*:*:line"},
	} {
		t.Run(tc.pattern, func(t *testing.T) {
			want := bpftraceList(t, tc.dir, tc.pattern)
			t.Chdir(tc.dir)
			got := listString(t, ListOptions{Pattern: tc.pattern})
			if got != want || got == "" {
				t.Errorf("List(%q) in %s differs from bpftrace:\n%s", tc.pattern, tc.dir, lineDiff(got, want))
			}
		})
	}
}

// readelfNotes runs `readelf -n` and returns the stapsdt notes it shows,
// each as "provider:name location base semaphore arguments".
func readelfNotes(t *testing.T, path string) []string {
	t.Helper()
	readelf := testenv.RequireTool(t, "readelf")
	out, err := exec.Command(readelf, "-n", path).Output()
	if err != nil {
		t.Fatalf("readelf -n %s: %v", path, err)
	}
	re := regexp.MustCompile(`(?m)^\s+Provider: (.*)\n\s+Name: (.*)\n\s+Location: (0x[0-9a-f]+), Base: (0x[0-9a-f]+), Semaphore: (0x[0-9a-f]+)\n\s+Arguments: ?(.*)$`)
	var notes []string
	for _, m := range re.FindAllStringSubmatch(string(out), -1) {
		loc, _ := strconv.ParseUint(m[3], 0, 64)
		base, _ := strconv.ParseUint(m[4], 0, 64)
		sem, _ := strconv.ParseUint(m[5], 0, 64)
		notes = append(notes, fmt.Sprintf("%s:%s %#x %#x %#x %s", m[1], m[2], loc, base, sem, m[6]))
	}
	if strings.Count(string(out), "NT_STAPSDT") != len(notes) {
		t.Fatalf("readelf -n %s: parsed %d of %d notes", path, len(notes), strings.Count(string(out), "NT_STAPSDT"))
	}
	return notes
}

// TestReadFileMatchesReadelf compares every note ReadFile decodes with
// readelf's view of it, and checks that every argument of these compilers'
// notes parses.
func TestReadFileMatchesReadelf(t *testing.T) {
	for _, f := range systemFiles {
		t.Run(filepath.Base(f.path), func(t *testing.T) {
			testenv.RequireFile(t, f.path)
			want := readelfNotes(t, f.path)
			probes, err := ReadFile(f.path)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range probes {
				for _, l := range p.Locations {
					got = append(got, fmt.Sprintf("%s:%s %#x %#x %#x %s", p.Provider, p.Name, l.PC, l.Base, l.Semaphore, l.ArgString))
					if l.ArgsErr != nil {
						t.Errorf("%s:%s: %v", p.Provider, p.Name, l.ArgsErr)
					}
					if len(l.Args) != len(strings.Fields(l.ArgString)) {
						t.Errorf("%s:%s: %d args from %q", p.Provider, p.Name, len(l.Args), l.ArgString)
					}
				}
			}
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("notes differ from readelf -n:\n%s", lineDiff(strings.Join(got, "\n"), strings.Join(want, "\n")))
			}
			if len(got) != f.notes {
				t.Errorf("%d notes, want %d", len(got), f.notes)
			}
		})
	}
}

// TestReadFileRIPSymbols checks the %rip operands of postgres against its
// dynamic symbol table.
func TestReadFileRIPSymbols(t *testing.T) {
	const postgres = "/usr/lib/postgresql/15/bin/postgres"
	testenv.RequireFile(t, postgres)
	nm := testenv.RequireTool(t, "nm")
	out, err := exec.Command(nm, "-D", "--defined-only", postgres).Output()
	if err != nil {
		t.Fatal(err)
	}
	syms := make(map[string]uint64)
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		if len(f) == 3 {
			v, _ := strconv.ParseUint(f[0], 16, 64)
			syms[f[2]] = v
		}
	}
	probes, err := ReadFile(postgres)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, p := range probes {
		for _, l := range p.Locations {
			for _, a := range l.Args {
				if a.Loc != ArgRIPRelative {
					continue
				}
				n++
				if want, ok := syms[a.Symbol]; !ok || a.SymbolAddr != want {
					t.Errorf("%s:%s %s: SymbolAddr %#x, nm says %#x", p.Provider, p.Name, a.Operand, a.SymbolAddr, want)
				}
			}
		}
	}
	if n == 0 {
		t.Error("postgres has no %rip operands; the test is useless")
	}
}

// TestListSynthetic checks the pattern forms on a generated file, where no
// system tools are needed.
func TestListSynthetic(t *testing.T) {
	var notes []byte
	for _, n := range []struct{ prov, name string }{
		{"zed", "b"}, {"a", "zz"}, {"a0", "x"}, {"zed", "a"}, {"Zed", "a"}, {"a_b", "c"}, {"a", "b_c"}, {"a", "zz"},
	} {
		notes = append(notes, noteBytes(0x401010, 0, 0, n.prov, n.name, "8@%rdi")...)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "t2")
	if err := os.WriteFile(path, testELF{notes: notes}.bytes(), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "t.c"), []byte("int main;"), 0o644); err != nil {
		t.Fatal(err)
	}
	lines := func(path string, ids ...string) string {
		var b strings.Builder
		for _, id := range ids {
			b.WriteString("usdt:" + path + ":" + id + "\n")
		}
		return b.String()
	}
	all := []string{"Zed:a", "a0:x", "a:b_c", "a:zz", "a_b:c", "zed:a", "zed:b"}
	tests := []struct {
		pattern, want string
	}{
		{"usdt:" + path + ":*", lines(path, all...)},
		{"usdt:" + path + ":*:*", lines(path, all...)},
		{"*:" + path + ":*", lines(path, all...)},
		{"us?t:" + path + ":*", lines(path, all...)},
		{"usdt:" + path + ":a:*", lines(path, "a:b_c", "a:zz")},
		{"usdt:" + path + ":*a*", lines(path, "Zed:a", "zed:a")},
		{"usdt:" + path + "::a", lines(path, "Zed:a", "zed:a")},
		{"usdt:" + path + ":?ed:a", lines(path, "Zed:a", "zed:a")},
		{"usdt:" + path + ":a?:*", lines(path, "a0:x")},
		{"usdt:" + path + ":zed", ""},
		{"usdt:" + path + ":Zed:A", ""},
		{`usdt:"` + path + `":a_b:c`, lines(path, "a_b:c")},
		{"usdt:" + dir + "/*:zed:b", lines(path, "zed:b")},
		{"usdt:" + dir + "/t?:zed:b", lines(path, "zed:b")},
		{"usdt:./t2:zed:*", lines("./t2", "zed:a", "zed:b")},
		{"usdt:t2:zed:b", lines("t2", "zed:b")},
	}
	t.Chdir(dir)
	for _, tt := range tests {
		got := listString(t, ListOptions{Pattern: tt.pattern})
		if got != tt.want {
			t.Errorf("List(%q) =\n%s\nwant\n%s", tt.pattern, got, tt.want)
		}
	}

	verbose := listString(t, ListOptions{Pattern: "usdt:" + path + ":a0:x", Verbose: true})
	wantVerbose := "usdt:" + path + ":a0:x\n" +
		"    location 0x401010 (offset 0x1010)\n" +
		"        arg0: uint64 8@%rdi\n"
	if verbose != wantVerbose {
		t.Errorf("verbose listing =\n%s\nwant\n%s", verbose, wantVerbose)
	}
}

// TestListOpensOnce counts the ELF opens of a listing: a file the
// pattern names is opened once, checked as a target and read through the
// same File, for its usdt probes and its functions alike; a file a
// wildcard matched is opened and closed on its own.
func TestListOpensOnce(t *testing.T) {
	notes := noteBytes(0x401010, 0, 0, "net", "msg", "8@%rdi")
	path := writeTemp(t, "once", testELF{notes: notes}.bytes())
	opens := 0
	saved := openRights
	openRights = func(open func() error) error { opens++; return open() }
	defer func() { openRights = saved }()
	for _, tc := range []struct {
		pattern string
		verbose bool
		want    int
	}{
		{"usdt:" + path + ":*", false, 1},
		{"usdt:" + path + ":*", true, 1},
		{"uprobe:" + path + ":*", false, 1},
		{"*:" + path + ":*", false, 1},
		// The glob's check and its reading: each File closed after.
		{"usdt:" + filepath.Dir(path) + "/onc?:*", false, 2},
	} {
		opens = 0
		listString(t, ListOptions{Pattern: tc.pattern, Verbose: tc.verbose})
		if opens != tc.want {
			t.Errorf("List(%q, verbose %v) opened the file %d times, want %d", tc.pattern, tc.verbose, opens, tc.want)
		}
	}
}

func TestListVerbose(t *testing.T) {
	notes := noteBytes(0x401010, 0, 0x403002, "net", "msg", "-8@%rdi 4@-20(%rbp) -1@$-1")
	notes = append(notes, noteBytes(0x401020, 0, 0x403002, "net", "msg", "-8@%rsi 8f@%xmm0")...)
	path := writeTemp(t, "v", testELF{notes: notes}.bytes())
	got := listString(t, ListOptions{Pattern: "usdt:" + path + ":*", Verbose: true})
	want := "usdt:" + path + ":net:msg\n" +
		"    location 0x401010 (offset 0x1010), semaphore 0x403002 (offset 0x2002)\n" +
		"        arg0: int64 -8@%rdi\n" +
		"        arg1: uint32 4@-20(%rbp)\n" +
		"        arg2: int8 -1@$-1\n" +
		"    location 0x401020 (offset 0x1020), semaphore 0x403002 (offset 0x2002)\n" +
		"        arg0: int64 -8@%rsi\n" +
		"        error: parse usdt argument \"8f@%xmm0\": size \"8f\" is not 1, 2, 4 or 8\n"
	if got != want {
		t.Errorf("verbose listing =\n%s\nwant\n%s", got, want)
	}
}

func TestListErrors(t *testing.T) {
	path := writeTemp(t, "prog", testELF{notes: noteBytes(0x401010, 0, 0, "p", "n", "")}.bytes())
	notELF := writeTemp(t, "script.sh", []byte("#!/bin/sh\n"))
	corrupt := writeTemp(t, "corrupt", testELF{notes: noteBytes(0x409000, 0, 0, "p", "n", "")}.bytes())
	tests := []struct {
		opts ListOptions
		msg  string
	}{
		{ListOptions{}, "no probe pattern and no process"},
		{ListOptions{Pattern: "usdt:" + path}, "requires 2 or 3 arguments"},
		{ListOptions{Pattern: "usdt:" + path + ":a:b:c"}, "requires 2 or 3 arguments"},
		{ListOptions{Pattern: "usdt:" + path + ":"}, "must have a target function or wildcard"},
		{ListOptions{Pattern: "usdt:" + path + ":p:"}, "must have a target function or wildcard"},
		{ListOptions{Pattern: "usdt::p:n"}, "must have a target file"},
		{ListOptions{Pattern: "kprobe:" + path + ":main"}, `probe type 'kprobe' is not listed`},
		{ListOptions{Pattern: "k*:" + path + ":main"}, `No probe type matched for k*`},
		{ListOptions{Pattern: "*"}, `'*' names no probe that gotrace lists`},
		{ListOptions{Pattern: "uprobe:" + path}, "uprobe probe type requires 2 arguments"},
		{ListOptions{Pattern: "uretprobe::main"}, "uretprobe should have a target"},
		{ListOptions{Pattern: "uprobe:" + path + ":"}, "uprobe should be attached to a function and/or address"},
		{ListOptions{Pattern: "uprobe:" + path + ":0x401000"}, "0x401000 is an address: -l lists functions by name"},
		{ListOptions{Pattern: "uretprobe:" + path + ":main+4"}, "Offset not allowed"},
		{ListOptions{Pattern: "uprobe:/no/such/binary:main"}, `uprobe target file '/no/such/binary' does not exist or is not executable`},
		{ListOptions{Pattern: "uprobe:libnosuchlibrary:main"}, `uprobe target file 'libnosuchlibrary' does not exist or is not executable`},
		{ListOptions{Pattern: "uprobe:" + notELF + ":*"}, "does not exist or is not executable"},
		{ListOptions{Pattern: "uprobe:main", PID: 1 << 30}, "find the executable of process 1073741824"},
		{ListOptions{Pattern: `usdt:"` + path + ":*"}, "unterminated quote"},
		{ListOptions{Pattern: "usdt:/no/such/binary:*"}, `usdt target file '/no/such/binary' does not exist or is not executable`},
		{ListOptions{Pattern: "usdt:/no/such/bin*:*"}, "does not exist or is not executable"},
		{ListOptions{Pattern: "usdt:" + notELF + ":*"}, "does not exist or is not executable"},
		{ListOptions{Pattern: "usdt:" + filepath.Dir(path) + ":*"}, "does not exist or is not executable"},
		{ListOptions{Pattern: "usdt:" + filepath.Dir(path) + "/[*:*"}, "does not exist or is not executable"},
		{ListOptions{Pattern: "usdt:" + corrupt + ":*"}, "read usdt notes of " + corrupt},
		{ListOptions{Pattern: "usdt:*", PID: 1 << 30}, "read mapped objects of process 1073741824"},
		{ListOptions{Pattern: "usdt:/no/such/binary:*", PID: os.Getpid()}, "does not exist or is not executable"},
	}
	for _, tt := range tests {
		var b bytes.Buffer
		err := List(&b, tt.opts)
		if err == nil || !strings.HasPrefix(err.Error(), "list probes: ") || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("List(%+v) = %v, want an error saying %q", tt.opts, err, tt.msg)
		}
		if b.Len() != 0 {
			t.Errorf("List(%+v) wrote %q before failing", tt.opts, b.String())
		}
	}
}

// TestListWildcardSkipsUnreadable checks that a glob over a directory
// passes over files that are ELF but not of a machine it reads notes of.
func TestListWildcardSkipsUnreadable(t *testing.T) {
	dir := t.TempDir()
	good := testELF{notes: noteBytes(0x401010, 0, 0, "p", "n", "")}.bytes()
	bad := testELF{machine: elf.EM_RISCV, notes: noteBytes(0x401010, 0, 0, "p", "n", "")}.bytes()
	for name, data := range map[string][]byte{"a": good, "b": bad} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	got := listString(t, ListOptions{Pattern: "usdt:" + dir + "/*:*"})
	if want := "usdt:" + dir + "/a:p:n\n"; got != want {
		t.Errorf("List = %q, want %q", got, want)
	}
}

// TestListLibjvmSpeed measures listing libjvm.so's 517 probes.
func TestListLibjvmSpeed(t *testing.T) {
	const libjvm = "/usr/lib/jvm/java-17-openjdk-amd64/lib/server/libjvm.so"
	testenv.RequireFile(t, libjvm)
	opts := ListOptions{Pattern: "usdt:" + libjvm + ":*"}
	best := time.Hour
	for range 5 {
		start := time.Now()
		var b bytes.Buffer
		if err := List(&b, opts); err != nil {
			t.Fatal(err)
		}
		best = min(best, time.Since(start))
	}
	t.Logf("listing libjvm.so took %v (best of 5)", best)
	if best > 200*time.Millisecond {
		t.Errorf("listing libjvm.so took %v, want well under 20ms", best)
	}
}

func BenchmarkListLibjvm(b *testing.B) {
	const libjvm = "/usr/lib/jvm/java-17-openjdk-amd64/lib/server/libjvm.so"
	testenv.RequireFile(b, libjvm)
	opts := ListOptions{Pattern: "usdt:" + libjvm + ":*"}
	for b.Loop() {
		var out bytes.Buffer
		if err := List(&out, opts); err != nil {
			b.Fatal(err)
		}
	}
}

// lineDiff shows the lines only one of got and want has.
func lineDiff(got, want string) string {
	in := func(s string) map[string]bool {
		m := make(map[string]bool)
		sc := bufio.NewScanner(strings.NewReader(s))
		for sc.Scan() {
			m[sc.Text()] = true
		}
		return m
	}
	g, w := in(got), in(want)
	var b strings.Builder
	for l := range g {
		if !w[l] {
			fmt.Fprintf(&b, "+ %s\n", l)
		}
	}
	for l := range w {
		if !g[l] {
			fmt.Fprintf(&b, "- %s\n", l)
		}
	}
	if b.Len() == 0 {
		return "(same lines, different order or duplicates)\n" + got
	}
	return b.String()
}
