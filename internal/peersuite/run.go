package peersuite

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// attachTimeout is how long the engine waits for the probes to be attached
// before it treats the test as timed out.
const attachTimeout = 10 * time.Second

// attachSettle is how long after a binary's "Attaching N probes..." line
// the AFTER command starts when the binary does not say when its probes
// are attached: bpftrace 0.17, the oracle, alone. gotrace says it, as
// later bpftrace does, so no test of gotrace waits for a duration.
const attachSettle = 500 * time.Millisecond

// notifyAttached is the line bpftrace (0.18 and later) and gotrace print
// once their probes are attached when __BPFTRACE_NOTIFY_PROBES_ATTACHED is
// set. A binary that does not print it (bpftrace 0.17) is taken to be
// attached at its "Attaching N probes..." line instead.
const notifyAttached = "__BPFTRACE_NOTIFY_PROBES_ATTACHED"

// Status is a test's outcome.
type Status int

// The outcomes of a test.
const (
	Pass Status = iota
	Fail
	Skip
)

// String names the outcome as the log prints it.
func (s Status) String() string {
	return [...]string{"PASS", "FAIL", "SKIP"}[s]
}

// Result is the outcome of one test.
type Result struct {
	Test   *Test
	Status Status
	// Reason says why the test failed or was skipped.
	Reason string
	// Output is what the binary printed (stdout and stderr together).
	Output string
	// Missed is the first expectation the output failed, if that is why
	// the test failed.
	Missed *Expect
	// TimedOut is set when the test did not exit by itself and was
	// stopped with SIGTERM at its time-out.
	TimedOut bool
	Elapsed  time.Duration
}

// Runner runs tests against one binary.
type Runner struct {
	// Binary is the bpftrace-compatible program under test.
	Binary string
	// WorkDir is the directory the engine runs tests from: the parent of
	// runtime/, so that runtime/scripts/... and runtime/outputs/... resolve.
	WorkDir string
	// Env is this process's environment, which REQUIRES and
	// SKIP_IF_ENV_HAS look at (the engine's os.environ).
	Env []string
	// Helpers, when set, builds the helper programs the tests name, in
	// WorkDir; without it the tests that need one are skipped.
	Helpers *Helpers

	featuresOnce sync.Once
	features     map[string]bool
	notifyOnce   sync.Once
	notify       bool
}

// oldBpftrace is the --version of a bpftrace before 0.18, which does not
// print notifyAttached.
var oldBpftrace = regexp.MustCompile(`^bpftrace v0\.([0-9]|1[0-7])\.`)

// notifies reports whether the binary prints notifyAttached once its
// probes are attached (gotrace, bpftrace 0.18 and later); then only that
// line starts a test's AFTER command, not "Attaching N probes...".
func (r *Runner) notifies() bool {
	r.notifyOnce.Do(func() {
		out, err := exec.Command(r.Binary, "--version").Output()
		r.notify = err == nil && !oldBpftrace.Match(out)
	})
	return r.notify
}

// featureNeedles maps each REQUIRES_FEATURE name to the text the engine
// looks for in the binary's --info output.
var featureNeedles = map[string]string{
	"loop":               "Loop support: yes",
	"probe_read_kernel":  "probe_read_kernel: yes",
	"btf":                "btf: yes",
	"fentry":             "fentry: yes",
	"dpath":              "dpath: yes",
	"signal":             "send_signal: yes",
	"iter":               "iter: yes",
	"libpath_resolv":     "bcc library path resolution: yes",
	"dwarf":              "libdw (DWARF support): yes",
	"kprobe_multi":       "kprobe_multi: yes",
	"kprobe_session":     "kprobe_session: yes",
	"uprobe_multi":       "uprobe_multi: yes",
	"skboutput":          "skboutput: yes",
	"get_tai_ns":         "get_ktime_ns: yes",
	"get_func_ip":        "get_func_ip: yes",
	"jiffies64":          "jiffies64: yes",
	"lookup_percpu_elem": "lookup_percpu_elem: yes",
	"dwunwind":           "dwunwind (DWARF stack unwinding): yes",
	"blazesym":           "blazesym (advanced symbolization): yes",
	// aot is decided by how bpftrace was built; neither binary here has it.
	"aot": "\x00",
}

// feature reports whether the binary's --info output offers the feature.
func (r *Runner) feature(name string) (bool, error) {
	r.featuresOnce.Do(func() {
		out, _ := exec.Command(r.Binary, "--info").CombinedOutput()
		r.features = map[string]bool{}
		for f, needle := range featureNeedles {
			r.features[f] = strings.Contains(string(out), needle)
		}
	})
	has, ok := r.features[name]
	if !ok {
		return false, fmt.Errorf("unknown REQUIRES_FEATURE %s", name)
	}
	return has, nil
}

