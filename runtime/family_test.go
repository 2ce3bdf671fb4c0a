package runtime

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"

	"github.com/gotrace/gotrace/codegen"
	"github.com/gotrace/gotrace/internal/fixture"
	"github.com/gotrace/gotrace/internal/testenv"
)

// firstCallSource is a program whose main calls first() before anything
// else; with an argument it first waits for a line on its standard input,
// and says "done" once first() has run.
const firstCallSource = `#include <stdio.h>
__attribute__((noinline, noipa)) int first(int x) { return x + 1; }
int main(int argc, char **argv) {
	char line[16];
	if (argc > 1 && !fgets(line, sizeof line, stdin))
		return 2;
	int r = first(41);
	if (argc > 1) {
		puts("done");
		fflush(stdout);
	}
	return r == 42 ? 0 : 1;
}
`

// TestFamilyWrapped traces a program started by a shell (and by a shell
// started by a shell) that hits its probe the moment it runs: the family
// filter has the probe in place before the program exists, so its hit is
// counted in every run, where attaching once the program was seen lost it
// in about half of them.
func TestFamilyWrapped(t *testing.T) {
	testenv.RequireRoot(t)
	testenv.RequireTool(t, "sh")
	bin := buildC(t, t.TempDir(), "first", firstCallSource)
	src := fmt.Sprintf(`uprobe:%s:first { @hits[pid == cpid] = count(); }`, bin)
	for _, tc := range []struct{ name, command string }{
		{"sh", fmt.Sprintf("sh -c %s", bin)},
		{"sh-sh", fmt.Sprintf("sh -c 'sh -c %s'", bin)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for run := range 20 {
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				out, stderr, err := runScript(t, ctx, src, Options{Command: tc.command, Quiet: true})
				cancel()
				if err != nil {
					t.Fatalf("run %d: %v\n%s", run, err, stderr)
				}
				// The shell forks: the hit is in a descendant, not the
				// command's own process.
				if out != "\n\n@hits[0]: 1\n" || stderr != "" {
					t.Fatalf("run %d: output %q, stderr %q; want the one hit of the shell's child", run, out, stderr)
				}
			}
		})
	}
}

// TestFamilyFilter runs processes of the traced binary outside the -c
// command's family while it is traced: their hits trap (the probes are
// attached for every process) but are not counted, and the semaphores the
// trace raised in them are back to zero once it has ended.
func TestFamilyFilter(t *testing.T) {
	testenv.RequireRoot(t)
	dir := t.TempDir()

	t.Run("uprobe", func(t *testing.T) {
		bin := buildC(t, dir, "first", firstCallSource)
		other := exec.Command(bin, "wait")
		stdin, err := other.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		stdout := newSyncBuffer("done\n")
		other.Stdout = stdout
		if err := other.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			other.Process.Kill()
			other.Wait()
		})
		// Once attached, the other process calls first() and says so
		// before the trace may end.
		attached := func() {
			io.WriteString(stdin, "go\n")
			select {
			case <-stdout.watch:
			case <-time.After(60 * time.Second):
				t.Errorf("the process outside the family did not call first() within 60 s: %q", stdout)
			}
		}
		src := fmt.Sprintf(`uprobe:%s:first { @hits = count(); }`, bin)
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		out, stderr, err := runScript(t, ctx, src, Options{Command: fmt.Sprintf("sh -c '%s; true'", bin), Quiet: true, Attached: attached})
		if err != nil {
			t.Fatalf("%v\n%s", err, stderr)
		}
		if out != "\n\n@hits: 1\n" {
			t.Errorf("output %q, want the one hit of the command's program, not the other's", out)
		}
	})

	t.Run("usdt", func(t *testing.T) {
		bin := fixture.Private(t, "bitcoind")
		// The other fixture writes its events to a pipe and closes it
		// when it has fired them all: the end of file says it ran while
		// its semaphores were raised by this trace.
		events := filepath.Join(dir, "events")
		if err := syscall.Mkfifo(events, 0o600); err != nil {
			t.Fatal(err)
		}
		other, oout := startFixture(t, bin, "--wait-attach", "net:outbound_message", "--wait-detach", "net:outbound_message",
			"--events-out", events, "--wait-timeout-ms", "90000", "--linger-ms", "0")
		ran := make(chan error, 1)
		go func() {
			f, err := os.Open(events)
			if err == nil {
				_, err = io.Copy(io.Discard, f)
				f.Close()
			}
			ran <- err
		}()
		start := filepath.Join(dir, "start")
		summary := filepath.Join(dir, "summary")
		attached := func() {
			select {
			case err := <-ran:
				if err != nil {
					t.Errorf("read the other fixture's events: %v", err)
				}
			case <-time.After(60 * time.Second):
				t.Errorf("the fixture outside the family did not run within 60 s:\n%s", oout)
			}
			os.WriteFile(start, nil, 0o644)
		}
		src := fmt.Sprintf(`usdt:%s:net:outbound_message { @out = count(); }`, bin)
		cmd := fmt.Sprintf("sh -c '%s --wait-file %s --wait-timeout-ms 90000 --linger-ms 0 --output %s; true'", bin, start, summary)
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		out, stderr, err := runScript(t, ctx, src, Options{Command: cmd, Quiet: true, Attached: attached})
		if err != nil {
			t.Fatalf("%v\n%s", err, stderr)
		}
		if !strings.HasSuffix(out, "@out: 128\n") {
			t.Errorf("output %q, want the 128 messages of the command's fixture alone", out)
		}
		s := waitSummary(t, other, oout)
		if c := s.Probes["net:outbound_message"]; c.Fired != 128 {
			t.Errorf("the other fixture fired net:outbound_message %d times, want 128 (its semaphore raised throughout)", c.Fired)
		}
		if n, ok := s.SemaEnd["net:outbound_message"]; !ok || n != 0 {
			t.Errorf("the other fixture's semaphore is %d after the trace (reported: %v), want 0", n, ok)
		}
		traced, err := fixture.ReadSummary(summary)
		if err != nil {
			t.Fatal(err)
		}
		if c := traced.Probes["net:outbound_message"]; c.Fired != 128 {
			t.Errorf("the command's fixture fired net:outbound_message %d times, want 128", c.Fired)
		}
	})
}

