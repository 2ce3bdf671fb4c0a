package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gotrace/gotrace/internal/testenv"
)

// shippedTool is one of the tools bpftrace 0.17 ships in /usr/sbin that
// run on this project's machines, with a workload that makes it print.
type shippedTool struct {
	name string
	// header is how many lines its BEGIN prints.
	header int
	// work drives the workload and returns the regexp of what the tool
	// must then print (one line, or a map's line at the end).
	work func(t *testing.T, marker string) string
	// atExit is set for a tool that prints what work looks for only at
	// exit (a map): nothing can be waited for before stopping it.
	atExit bool
}

// shippedTools are bpftrace's tools that 0.17 runs here.
var shippedTools = []shippedTool{
	{"execsnoop", 1, func(t *testing.T, marker string) string {
		runWorkload(t, "/bin/true", marker)
		return `\s/bin/true ` + regexp.QuoteMeta(marker) + `$`
	}, false},
	{"opensnoop", 2, func(t *testing.T, marker string) string {
		f, err := os.Open(marker)
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
		return `^` + strconv.Itoa(os.Getpid()) + `\s.*\s0\s+` + regexp.QuoteMeta(marker) + `$`
	}, false},
	{"statsnoop", 2, func(t *testing.T, marker string) string {
		pid := runWorkload(t, "/usr/bin/stat", marker)
		return `^` + pid + `\s+stat\s+0\s+` + regexp.QuoteMeta(marker) + `$`
	}, false},
	{"syncsnoop", 2, func(t *testing.T, marker string) string {
		unix.Sync()
		return `\s` + strconv.Itoa(os.Getpid()) + `\s.*\stracepoint:syscalls:sys_enter_sync$`
	}, false},
	{"syscount", 1, func(t *testing.T, marker string) string {
		runWorkload(t, "/bin/true", marker)
		return `(?m)^@process\[gotrace\.test\]: \d+$`
	}, true},
	{"killsnoop", 2, func(t *testing.T, marker string) string {
		cmd := exec.Command("/bin/sleep", "30")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// kill(2) itself: os.Process.Signal uses a pidfd.
		if err := syscall.Kill(cmd.Process.Pid, syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		cmd.Wait()
		return `\s` + strconv.Itoa(os.Getpid()) + `\s.*\s15\s+` + strconv.Itoa(cmd.Process.Pid) + `\s+0$`
	}, false},
	{"setuids", 2, func(t *testing.T, marker string) string {
		testenv.RequireFile(t, "/usr/bin/python3")
		pid := runWorkload(t, "/usr/bin/python3", "-c", "import os; os.setuid(0)")
		return `\s` + pid + `\s+python3\s+0\s+setuid\s+uid=0 \(0\)$`
	}, false},
	{"pidpersec", 1, func(t *testing.T, marker string) string {
		runWorkload(t, "/bin/true", marker)
		return `^\d\d:\d\d:\d\d PIDs/sec: @: \d+$`
	}, false},
	{"bitesize", 1, func(t *testing.T, marker string) string {
		writeSynced(t, marker)
		return `(?m)^@\[.+\]: ?$`
	}, true},
	{"writeback", 2, func(t *testing.T, marker string) string {
		writeSynced(t, marker)
		return `^\d\d:\d\d:\d\d\s+\S+\s+\d+\s+\S+\s+\d+\.\d{3}$`
	}, false},
	{"naptime", 2, func(t *testing.T, marker string) string {
		// Go's runtime sleeps with nanosleep, whose argument naptime
		// reads out of user memory.
		time.Sleep(200 * time.Millisecond)
		return `^\d\d:\d\d:\d\d \d+\s+\S+\s+\d+\s+\S+\s+\d+\.\d{3}$`
	}, false},
	{"cpuwalk", 1, func(t *testing.T, marker string) string {
		// cpuwalk samples only CPUs that run a process: keep one busy
		// (sleeping, on an idle machine it got no sample at all).
		for end := time.Now().Add(500 * time.Millisecond); time.Now().Before(end); {
		}
		return `(?m)^@cpu: ?$`
	}, true},
}

// TestShippedTools runs bpftrace's tools, read from /usr/sbin at test
// time, under gotrace with a workload: the header must be bpftrace's
// (the same "Attaching N probes..." line and BEGIN's lines, before any
// event) and the workload's events must show.
func TestShippedTools(t *testing.T) {
	bpftrace, gotrace := kernelTracers(t)
	for _, tool := range shippedTools {
		t.Run(tool.name, func(t *testing.T) {
			script := "/usr/sbin/" + tool.name + ".bt"
			testenv.RequireFile(t, script)
			// Short: the tools print 64 bytes of a path.
			marker := filepath.Join(os.TempDir(), "gtm-"+tool.name+"-"+strconv.Itoa(os.Getpid()))
			if err := os.WriteFile(marker, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.Remove(marker) })
			want := traceTool(t, bpftrace, script, tool.header, nil)
			var re *regexp.Regexp
			got := traceTool(t, gotrace, script, tool.header, func() *regexp.Regexp {
				pattern := tool.work(t, marker)
				if !strings.HasPrefix(pattern, "(?m)") {
					pattern = "(?m)" + pattern
				}
				re = regexp.MustCompile(pattern)
				if tool.atExit {
					return nil
				}
				return re
			})
			wantHead, gotHead := firstLines(want, tool.header+1), firstLines(got, tool.header+1)
			if gotHead != wantHead {
				t.Errorf("header:\n%s\nbpftrace's:\n%s", gotHead, wantHead)
			}
			if !re.MatchString(got) {
				t.Errorf("no line matches %s in:\n%s", re, got)
			}
		})
	}
}

