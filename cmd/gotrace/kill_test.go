package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cilium/ebpf/link"

	"github.com/gotrace/gotrace/internal/fixture"
	"github.com/gotrace/gotrace/internal/testenv"
)

// TestKilledLeavesNothing SIGKILLs a gotrace tracing a process with -p, in
// both ways of attaching uprobes: the kernel must drop every link it
// made, and the process's semaphores must go back to zero (the fixture
// waits for that and reports them). The kernel tears perf-event uprobes
// down one by one, which on a loaded machine takes many seconds: the
// waits are long.
func TestKilledLeavesNothing(t *testing.T) {
	testenv.RequireRoot(t)
	bin := fixture.Private(t, "bitcoind")
	gotrace := gotraceCommand(t)
	for _, mode := range []struct {
		name  string
		flags []string
	}{{"uprobe_multi", nil}, {"perf_event", []string{"--no-uprobe-multi"}}} {
		t.Run(mode.name, func(t *testing.T) {
			var fout bytes.Buffer
			target := exec.Command(bin, "--wait-attach", "all", "--wait-detach", "all", "--wait-timeout-ms", "90000", "--linger-ms", "0")
			target.Stdout, target.Stderr = &fout, &fout
			if err := target.Start(); err != nil {
				t.Fatal(err)
			}
			defer target.Process.Kill()
			args := append([]string{"-p", strconv.Itoa(target.Process.Pid), "-e",
				fmt.Sprintf(`usdt:%s:* { @[probe] = count(); }`, bin)}, mode.flags...)
			tracer := exec.Command(gotrace, args...)
			stdout, err := tracer.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := tracer.Start(); err != nil {
				t.Fatal(err)
			}
			defer tracer.Process.Kill()
			if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || !strings.HasPrefix(line, "Attaching ") {
				t.Fatalf("gotrace printed %q, %v", line, err)
			}
			// The fixture runs once every semaphore is raised: by then
			// every link exists.
			links := waitLinks(t, tracer.Process.Pid)
			tracer.Process.Signal(syscall.SIGKILL)
			tracer.Wait()
			if err := target.Wait(); err != nil {
				t.Fatalf("fixture: %v\n%s", err, fout.String())
			}
			s, err := fixture.ParseSummary(fout.String())
			if err != nil {
				t.Fatal(err)
			}
			if len(s.SemaEnd) == 0 {
				t.Fatalf("the fixture reported no semaphores:\n%s", fout.String())
			}
			for probe, n := range s.SemaEnd {
				if n != 0 {
					t.Errorf("semaphore of %s is %d after gotrace was killed", probe, n)
				}
			}
			for _, id := range links {
				deadline := time.Now().Add(60 * time.Second)
				for {
					l, err := link.NewFromID(id)
					if errors.Is(err, os.ErrNotExist) {
						break
					}
					if err == nil {
						l.Close()
					}
					if time.Now().After(deadline) {
						t.Errorf("link %d is still there after gotrace was killed (%v)", id, err)
						break
					}
					time.Sleep(10 * time.Millisecond)
				}
			}
		})
	}
}

// waitLinks returns the ids of the BPF links process pid holds, once it
// holds one and no new one came for 200 ms.
func waitLinks(t *testing.T, pid int) []link.ID {
	t.Helper()
	var ids []link.ID
	deadline := time.Now().Add(20 * time.Second)
	for stable := 0; stable < 4 && time.Now().Before(deadline); {
		cur := processLinks(t, pid)
		if len(cur) > 0 && len(cur) == len(ids) {
			stable++
		} else {
			stable = 0
		}
		ids = cur
		time.Sleep(50 * time.Millisecond)
	}
	if len(ids) == 0 {
		t.Fatalf("process %d holds no BPF link", pid)
	}
	return ids
}

// processLinks reads the ids of the BPF links of process pid from the
// fdinfo of its file descriptors.
func processLinks(t *testing.T, pid int) []link.ID {
	t.Helper()
	dir := fmt.Sprintf("/proc/%d/fdinfo", pid)
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var ids []link.ID
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			continue
		}
		for line := range strings.Lines(string(b)) {
			if v, ok := strings.CutPrefix(line, "link_id:"); ok {
				if id, err := strconv.ParseUint(strings.TrimSpace(v), 10, 32); err == nil {
					ids = append(ids, link.ID(id))
				}
			}
		}
	}
	return ids
}