// skipReason applies the engine's reasons to skip a test: kernel version,
// SKIP_IF_ENV_HAS, REQUIRES commands and REQUIRES_FEATURE.
func (r *Runner) skipReason(ctx context.Context, t *Test) (string, error) {
	rel := kernelRelease()
	if t.MinKernel != "" && versionLess(rel, t.MinKernel) {
		return "min kernel " + t.MinKernel, nil
	}
	if t.MaxKernel != "" && versionLess(t.MaxKernel, rel) {
		return "max kernel " + t.MaxKernel, nil
	}
	if e := t.SkipIfEnvHas; e != nil && r.getenv(e[0]) == e[1] {
		return "disabled by " + e[0] + "=" + e[1], nil
	}
	for _, req := range t.Requires {
		cmd := exec.CommandContext(ctx, "/bin/sh", "-c", req)
		cmd.Dir, cmd.Env = r.WorkDir, r.Env
		if cmd.Run() != nil {
			return "unmet REQUIRES " + req, nil
		}
	}
	for _, f := range t.Features {
		has, err := r.feature(f)
		if err != nil {
			return "", err
		}
		if !has {
			return "missing feature " + f, nil
		}
	}
	for _, f := range t.NegFeatures {
		has, err := r.feature(f)
		if err != nil {
			return "", err
		}
		if has {
			return "has feature " + f, nil
		}
	}
	return "", nil
}

func (r *Runner) getenv(name string) string {
	for _, kv := range r.Env {
		if k, v, ok := strings.Cut(kv, "="); ok && k == name {
			return v
		}
	}
	return ""
}

// command returns the test's command line as the engine builds it, less
// bpftrace's --verify-llvm-ir, which neither gotrace nor bpftrace 0.17
// accepts.
func (r *Runner) command(t *Test, befores []*exec.Cmd) *exec.Cmd {
	if t.Run != "" {
		return exec.Command("/bin/sh", "-c", beforePIDs(strings.ReplaceAll(t.Run, "{{BPFTRACE}}", r.Binary), befores))
	}
	args := []string{}
	if len(t.Expects) > 0 && t.Expects[0].Mode == modeJSON {
		args = append(args, "-q", "-f", "json")
	}
	return exec.Command(r.Binary, append(args, "-e", t.Prog)...)
}

// Run runs one test by the engine's rules.
func (r *Runner) Run(ctx context.Context, t *Test) Result {
	start := time.Now()
	res := r.run(ctx, t)
	res.Test, res.Elapsed = t, time.Since(start)
	return res
}

func (r *Runner) run(ctx context.Context, t *Test) Result {
	if why := r.unavailable(t); why != "" {
		return Result{Status: Skip, Reason: why}
	}
	if why, err := r.skipReason(ctx, t); err != nil {
		return Result{Status: Fail, Reason: err.Error()}
	} else if why != "" {
		return Result{Status: Skip, Reason: why}
	}
	if t.Setup != "" {
		if out, err := r.shell(t.Setup); err != nil {
			return Result{Status: Fail, Reason: fmt.Sprintf("SETUP failed: %v: %s", err, out)}
		}
	}
	res := r.runBinary(ctx, t)
	if t.Cleanup != "" {
		if out, err := r.shell(t.Cleanup); err != nil && res.Status == Pass {
			res.Status, res.Reason = Fail, fmt.Sprintf("CLEANUP failed: %v: %s", err, out)
		}
	}
	return res
}

// unavailable returns why the test cannot run here, building the helper
// programs it needs when the runner has them built.
func (r *Runner) unavailable(t *Test) string {
	if r.Helpers == nil {
		return t.Unavailable(r.WorkDir)
	}
	if why := t.machineUnavailable(r.WorkDir); why != "" {
		return why
	}
	return r.Helpers.Prepare(t)
}

// startBefores starts the test's BEFORE programs, each in its own process
// group, as the engine does (split on blanks, no shell). The engine then
// waits until each runs under its name; Start returns once the program is
// executed, which is that.
func (r *Runner) startBefores(t *Test) ([]*exec.Cmd, error) {
	var started []*exec.Cmd
	for _, line := range t.Befores {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		cmd := exec.Command(fields[0], fields[1:]...)
		cmd.Dir, cmd.Env = r.WorkDir, r.Env
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			stopBefores(started)
			return nil, fmt.Errorf("start BEFORE %s: %w", line, err)
		}
		started = append(started, cmd)
	}
	return started, nil
}

