package usdt

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gotrace/gotrace/internal/fixture"
	"github.com/gotrace/gotrace/internal/testenv"
)

const libstdcxx = `"/usr/lib/x86_64-linux-gnu/libstdc++.so.6"`

// TestListUprobesCaptured compares List with bpftrace 0.17's output for
// uprobe patterns, captured on Debian 12 (python3.11 3.11.2, PostgreSQL
// 15, libstdc++ of gcc 12) and on the fixture.
func TestListUprobesCaptured(t *testing.T) {
	const py = "/usr/bin/python3.11"
	const pg = "/usr/lib/postgresql/15/bin/postgres"
	pyMain := "uprobe:" + py + ":Py_BytesMain\nuprobe:" + py + ":Py_FrozenMain\nuprobe:" + py + ":Py_Main\nuprobe:" + py + ":Py_RunMain\n"
	const so = "/usr/lib/x86_64-linux-gnu/libstdc++.so.6"
	badAlloc := "uprobe:" + so + ":_ZNSt9bad_allocD0Ev\nuprobe:" + so + ":_ZNSt9bad_allocD1Ev\nuprobe:" + so + ":_ZNSt9bad_allocD2Ev\n"
	what := "uprobe:" + so + ":_ZNKSt9bad_alloc4whatEv\n"
	bin := fixture.Build(t, "bitcoind")
	for _, tc := range []struct{ file, pattern, want string }{
		{py, "uprobe:" + py + ":Py_*Main*", pyMain},
		{py, "uretprobe:" + py + ":Py_*Main*", strings.ReplaceAll(pyMain, "uprobe:", "uretprobe:")},
		{py, "uprobe:python3.11:Py_*Main*", pyMain},
		{py, "u*:" + py + ":Py_*Main*", pyMain},
		{py, "u:" + py + ":Py_Main", "uprobe:" + py + ":Py_Main\n"},
		{py, "ur:" + py + ":Py_Main", "uretprobe:" + py + ":Py_Main\n"},
		// An offset is dropped; a name that is no function lists nothing.
		{py, "uprobe:" + py + ":Py_Main+4", "uprobe:" + py + ":Py_Main\n"},
		{py, "uprobe:" + py + ":Py_Main+0x4", "uprobe:" + py + ":Py_Main\n"},
		{py, "uprobe:" + py + ":NoSuchFunction", ""},
		// A wildcard type stands for uprobe and usdt, not uretprobe.
		{py, "*:" + py + ":*line", "uprobe:" + py + ":PyOS_Readline\nusdt:" + py + ":python:line\n"},
		// A non-PIE executable's undefined function with a PLT address.
		{py, "uprobe:" + py + ":malloc", "uprobe:" + py + ":malloc\n"},
		{pg, "uprobe:" + pg + ":standard_Executor*", "uprobe:" + pg + ":standard_ExecutorEnd\nuprobe:" + pg + ":standard_ExecutorFinish\nuprobe:" + pg + ":standard_ExecutorRun\nuprobe:" + pg + ":standard_ExecutorStart\n"},
		{pg, "uprobe:" + pg + ":exec_simple_query", ""},
		// C++: the mangled name, or the start of the demangled one.
		{so, "uprobe:" + libstdcxx + ":*bad_alloc*", what + badAlloc + "uprobe:" + so + ":_ZSt17__throw_bad_allocv\n"},
		{so, "uprobe:" + libstdcxx + `:"std::bad_alloc*"`, what + badAlloc},
		{so, "uprobe:" + libstdcxx + `:"std::bad_alloc::~bad_alloc"`, badAlloc},
		{so, "uprobe:" + libstdcxx + `:"std::bad_alloc::~bad_alloc()"`, badAlloc},
		{so, "uprobe:" + libstdcxx + `:"std::bad_al"`, what + badAlloc},
		{so, "uprobe:" + libstdcxx + `:"bad_alloc"`, ""},
		{so, "uprobe:" + libstdcxx + `:"std::bad_alloc::what"`, what},
		{so, `uprobe:"/usr/lib/x86_64-linux-gnu/libstdc++.so.6*":_ZNSt9bad_allocD0Ev`,
			"uprobe:/usr/lib/x86_64-linux-gnu/libstdc++.so.6.0.30:_ZNSt9bad_allocD0Ev\nuprobe:" + so + ":_ZNSt9bad_allocD0Ev\n"},
		{bin, "uprobe:./bitcoind:emit_net_*", "uprobe:./bitcoind:emit_net_closed_connection\nuprobe:./bitcoind:emit_net_evicted_inbound_connection\n" +
			"uprobe:./bitcoind:emit_net_inbound_connection\nuprobe:./bitcoind:emit_net_inbound_message\nuprobe:./bitcoind:emit_net_misbehaving_connection\n" +
			"uprobe:./bitcoind:emit_net_outbound_connection\nuprobe:./bitcoind:emit_net_outbound_message\n"},
		{bin, `uprobe:./bitcoind:"CChainState::ConnectBlock"`, "uprobe:./bitcoind:_ZN11CChainState12ConnectBlockERK6CBlockR20BlockValidationStateP11CBlockIndexR15CCoinsViewCacheRK12CChainParamsb\n"},
		{bin, "*:./bitcoind:*inbound_message", "uprobe:./bitcoind:emit_net_inbound_message\nusdt:./bitcoind:net:inbound_message\n"},
		{bin, "uretprobe:./bitcoind:legacy*", "uretprobe:./bitcoind:legacy\nuretprobe:./bitcoind:legacy_connect_block\nuretprobe:./bitcoind:legacy_process_message\nuretprobe:./bitcoind:legacy_push_message\n"},
	} {
		t.Run(tc.pattern, func(t *testing.T) {
			testenv.RequireFile(t, tc.file)
			t.Chdir(filepath.Dir(bin))
			t.Setenv("PATH", "/usr/local/bin:/usr/bin:/bin")
			if got := listString(t, ListOptions{Pattern: tc.pattern}); got != tc.want {
				t.Errorf("List(%q) =\n%s\nwant (bpftrace 0.17)\n%s", tc.pattern, got, tc.want)
			}
		})
	}
}

