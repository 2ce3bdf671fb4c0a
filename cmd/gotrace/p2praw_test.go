package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gotrace/gotrace/internal/fixture"
	"github.com/gotrace/gotrace/internal/testenv"
)

// p2pRawLine matches a line of scripts/p2p_raw.bt: direction, command,
// peer id, size and the payload's hex bytes.
var p2pRawLine = regexp.MustCompile(`^(in|out)bound msg '(\S+)' from peer (\d+) \([^,]+, [^)]+\) with (\d+) bytes: ([0-9a-f ]*)$`)

// p2pRawHeader is the line scripts/p2p_raw.bt prints first, from BEGIN.
const p2pRawHeader = "Logging raw P2P messages, whole payloads in hex. Ctrl-C to end."

// TestP2PRawScript runs scripts/p2p_raw.bt against the fixture, with
// transactions of 40-100 KB and blocks of 0.2-1.5 MB, and checks that
// every message it sends or receives is printed whole, byte for byte, as
// the fixture logs it (--payloads-out), in text and in JSON.
func TestP2PRawScript(t *testing.T) {
	testenv.RequireRoot(t)
	bin := fixture.Private(t, "bitcoind")
	dir := filepath.Dir(bin)
	gotrace := gotraceCommand(t)
	script, err := filepath.Abs("../../scripts/p2p_raw.bt")
	if err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"text", "json"} {
		t.Run(format, func(t *testing.T) {
			payloads := filepath.Join(t.TempDir(), "payloads")
			command := "./bitcoind --peers 2 --rounds 8 --blocks 3 --big-tx-every 2 --output /dev/null --payloads-out " + payloads
			cmd := exec.Command(gotrace, "-q", "-f", format, "-c", command, script)
			cmd.Dir = dir
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("%v\n%.2000s", err, out)
			}
			var got []string
			for _, line := range strings.Split(string(out), "\n") {
				if format == "json" {
					var rec struct {
						Type string
						Data string
					}
					if json.Unmarshal([]byte(line), &rec) != nil || rec.Type != "printf" {
						continue
					}
					line = strings.TrimSuffix(rec.Data, "\n")
				}
				if m := p2pRawLine.FindStringSubmatch(line); m != nil {
					got = append(got, strings.Join([]string{m[1], m[3], m[2], m[4], strings.ReplaceAll(m[5], " ", "")}, " "))
				} else if line != "" && line != p2pRawHeader {
					t.Errorf("unexpected line %.200q", line)
				}
			}
			b, err := os.ReadFile(payloads)
			if err != nil {
				t.Fatal(err)
			}
			want := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
			if len(got) != len(want) {
				t.Fatalf("%d messages printed, the fixture sent %d", len(got), len(want))
			}
			big := 0
			for i := range want {
				if got[i] != want[i] {
					t.Errorf("message %d: got %.120s..., want %.120s...", i, got[i], want[i])
				}
				if len(want[i]) > 2*64<<10 {
					big++
				}
			}
			if big < 3 {
				t.Errorf("only %d messages of 64 KiB or more", big)
			}
		})
	}
}
