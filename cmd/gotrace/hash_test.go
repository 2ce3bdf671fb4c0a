package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/gotrace/gotrace/internal/fixture"
	"github.com/gotrace/gotrace/internal/testenv"
)

// fixtureBlock matches a block line of the fixture's output: its height
// and hash as bitcoin-cli shows it.
var fixtureBlock = regexp.MustCompile(`(?m)^block height=(\d+) hash=([0-9a-f]{64}) `)

// TestHashPrinting checks that printf's %rH prints validation:
// block_connected's hash (32 bytes, little-endian) as the fixture logs it,
// which is bitcoin-cli's form, in text and in JSON.
func TestHashPrinting(t *testing.T) {
	testenv.RequireRoot(t)
	bin := fixture.Private(t, "bitcoind")
	dir := filepath.Dir(bin)
	gotrace := gotraceCommand(t)
	const script = `usdt:./bitcoind:validation:block_connected { printf("%d %rH\n", (int32)arg1, buf(arg0, 32)); }`
	for _, format := range []string{"text", "json"} {
		summary := filepath.Join(dir, "fixture-"+format+".out")
		cmd := exec.Command(gotrace, "-q", "-f", format, "-c", "./bitcoind --output "+summary, "-e", script)
		cmd.Dir = dir
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s: %v\n%s", format, err, out)
		}
		var got []string
		for _, line := range strings.Split(string(out), "\n") {
			if format == "json" {
				var rec struct{ Type, Data string }
				if json.Unmarshal([]byte(line), &rec) != nil || rec.Type != "printf" {
					continue
				}
				line = strings.TrimSuffix(rec.Data, "\n")
			}
			if line != "" {
				got = append(got, line)
			}
		}
		var want []string
		logged, err := os.ReadFile(summary)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range fixtureBlock.FindAllStringSubmatch(string(logged), -1) {
			want = append(want, m[1]+" "+m[2])
		}
		if len(want) == 0 || !slices.Equal(got, want) {
			t.Errorf("%s: printed\n%s\nwant the fixture's hashes\n%s", format, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}