// startPython starts python3.11 sleeping and returns its PID once it has
// mapped libc.
func startPython(t *testing.T) int {
	t.Helper()
	testenv.RequireFile(t, "/usr/bin/python3.11")
	cmd := exec.Command("/usr/bin/python3.11", "-c", "import time; time.sleep(60)")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		objs, _ := ProcessPaths(cmd.Process.Pid)
		if slices.ContainsFunc(objs, func(o string) bool { return strings.Contains(o, "/libc.so") }) {
			return cmd.Process.Pid
		}
	}
	t.Fatal("python3.11 maps no libc")
	return 0
}

// TestListUprobesMatchesBpftrace compares List with a live bpftrace 0.17,
// byte for byte, on system files, the fixture and a python3.11 process.
func TestListUprobesMatchesBpftrace(t *testing.T) {
	testenv.RequireBpftrace(t)
	const py = "/usr/bin/python3.11"
	testenv.RequireFile(t, py)
	bin := fixture.Build(t, "bitcoind")
	dir := filepath.Dir(bin)
	t.Setenv("PATH", "/usr/local/bin:/usr/bin:/bin")
	patterns := []string{
		"uprobe:" + py + ":*", "uretprobe:" + py + ":*", "uprobe:" + py + ":Py_*Main*", "*:" + py + ":*",
		"uprobe:" + py + ":Py_Main+4", "uprobe:python3.11:PyList_*", "uprobe:/usr/bin/pyth*:Py_Main",
		"uprobe:/usr/bin/../bin/python3.11:Py_Main*",
		"uprobe:libc:*", "uprobe:libc:mall*", "uprobe:libpthread:*", "uprobe:libm:*sin*",
		"uprobe:/usr/lib/x86_64-linux-gnu/libc.so*:malloc",
		"uprobe:" + libstdcxx + ":*", "uprobe:" + libstdcxx + `:"std::*"`, "uprobe:" + libstdcxx + `:"*::what() const"`,
		"uprobe:" + libstdcxx + `:"* const"`, "uprobe:" + libstdcxx + `:"*(*"`, "uprobe:" + libstdcxx + `:"*char const*"`,
		"uprobe:" + bin + ":*", "uprobe:./bitcoind:*", "uprobe:bitcoind:*", "uprobe:./*:main", "*:./bitcoind:*",
		"uprobe:./bitcoind:" + `"CChainState::*"`,
	}
	if _, err := os.Stat("/usr/lib/postgresql/15/bin/postgres"); err == nil {
		patterns = append(patterns, "uprobe:/usr/lib/postgresql/15/bin/postgres:*", "uprobe:/usr/lib/postgresql/15/bin/postgres:*alloc*")
	}
	for _, pat := range patterns {
		want := bpftraceList(t, dir, pat)
		t.Chdir(dir)
		if got := listString(t, ListOptions{Pattern: pat}); got != want || got == "" {
			t.Errorf("List(%q) differs from bpftrace:\n%s", pat, lineDiff(got, want))
		}
	}

	pid := startPython(t)
	for _, pat := range []string{"", "*", "*:*", "uprobe:*", "uprobe:Py_*Main", "uretprobe:Py_Main", "uprobe:libc:mall*", "uprobe:" + py + ":Py_Main"} {
		args := []string{"-p", strconv.Itoa(pid)}
		if pat != "" {
			args = append(args, pat)
		}
		want := bpftraceList(t, "/", args...)
		if got := listString(t, ListOptions{Pattern: pat, PID: pid}); got != want || got == "" {
			t.Errorf("List(%q) of process %d differs from bpftrace:\n%s", pat, pid, lineDiff(got, want))
		}
	}
}

