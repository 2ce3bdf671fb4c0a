package main

// The -c command's life and user: it dies with gotrace however gotrace
// ends, and under sudo it runs as the user who ran sudo.

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gotrace/gotrace/internal/fixture"
	"github.com/gotrace/gotrace/internal/testenv"
)

// cpidScript prints the -c command's PID, then ticks until the trace ends.
const cpidScript = `BEGIN { printf("%d\n", cpid); } interval:ms:20 { printf("tick\n"); } END { printf("end\n"); }`

// tracerRun is a gotrace started by startTracer.
type tracerRun struct {
	cmd *exec.Cmd
	// pipe is its standard output, read through out.
	pipe   io.ReadCloser
	out    *bufio.Reader
	stderr *strings.Builder
	// child is the -c command's PID.
	child int
}

// startTracer starts gotrace with args and script, which prints cpid
// first, its standard output a pipe, and reads the -c command's PID.
func startTracer(t *testing.T, gotrace, script string, args ...string) *tracerRun {
	t.Helper()
	r := &tracerRun{cmd: exec.Command(gotrace, append(args, "-e", script)...), stderr: &strings.Builder{}}
	var err error
	if r.pipe, err = r.cmd.StdoutPipe(); err != nil {
		t.Fatal(err)
	}
	r.cmd.Stderr = r.stderr
	// A command that outlives gotrace holds its standard error open.
	r.cmd.WaitDelay = 2 * time.Second
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		r.cmd.Process.Kill()
		r.cmd.Wait()
	})
	r.out = bufio.NewReader(r.pipe)
	line, err := r.out.ReadString('\n')
	if err != nil {
		t.Fatalf("read the command's PID: %v\nstderr:\n%s", err, r.stderr)
	}
	if r.child, err = strconv.Atoi(strings.TrimSpace(line)); err != nil {
		t.Fatalf("first line %q: %v", line, err)
	}
	return r
}

// processGone reports whether pid has exited (a zombie nobody reaped yet
// counts as exited).
func processGone(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	// The state follows the command name in parentheses.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] == 'Z'
}

// waitGone fails t unless pid exits within 10 s.
func waitGone(t *testing.T, what string, pid int) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if processGone(pid) {
			return
		}
	}
	syscall.Kill(pid, syscall.SIGKILL)
	t.Errorf("%s: the -c command (pid %d) outlived gotrace", what, pid)
}

// TestChildDiesWithGotrace ends gotrace in each way that does not stop
// the -c command itself: SIGKILL, its standard output closing (a pipe to
// head), SIGHUP. The command must be gone each time.
func TestChildDiesWithGotrace(t *testing.T) {
	testenv.RequireRoot(t)
	gotrace := buildGotrace(t)
	args := []string{"-q", "-c", "sleep 600"}

	t.Run("SIGKILL", func(t *testing.T) {
		r := startTracer(t, gotrace, cpidScript, args...)
		r.cmd.Process.Kill()
		r.cmd.Wait()
		waitGone(t, "SIGKILL", r.child)
	})

	t.Run("stdout closed", func(t *testing.T) {
		r := startTracer(t, gotrace, cpidScript, args...)
		// What head -1 does after its line.
		r.pipe.Close()
		done := make(chan error, 1)
		go func() { done <- r.cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("gotrace: %v, want exit 0\nstderr:\n%s", err, r.stderr)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("gotrace still runs 10 s after its output closed")
		}
		if r.stderr.Len() > 0 {
			t.Errorf("stderr %q, want nothing", r.stderr)
		}
		waitGone(t, "stdout closed", r.child)
	})

	t.Run("exit with a grandchild", func(t *testing.T) {
		// sh runs sleep as its child, and does not pass SIGTERM on.
		r := startTracer(t, gotrace, `BEGIN { printf("%d\n", cpid); } interval:ms:300 { exit(); }`, "-q", "-c", "sh -c 'sleep 600; true'")
		var grandchild int
		for end := time.Now().Add(10 * time.Second); grandchild == 0 && time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
			b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", r.child, r.child))
			grandchild, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		}
		if grandchild == 0 {
			t.Fatal("sh started no sleep")
		}
		if err := r.cmd.Wait(); err != nil {
			t.Errorf("gotrace: %v\n%s", err, r.stderr)
		}
		waitGone(t, "exit()", grandchild)
	})

	t.Run("SIGHUP", func(t *testing.T) {
		r := startTracer(t, gotrace, cpidScript, args...)
		if err := r.cmd.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		rest := new(strings.Builder)
		if _, err := r.out.WriteTo(rest); err != nil {
			t.Fatal(err)
		}
		if err := r.cmd.Wait(); err != nil {
			t.Errorf("gotrace after SIGHUP: %v, want exit 0", err)
		}
		// Like SIGTERM: END runs.
		if !strings.HasSuffix(rest.String(), "end\n\n\n") {
			t.Errorf("output after SIGHUP %q, want END's line and the exit newlines", rest.String())
		}
		waitGone(t, "SIGHUP", r.child)
	})
}

