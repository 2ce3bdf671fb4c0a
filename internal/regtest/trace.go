package regtest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Trace is a gotrace run with JSON output (-f json) whose records a test
// reads as they come: printf lines to wait for, and the maps printed at
// the end.
type Trace struct {
	cmd    *exec.Cmd
	stderr syncBuffer

	mu      sync.Mutex
	lines   []string                   // printf records, without their final newline
	maps    map[string]json.RawMessage // map records by name
	other   []string                   // records of other types, raw
	changed chan struct{}              // closed and replaced on each new record
	done    chan struct{}              // closed when gotrace has exited
	err     error                      // gotrace's exit, once done
}

// StartTrace starts gotrace -f json with args in dir (the working
// directory, "" for the test's) and reads its records. gotrace is stopped
// with SIGINT when t ends if it still runs, and killed after Deadline.
func StartTrace(t testing.TB, gotrace, dir string, args ...string) *Trace {
	t.Helper()
	tr := &Trace{maps: map[string]json.RawMessage{}, changed: make(chan struct{}), done: make(chan struct{})}
	tr.cmd = exec.Command(gotrace, append([]string{"-f", "json"}, args...)...)
	tr.cmd.Dir = dir
	tr.cmd.Stderr = &tr.stderr
	tr.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdout, err := tr.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.cmd.Start(); err != nil {
		t.Fatalf("start gotrace: %v", err)
	}
	go tr.read(stdout)
	t.Cleanup(func() {
		select {
		case <-tr.done:
			return
		default:
		}
		tr.cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-tr.done:
		case <-time.After(Deadline):
			tr.cmd.Process.Kill()
			<-tr.done
		}
	})
	return tr
}

// read collects gotrace's records until its output ends, then waits for
// it.
func (tr *Trace) read(stdout interface{ Read([]byte) (int, error) }) {
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var rec struct {
			Type string          `json:"type"`
			Data json.RawMessage `json:"data"`
		}
		line := sc.Text()
		if line == "" {
			continue
		}
		tr.mu.Lock()
		if json.Unmarshal([]byte(line), &rec) != nil {
			tr.other = append(tr.other, line)
		} else if rec.Type == "printf" {
			var s string
			json.Unmarshal(rec.Data, &s)
			for _, l := range strings.Split(strings.TrimSuffix(s, "\n"), "\n") {
				tr.lines = append(tr.lines, l)
			}
		} else if rec.Type == "map" {
			var m map[string]json.RawMessage
			json.Unmarshal(rec.Data, &m)
			for k, v := range m {
				tr.maps[k] = v
			}
		} else {
			tr.other = append(tr.other, line)
		}
		close(tr.changed)
		tr.changed = make(chan struct{})
		tr.mu.Unlock()
	}
	err := tr.cmd.Wait()
	tr.mu.Lock()
	tr.err = err
	tr.mu.Unlock()
	close(tr.done)
}

// Lines returns the printf lines so far.
func (tr *Trace) Lines() []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return append([]string(nil), tr.lines...)
}

// Await waits until ok holds for the printf lines so far and returns them,
// or fails t after Deadline or when gotrace exits first. what says what is
// awaited, for the failure message.
func (tr *Trace) Await(t testing.TB, what string, ok func(lines []string) bool) []string {
	t.Helper()
	timeout := time.After(Deadline)
	for {
		tr.mu.Lock()
		lines, changed := append([]string(nil), tr.lines...), tr.changed
		tr.mu.Unlock()
		if ok(lines) {
			return lines
		}
		select {
		case <-changed:
		case <-tr.done:
			if tr.Lines() == nil || !ok(tr.Lines()) {
				t.Fatalf("gotrace exited (%v) before %s; stderr: %s; last lines: %q", tr.err, what, tail([]byte(tr.stderr.String()), 2000), lastLines(lines, 10))
			}
		case <-timeout:
			t.Fatalf("no %s from gotrace within %v; stderr: %s; last lines: %q", what, Deadline, tail([]byte(tr.stderr.String()), 2000), lastLines(lines, 10))
		}
	}
}

// AwaitPrefix waits for a printf line starting with prefix and returns
// it (the first such line).
func (tr *Trace) AwaitPrefix(t testing.TB, prefix string) string {
	t.Helper()
	var found string
	tr.Await(t, "line "+prefix+"...", func(lines []string) bool {
		for _, l := range lines {
			if strings.HasPrefix(l, prefix) {
				found = l
				return true
			}
		}
		return false
	})
	return found
}

func lastLines(lines []string, n int) []string {
	if len(lines) > n {
		return lines[len(lines)-n:]
	}
	return lines
}

// Wait waits for gotrace to exit (after the traced command ended, say) and
// fails t if it failed or did not exit within Deadline.
func (tr *Trace) Wait(t testing.TB) {
	t.Helper()
	select {
	case <-tr.done:
	case <-time.After(Deadline):
		t.Fatalf("gotrace did not exit within %v", Deadline)
	}
	if tr.err != nil {
		t.Fatalf("gotrace: %v; stderr: %s", tr.err, tail([]byte(tr.stderr.String()), 3000))
	}
}

// Map returns the map record named name (such as "@height"), printed when
// gotrace ended; call Wait first.
func (tr *Trace) Map(name string) json.RawMessage {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.maps[name]
}

// Stderr returns what gotrace has printed on stderr so far.
func (tr *Trace) Stderr() string { return tr.stderr.String() }

// syncBuffer is a bytes.Buffer that gotrace's stderr copier writes while a
// test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
