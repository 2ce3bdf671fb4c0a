package runtime

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/gotrace/gotrace/internal/testenv"
	"github.com/gotrace/gotrace/runtime/proc"
)

// TestPIDZombie names why a usdt probe without a path finds nothing in a
// -p process that has exited but is not reaped yet, where it asked for the
// -p that was given.
func TestPIDZombie(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Not reaped until Wait: a zombie once it has exited.
	defer cmd.Wait()
	for i := 0; proc.ExitedNote(cmd.Process.Pid) == ""; i++ {
		if i == 500 {
			t.Fatal("true did not exit in 5 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	p, info := compileScript(t, `usdt::net:inbound_message { exit(); }`)
	_, err := Compile(p, info, Options{PID: cmd.Process.Pid})
	want := "maps no files to look for usdt probes in: it has exited (a zombie that its parent has not reaped)"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Compile: %v, want %q", err, want)
	}
}

// TestPIDNoMaps runs a program that needs no object of the -p process
// without reading its /proc/PID/maps: -p 1 where that is refused.
func TestPIDNoMaps(t *testing.T) {
	testenv.RequireRoot(t)
	out, errOut, err := runScript(t, context.Background(), `BEGIN { printf("ok\n"); exit(); }`, Options{PID: 1})
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, errOut)
	}
	if out != "Attaching 1 probe...\nok\n\n\n" {
		t.Errorf("output %q", out)
	}
}