// testGroup is a supplementary group of testUser, for the child's groups.
const testGroup = "gotrace-test-extra"

// requireTestUser returns testUser, creating it and making it a member of
// testGroup when needed.
func requireTestUser(t *testing.T) *user.User {
	t.Helper()
	u, err := unprivilegedUser()
	if err != nil {
		t.Fatal(err)
	}
	g, err := user.LookupGroup(testGroup)
	if err == nil {
		ids, err := u.GroupIds()
		if err != nil {
			t.Fatal(err)
		}
		if slices.Contains(ids, g.Gid) {
			return u
		}
	}
	for _, c := range [][]string{{"groupadd", "-f", testGroup}, {"usermod", "-a", "-G", testGroup, testUser}} {
		if out, err := exec.Command(c[0], c[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(c, " "), err, out)
		}
	}
	return u
}

// idLine is what id prints for u: uid, primary group and every group.
func idLine(t *testing.T, u *user.User) string {
	t.Helper()
	g, err := user.LookupGroupId(u.Gid)
	if err != nil {
		t.Fatal(err)
	}
	extra, err := user.LookupGroup(testGroup)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("uid=%s(%s) gid=%s(%s) groups=%s(%s),%s(%s)\n",
		u.Uid, u.Username, u.Gid, g.Name, u.Gid, g.Name, extra.Gid, extra.Name)
}

// TestChildUser runs -c commands as root would under sudo: as the user
// who ran sudo by default (SUDO_UID, SUDO_GID, the user's groups, HOME,
// USER, LOGNAME), as --user names, or as root with --as-root.
func TestChildUser(t *testing.T) {
	testenv.RequireRoot(t)
	u := requireTestUser(t)
	gotrace := buildGotrace(t)
	sudo := []string{"SUDO_UID=" + u.Uid, "SUDO_GID=" + u.Gid, "SUDO_USER=" + u.Username}
	want := idLine(t, u)
	env := fmt.Sprintf("%s %s %s\n", u.HomeDir, u.Username, u.Username)
	for _, tc := range []struct {
		name string
		env  []string
		args []string
		want string
	}{
		{"sudo", sudo, []string{"-c", "id"}, want},
		{"sudo env", sudo, []string{"-c", `sh -c 'echo $HOME $USER $LOGNAME'`}, env},
		{"user", nil, []string{"--user", testUser, "-c", "id"}, want},
		{"uid", nil, []string{"--user", u.Uid, "-c", "id"}, want},
		{"as-root", sudo, []string{"--as-root", "-c", "id -u"}, "0\n"},
		{"no sudo", nil, []string{"-c", "id -u"}, "0\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"-q", "-e", "BEGIN { }"}, tc.args...)
			cmd := exec.Command(gotrace, args...)
			cmd.Env = append(os.Environ(), tc.env...)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("gotrace %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
			}
			if got := strings.TrimSuffix(string(out), "\n\n"); got != tc.want {
				t.Errorf("gotrace %s printed %q, want %q", strings.Join(args, " "), got, tc.want)
			}
		})
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--user", "no-such-user-here", "-c", "id"}, "ERROR: look up user no-such-user-here: "},
		{[]string{"--user", testUser, "--as-root", "-c", "id"}, "ERROR: choose the command's user: --user and --as-root exclude each other\n"},
		{[]string{"--user", testUser}, "ERROR: --user and --as-root choose the user of a -c command: there is none\n"},
	} {
		args := append([]string{"-q", "-e", "BEGIN { }"}, tc.args...)
		out, err := exec.Command(gotrace, args...).CombinedOutput()
		if err == nil || !strings.HasPrefix(string(out), tc.want) {
			t.Errorf("gotrace %s: %v, output %q, want exit 1 and %q", strings.Join(args, " "), err, out, tc.want)
		}
	}
}

