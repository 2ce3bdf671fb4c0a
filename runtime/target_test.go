package runtime

import (
	"context"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gotrace/gotrace/internal/testenv"
	"github.com/gotrace/gotrace/lang"
	"github.com/gotrace/gotrace/usdt"
)

// libcPath is the file uprobe:libc names (usdt.TestFindTarget checks
// it against ldconfig -p).
func libcPath(t *testing.T) string {
	t.Helper()
	path := usdt.FindTarget("libc", nil, nil)
	if path == "" {
		t.Fatal("the loader's cache has no libc")
	}
	return path
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
		objs, _ := usdt.ProcessPaths(sleep.Process.Pid)
		for _, o := range objs {
			if strings.Contains(o, "/libc.so") {
				pidLibc = o
			}
		}
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
		info := lang.NewInfo()
		err = lang.Resolve(p, lang.Config{Host: NewHost(tc.opts.PID, tc.opts.Command)}, info)
		if err != nil {
			var msg strings.Builder
			err.(lang.ErrorList).Write(&msg, "stdin", tc.src)
			if len(tc.want) != 1 || !strings.Contains(msg.String(), tc.want[0]) {
				t.Errorf("%s: %s", tc.src, msg.String())
			}
			continue
		}
		var got []string
		for _, ap := range info.AttachPoints(p.Probes[0]) {
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