// stopBefores kills the BEFORE programs' process groups and reaps them.
func stopBefores(befores []*exec.Cmd) {
	for _, b := range befores {
		syscall.Kill(-b.Process.Pid, syscall.SIGKILL)
		b.Wait()
	}
}

// pidofHelper matches $(pidof NAME) in a command line.
var pidofHelper = regexp.MustCompile(`\$\(pidof ([\w.-]+)\)`)

// beforePIDs puts this test's BEFORE programs' process ids in a command
// line: {{BEFORE_PID}} is the first's, as the engine has it, and
// $(pidof NAME) of a BEFORE program is that program's, for the engine runs
// one test at a time and pidof would here also find the copies that the
// tests running beside it started.
func beforePIDs(line string, befores []*exec.Cmd) string {
	if len(befores) == 0 {
		return line
	}
	line = strings.ReplaceAll(line, "{{BEFORE_PID}}", strconv.Itoa(befores[0].Process.Pid))
	return pidofHelper.ReplaceAllStringFunc(line, func(m string) string {
		name := pidofHelper.FindStringSubmatch(m)[1]
		for _, b := range befores {
			if filepath.Base(b.Path) == name {
				return strconv.Itoa(b.Process.Pid)
			}
		}
		return m
	})
}

// shell runs a SETUP or CLEANUP command.
func (r *Runner) shell(line string) (string, error) {
	cmd := exec.Command("/bin/sh", "-c", line)
	cmd.Dir, cmd.Env = r.WorkDir, r.Env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// runBinary starts the test's command in its own process group, reads its
// output until it exits or its time-out passes (SIGTERM, then SIGKILL a
// second later, as the engine does), and checks the result.
func (r *Runner) runBinary(ctx context.Context, t *Test) Result {
	befores, err := r.startBefores(t)
	if err != nil {
		return Result{Status: Fail, Reason: err.Error()}
	}
	defer stopBefores(befores)
	cmd := r.command(t, befores)
	cmd.Dir = r.WorkDir
	cmd.Env = []string{
		"test=" + t.Name,
		notifyAttached + "=1",
		"__BPFTRACE_NOTIFY_AOT_PORTABILITY_DISABLED=1",
		"PATH=" + r.getenv("PATH"),
	}
	for _, kv := range t.Env {
		cmd.Env = append(cmd.Env, kv[0]+"="+kv[1])
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	pr, pw, err := os.Pipe()
	if err != nil {
		return Result{Status: Fail, Reason: fmt.Sprintf("create pipe: %v", err)}
	}
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		pr.Close()
		pw.Close()
		return Result{Status: Fail, Reason: fmt.Sprintf("start: %v", err)}
	}
	pw.Close()

	notifies := r.notifies()
	var (
		mu       sync.Mutex
		output   strings.Builder
		attached = make(chan string, 1)
		done     = make(chan struct{})
	)
	go func() {
		defer close(done)
		br := bufio.NewReader(pr)
		seen := false
		for {
			line, err := br.ReadString('\n')
			mu.Lock()
			output.WriteString(line)
			mu.Unlock()
			if !seen && (line == notifyAttached+"\n" || !notifies && isAttachLine(line)) {
				seen = true
				attached <- line
			}
			if err != nil {
				if err != io.EOF {
					mu.Lock()
					fmt.Fprintf(&output, "\n[peersuite: read output: %v]\n", err)
					mu.Unlock()
				}
				return
			}
		}
	}()
	// Wait only once the output is read: Wait closes nothing of ours, but
	// the engine, too, reads to the end before it looks at the exit code.
	waited := make(chan struct{})
	go func() {
		<-done
		cmd.Wait()
		close(waited)
	}()

	var after *exec.Cmd
	timer := time.NewTimer(attachTimeout)
	defer timer.Stop()
	timedOut := false
wait:
	for {
		select {
		case line := <-attached:
			attached = nil
			timer.Reset(time.Duration(t.Timeout) * time.Second)
			if t.After != "" {
				if line != notifyAttached+"\n" {
					// "Attaching N probes..." comes before the probes
					// are attached.
					time.Sleep(attachSettle)
				}
				after = exec.Command("/bin/sh", "-c", r.ownProcesses(beforePIDs(t.After, befores), cmd.Process.Pid))
				after.Dir, after.Env = r.WorkDir, r.Env
				after.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
				after.Stdout, after.Stderr = io.Discard, io.Discard
				if after.Start() != nil {
					after = nil
				}
			}
		case <-waited:
			break wait
		case <-timer.C:
			timedOut = true
			break wait
		case <-ctx.Done():
			timedOut = true
			break wait
		}
	}
	if timedOut {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-waited:
		case <-time.After(time.Second):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			select {
			case <-waited:
			case <-time.After(time.Second):
				// A process that left the group still holds the pipe.
				pr.Close()
				<-waited
			}
		}
	} else {
		// The command's children (a shell pipeline's) may outlive it.
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	if after != nil {
		stopAfter(after)
	}
	pr.Close()

	mu.Lock()
	out := normalizeNewlines(output.String())
	mu.Unlock()
	if t.ExactExpect {
		out = afterAttach(out)
	}
	res := Result{Output: out, TimedOut: timedOut}
	code := cmd.ProcessState.ExitCode()
	if code < 0 {
		// Killed by a signal: the engine (Python's Popen) reports -signal.
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			code = -int(ws.Signal())
		}
	}
	failed := r.check(t, out)
	switch {
	case timedOut && len(failed) > 0:
		res.Status, res.Reason, res.Missed = Fail, fmt.Sprintf("timed out after %ds: %s", t.Timeout, failed[0].why), &failed[0].expect
	case timedOut:
		res.Status = Pass
	case code != t.ReturnCode && !t.WillFail:
		res.Status, res.Reason = Fail, fmt.Sprintf("exit code %d", code)
	case code == 0 && t.WillFail:
		res.Status, res.Reason = Fail, "exit code 0 but WILL_FAIL"
	case len(failed) > 0:
		res.Status, res.Reason, res.Missed = Fail, failed[0].why, &failed[0].expect
	default:
		res.Status = Pass
	}
	return res
}