// userFixtureDir returns a directory that testUser can reach and write,
// holding a copy of the fixture as ./bitcoind; not under the test's
// private temporary directory, which only root can enter.
func userFixtureDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "gotrace-child-user")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if _, err := fixture.Copy(fixture.Build(t, "bitcoind"), dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

// childScript counts two of the fixture's tracepoints.
const childScript = `usdt:./bitcoind:net:outbound_message { @out = count(); } usdt:./bitcoind:mempool:replaced { @replaced = count(); }`

// runChild runs gotrace with args and childScript in dir, and returns its
// standard output and error.
func runChild(t *testing.T, gotrace, dir string, args ...string) (string, string) {
	t.Helper()
	cmd := exec.Command(gotrace, append(args, "-e", childScript)...)
	cmd.Dir = dir
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("gotrace %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out), stderr.String()
}

// checkFired checks that the fixture's summary file says the two probes
// of childScript fired at every event.
func checkFired(t *testing.T, summary string) {
	t.Helper()
	s, err := fixture.ReadSummary(summary)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"net:outbound_message", "mempool:replaced"} {
		if c := s.Probes[p]; c.Fired != c.Attempted || c.Fired == 0 {
			t.Errorf("%s attempted %d, fired %d", p, c.Attempted, c.Fired)
		}
	}
}

// TestChildUserProbes traces the fixture run as an unprivileged user: the
// probes attach and the semaphores rise as for root's own command.
func TestChildUserProbes(t *testing.T) {
	testenv.RequireRoot(t)
	u := requireTestUser(t)
	gotrace := buildGotrace(t)
	dir := userFixtureDir(t)
	summary := filepath.Join(dir, "summary")
	out, _ := runChild(t, gotrace, dir, "-q", "--user", testUser, "-c", "./bitcoind --linger-ms 0 --output "+summary)
	if want := "\n\n@out: 128\n@replaced: 4\n"; out != want {
		t.Errorf("output %q, want %q", out, want)
	}
	fi, err := os.Stat(summary)
	if err != nil {
		t.Fatal(err)
	}
	if st := fi.Sys().(*syscall.Stat_t); strconv.Itoa(int(st.Uid)) != u.Uid {
		t.Errorf("the fixture's summary belongs to uid %d, want %s", st.Uid, u.Uid)
	}
	checkFired(t, summary)
}

// TestChildWrapped traces the fixture run through a wrapper, runuser,
// which starts it as its child: the probes are attached to the fixture
// too, in text and in JSON. A wrapper that never runs the traced file
// gets a warning instead of a silent count of 0.
func TestChildWrapped(t *testing.T) {
	testenv.RequireRoot(t)
	runuser := testenv.RequireTool(t, "runuser")
	requireTestUser(t)
	gotrace := buildGotrace(t)
	dir := userFixtureDir(t)
	summary := filepath.Join(dir, "summary")
	wrapped := runuser + " -u " + testUser + " -- ./bitcoind --wait-attach outbound_message,replaced --linger-ms 0 --output " + summary
	for _, format := range []struct{ name, want string }{
		{"text", "\n\n@out: 128\n@replaced: 4\n"},
		{"json", `{"type": "map", "data": {"@out": 128}}` + "\n" + `{"type": "map", "data": {"@replaced": 4}}` + "\n"},
	} {
		out, stderr := runChild(t, gotrace, dir, "-q", "-f", format.name, "-c", wrapped)
		if !strings.HasSuffix(out, format.want) || stderr != "" {
			t.Errorf("-f %s: output %q, stderr %q; want the output to end in %q", format.name, out, stderr, format.want)
		}
		checkFired(t, summary)
	}

	_, stderr := runChild(t, gotrace, dir, "-q", "-c", runuser+" -u "+testUser+" -- sleep 0.3")
	want := "WARNING: no probe could fire: neither the -c command (" + runuser + ") nor the processes it started mapped " + filepath.Join(dir, "bitcoind") + "\n"
	if stderr != want {
		t.Errorf("stderr %q, want %q", stderr, want)
	}
}

// childSyscallsScript prints every system call the -c command enters or
// leaves, with its comm, until it execs.
const childSyscallsScript = `tracepoint:raw_syscalls:sys_enter /pid == cpid/ { printf("enter %d %s\n", args->id, comm); }
tracepoint:raw_syscalls:sys_exit /pid == cpid/ { printf("exit %d %s\n", args->id, comm); }
tracepoint:sched:sched_process_exec /pid == cpid/ { printf("exec %s\n", comm); exit(); }`

// TestChildQuietUntilExec checks that under -c nothing of gotrace runs
// as the child once the probes are attached: what a probe filtering on
// cpid sees before the command's exec is the gate's read returning and
// the execve, no more than bpftrace's forked child shows (its read, a
// close and the execve), and never a comm of gotrace's. It also runs the
// issue's openat one-liner under both tools: the command's own opens only.
func TestChildQuietUntilExec(t *testing.T) {
	testenv.RequireRoot(t)
	bpftrace, gotrace := kernelTracers(t)
	trueCmd := testenv.RequireTool(t, "true")
	beforeExec := func(tool string) []string {
		t.Helper()
		r := runTool(tool, t.TempDir(), []string{"-c", trueCmd, "-e", childSyscallsScript})
		if r.Err != nil || r.Code != 0 {
			t.Fatalf("%s: exit %d, %v\nstdout:\n%s\nstderr:\n%s", filepath.Base(tool), r.Code, r.Err, r.Stdout, r.Stderr)
		}
		var events []string
		for _, line := range strings.Split(r.Stdout, "\n") {
			if strings.HasPrefix(line, "exec ") {
				return events
			}
			if strings.HasPrefix(line, "enter ") || strings.HasPrefix(line, "exit ") {
				events = append(events, line)
			}
		}
		t.Fatalf("%s printed no exec:\n%s", filepath.Base(tool), r.Stdout)
		return nil
	}
	got, want := beforeExec(gotrace), beforeExec(bpftrace)
	t.Logf("before execve: gotrace %q, bpftrace %q", got, want)
	var calls []string
	for _, e := range got {
		fields := strings.Fields(e)
		if len(fields) == 3 && strings.Contains(fields[2], "gotrace") {
			t.Errorf("the child ran as %q before its exec: %q", fields[2], e)
		}
		calls = append(calls, strings.Join(fields[:2], " "))
	}
	wantCalls := []string{fmt.Sprintf("exit %d", syscall.SYS_READ), fmt.Sprintf("enter %d", syscall.SYS_EXECVE)}
	if !slices.Equal(calls, wantCalls) {
		t.Errorf("the child's system calls before its exec = %q, want %q (bpftrace's child: %q)", calls, wantCalls, want)
	}
	if len(got) > len(want) {
		t.Errorf("gotrace's child made %d system call events before its exec, bpftrace's %d", len(got), len(want))
	}

	const opens = `tracepoint:syscalls:sys_enter_openat /pid == cpid/ { printf("%s\n", str(args->filename)); }`
	run := func(tool string) string {
		r := runTool(tool, t.TempDir(), []string{"-c", trueCmd, "-e", opens})
		if r.Err != nil || r.Code != 0 {
			t.Fatalf("%s: exit %d, %v\nstderr:\n%s", filepath.Base(tool), r.Code, r.Err, r.Stderr)
		}
		return r.Stdout
	}
	if g, b := run(gotrace), run(bpftrace); g != b {
		t.Errorf("openat of the -c command:\ngotrace:\n%s\nbpftrace:\n%s", g, b)
	}
}
