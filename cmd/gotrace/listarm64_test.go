package main

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gotrace/gotrace/internal/fixture"
	"github.com/gotrace/gotrace/internal/testenv"
)

// TestDiffListARM64 lists the probes of the fixture cross-built for arm64
// on this x86-64 machine, as one would list a board's binary before
// copying a script to it: its USDT probes and its functions as uprobes
// are what bpftrace 0.17 lists for the same file, byte for byte, and -lv
// gives each USDT argument in AArch64's operand syntax.
func TestDiffListARM64(t *testing.T) {
	bpftrace := testenv.RequireBpftrace(t)
	gotrace := buildGotrace(t)
	dir := t.TempDir()
	bin, err := fixture.Copy(fixture.BuildARM64(t, "bitcoind"), dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, pattern := range []string{"usdt:./bitcoind:*", "usdt:./bitcoind:net:*", "uprobe:" + bin + ":*", "uprobe:" + bin + ":tp_*"} {
		t.Run(strings.ReplaceAll(pattern, bin, "FIXTURE"), func(t *testing.T) {
			// bpftrace's stderr has an error for each AArch64 operand,
			// which its x86-64 build cannot parse; stdout is the
			// listing.
			want := runTool(bpftrace, dir, []string{"-l", pattern})
			got := runTool(gotrace, dir, []string{"-l", pattern})
			if got.Err != nil || got.Code != 0 {
				t.Fatalf("gotrace -l %s: exit %d, %v\n%s", pattern, got.Code, got.Err, got.Stderr)
			}
			if strings.Count(got.Stdout, "\n") < 2 {
				t.Errorf("gotrace -l %s listed %q", pattern, got.Stdout)
			}
			if got.Stdout != want.Stdout {
				t.Errorf("gotrace -l %s printed %d bytes, bpftrace %d:\n%s", pattern, len(got.Stdout), len(want.Stdout), firstDifference(want.Stdout, got.Stdout))
			}
		})
	}
	got := runTool(gotrace, dir, []string{"-lv", "usdt:./bitcoind:net:inbound_message"})
	if got.Err != nil || got.Code != 0 {
		t.Fatalf("gotrace -lv: exit %d, %v\n%s", got.Code, got.Err, got.Stderr)
	}
	// The message's peer id, type, size and payload, in registers.
	for _, want := range []string{
		`usdt:./bitcoind:net:inbound_message`,
		`        arg0: int64 -8@x[0-9]+`,
		`        arg3: uint64 8@x[0-9]+`,
	} {
		if !regexp.MustCompile(`(?m)^` + want + `$`).MatchString(got.Stdout) {
			t.Errorf("gotrace -lv %s: no line matches %q:\n%s", filepath.Base(bin), want, got.Stdout)
		}
	}
}