// stopAfter gives an AFTER command a second to finish, then kills it.
func stopAfter(after *exec.Cmd) {
	done := make(chan struct{})
	go func() {
		after.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(time.Second):
		syscall.Kill(-after.Process.Pid, syscall.SIGKILL)
		<-done
	}
}

// isAttachLine reports whether line says the probes are attached.
func isAttachLine(line string) bool {
	return line == notifyAttached+"\n" || strings.HasPrefix(line, "Attaching ") && strings.Contains(line, " probe")
}

// afterAttach drops the output up to the probes being attached, which
// EXPECT_FILE and EXPECT_JSON do not compare.
func afterAttach(out string) string {
	lines := strings.SplitAfter(out, "\n")
	if i := slices.Index(lines, notifyAttached+"\n"); i >= 0 {
		return strings.Join(lines[i+1:], "")
	}
	if i := slices.IndexFunc(lines, isAttachLine); i >= 0 {
		return strings.Join(lines[i+1:], "")
	}
	return out
}

// normalizeNewlines reads output as Python's universal newlines do.
func normalizeNewlines(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\r", "\n")
}

// bpftraceProcess matches what the engine's AFTER commands use to signal
// the tracer: pkill -SIG bpftrace, and $(pidof bpftrace).
var (
	pkillTracer = regexp.MustCompile(`\bpkill\s+-(?:SIG)?([A-Z0-9]+)\s+bpftrace\b`)
	pidofTracer = regexp.MustCompile(`\$\(pidof bpftrace\)`)
)

// ownProcesses rewrites an AFTER command so that it signals this test's
// tracer, the processes of group pgid running the binary under test, and
// no other: upstream's engine runs one test at a time, and its pkill
// bpftrace would here stop the tests running beside it and every other
// bpftrace on the machine (the differential tests' oracle).
func (r *Runner) ownProcesses(after string, pgid int) string {
	pids := strings.Join(groupPIDs(pgid, filepath.Base(r.Binary)), " ")
	signal := "kill -s $1 " + pids
	if pids == "" {
		signal = "false" // no tracer to signal: fail, as pkill does
	}
	after = pkillTracer.ReplaceAllString(after, signal)
	return pidofTracer.ReplaceAllString(after, pids)
}

// groupPIDs lists the processes of group pgid whose command name is name.
func groupPIDs(pgid int, name string) []string {
	entries, _ := os.ReadDir("/proc")
	var pids []string
	for _, e := range entries {
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...: comm may hold blanks and
		// parentheses, so split after its last ')'.
		s := string(stat)
		open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || end < open {
			continue
		}
		fields := strings.Fields(s[end+1:])
		comm := s[open+1 : end]
		// The kernel keeps 15 bytes of the command's name.
		if len(fields) > 2 && fields[2] == strconv.Itoa(pgid) && comm == name[:min(len(name), 15)] {
			pids = append(pids, e.Name())
		}
	}
	return pids
}