// TestFamilyMap runs the family's tracepoint programs for this test's own
// process: a child it starts is in the family while it lives and gone
// from it once it has exited, and a process outside the family starts no
// member.
func TestFamilyMap(t *testing.T) {
	testenv.RequireRoot(t)
	rec, err := familyRecords()
	if err != nil {
		t.Fatal(err)
	}
	p, info := compileScript(t, `BEGIN { }`)
	spec, err := codegen.Compile(info.ResolvedProgram(p), info, codegen.Options{Family: rec})
	if err != nil {
		t.Fatal(err)
	}
	coll, err := ebpf.NewCollection(spec.Collection)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	t.Cleanup(coll.Close)
	family := coll.Maps[spec.Family.Map]
	for _, tp := range []struct{ prog, event string }{{spec.Family.Fork, "sched_process_fork"}, {spec.Family.Exit, "sched_process_exit"}} {
		l, err := link.Tracepoint("sched", tp.event, coll.Programs[tp.prog], nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
	}
	member := func(pid int) bool {
		bitmap := make([]byte, codegen.FamilyBitmapBytes)
		if err := family.Lookup(uint32(0), bitmap); err != nil {
			t.Fatal(err)
		}
		return binary.NativeEndian.Uint32(bitmap[pid/32*4:])&(1<<(pid%32)) != 0
	}
	// child starts cat, which lives until its input is closed, and
	// returns it with the function that ends it.
	child := func() (*exec.Cmd, func()) {
		cmd := exec.Command("cat")
		in, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		end := func() {
			in.Close()
			cmd.Wait()
		}
		t.Cleanup(end)
		return cmd, end
	}

	cmd, end := child()
	if member(cmd.Process.Pid) {
		t.Errorf("the child %d of a process outside the family is in it", cmd.Process.Pid)
	}
	end()

	bitmap := make([]byte, codegen.FamilyBitmapBytes)
	setFamilyBit(bitmap, os.Getpid())
	if err := family.Put(uint32(0), bitmap); err != nil {
		t.Fatal(err)
	}
	cmd, end = child()
	if !member(cmd.Process.Pid) {
		t.Errorf("the child %d is not in the family", cmd.Process.Pid)
	}
	end()
	if member(cmd.Process.Pid) {
		t.Errorf("the child %d is still in the family after it exited", cmd.Process.Pid)
	}
	if !member(os.Getpid()) {
		t.Error("the test's own process left the family")
	}
}