// kernelTracers returns bpftrace's path and a gotrace built for the test,
// for tests that trace the kernel with both (they need tracefs).
func kernelTracers(t *testing.T) (bpftrace, gotrace string) {
	testenv.RequireFile(t, "/sys/kernel/tracing/events")
	return testenv.RequireBpftrace(t), buildGotrace(t)
}

// traceTool runs script under tool until its header (header lines after
// "Attaching N probes...") is out: BEGIN's output, which both tools print
// once every probe is attached. Then it runs work, if any, and waits until
// the output matches the regexp work returns (none: a map printed at
// exit, nothing to wait for), and stops the tool with SIGINT as Ctrl-C
// does; it returns what the tool printed on stdout.
func traceTool(t *testing.T, tool, script string, header int, work func() *regexp.Regexp) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "out")
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd := exec.Command(tool, script)
	cmd.Stdout = f
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	read := func() string {
		b, _ := os.ReadFile(out)
		return string(b)
	}
	for deadline := time.Now().Add(30 * time.Second); strings.Count(read(), "\n") < header+1; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s %s printed no header in 30s: %q", filepath.Base(tool), script, read())
		}
	}
	if work != nil {
		if live := work(); live != nil {
			for deadline := time.Now().Add(30 * time.Second); !live.MatchString(read()); time.Sleep(20 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("%s %s printed nothing that matches %s in 30s:\n%s", filepath.Base(tool), script, live, read())
				}
			}
		}
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	// SIGINT again every 2 s: bpftrace 0.17 sometimes misses one sent
	// right after its header (opensnoop, in about one run of three).
	for stop := time.After(20 * time.Second); ; {
		cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
			return read()
		case <-time.After(2 * time.Second):
		case <-stop:
			t.Fatalf("%s %s did not stop on SIGINT", filepath.Base(tool), script)
		}
	}
}

// firstLines returns the first n lines of s.
func firstLines(s string, n int) string {
	lines := strings.SplitAfter(s, "\n")
	return strings.Join(lines[:min(n, len(lines))], "")
}

// runWorkload runs a command to its end and returns its PID.
func runWorkload(t *testing.T, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", name, err, out)
	}
	return strconv.Itoa(cmd.Process.Pid)
}

// writeSynced writes a megabyte next to marker, on the disk, and syncs
// it: block I/O and writeback.
func writeSynced(t *testing.T, marker string) {
	t.Helper()
	dir, err := os.MkdirTemp("/var/tmp", "gotrace-io")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := os.WriteFile(filepath.Join(dir, filepath.Base(marker)), make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	unix.Sync()
}