// TestListUprobesBeyondBpftrace covers where gotrace lists what bpftrace
// 0.17 misses.
func TestListUprobesBeyondBpftrace(t *testing.T) {
	const py = "/usr/bin/python3.11"
	testenv.RequireFile(t, py)
	t.Setenv("PATH", "/usr/bin")
	for _, tc := range []struct{ pattern, want string }{
		// 0.17 matches * tokens greedily and misses a name whose last
		// part comes twice: PyCode_GetCode.
		{"uprobe:" + py + ":*Code", "PyCode_GetCode\nPyEval_EvalCode\nPyFile_OpenCode\nPyFrame_GetCode\nPyFunction_GetCode\nXML_GetErrorCode\n"},
		// ? globs; 0.17 has a syntax error.
		{"uprobe:" + py + ":Py_?unMain", "Py_RunMain\n"},
		// A path wildcard found through $PATH; 0.17 lists nothing.
		{"uprobe:python3.1?:Py_RunMain", "Py_RunMain\n"},
	} {
		var want strings.Builder
		for name := range strings.Lines(tc.want) {
			want.WriteString("uprobe:" + py + ":" + name)
		}
		if got := listString(t, ListOptions{Pattern: tc.pattern}); got != want.String() {
			t.Errorf("List(%q) =\n%s\nwant\n%s", tc.pattern, got, want.String())
		}
	}
}

// TestExpandGlob checks that path globs keep what was written and pass
// over hidden files, as glob(3) does for bpftrace.
func TestExpandGlob(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"a1", "a2", ".a3", "b/c1"} {
		path := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(path), 0o755)
		if err := os.WriteFile(path, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(dir)
	for _, tc := range []struct {
		pattern string
		want    []string
	}{
		{"a*", []string{"a1", "a2"}},
		{"./a?", []string{"./a1", "./a2"}},
		{".a*", []string{".a3"}},
		{"*/c*", []string{"b/c1"}},
		{"./b/../a*", []string{"./b/../a1", "./b/../a2"}},
		{dir + "/*1", []string{dir + "/a1"}},
		{"x*", nil},
	} {
		got := expandGlob(tc.pattern)
		slices.Sort(got)
		if !slices.Equal(got, tc.want) {
			t.Errorf("expandGlob(%q) = %q, want %q", tc.pattern, got, tc.want)
		}
	}
}

// TestGlobTargets checks the target files a usdt or uprobe pattern
// matches: the ELF files only, named as expanded, and a message of its own
// when there is none.
func TestGlobTargets(t *testing.T) {
	exe, err := os.ReadFile("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	files := map[string][]byte{"usdt_test": exe, "usdt_test-pie": exe, "usdt_test.c": []byte("int main;\n")}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(dir)
	got, err := GlobTargets("usdt", "./usdt_test*")
	if want := []string{"./usdt_test", "./usdt_test-pie"}; err != nil || !slices.Equal(got, want) {
		t.Errorf("GlobTargets(./usdt_test*) = %q, %v; want %q", got, err, want)
	}
	_, err = GlobTargets("uprobe", "./none*")
	if want := "uprobe target file './none*' does not exist or is not executable"; err == nil || err.Error() != want {
		t.Errorf("GlobTargets(./none*) error %v, want %q", err, want)
	}
}
