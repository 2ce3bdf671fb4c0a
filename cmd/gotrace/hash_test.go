package main

import (
	"encoding/json"
	"fmt"
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

// TestHashPrinting checks that printf's %rH and hash256() show
// validation:block_connected's hash (32 bytes, little-endian) as the
// fixture logs it, which is bitcoin-cli's form: printed, as a map key and
// by print(), in text and in JSON.
func TestHashPrinting(t *testing.T) {
	testenv.RequireRoot(t)
	bin := fixture.Private(t, "bitcoind")
	dir := filepath.Dir(bin)
	gotrace := gotraceCommand(t)
	const script = `usdt:./bitcoind:validation:block_connected {
		printf("%d %rH\n", (int32)arg1, buf(arg0, 32));
		@height[hash256(arg0)] = (int32)arg1;
		print(hash256(arg0));
	}`
	for _, format := range []string{"text", "json"} {
		summary := filepath.Join(dir, "fixture-"+format+".out")
		cmd := exec.Command(gotrace, "-q", "-f", format, "-c", "./bitcoind --output "+summary, "-e", script)
		cmd.Dir = dir
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s: %v\n%s", format, err, out)
		}
		var printed, keys, values []string
		for _, line := range strings.Split(string(out), "\n") {
			if format == "text" {
				if m := textKey.FindStringSubmatch(line); m != nil {
					keys = append(keys, m[2]+" "+m[1])
				} else if hashLine.MatchString(line) {
					values = append(values, line)
				} else if line != "" {
					printed = append(printed, line)
				}
				continue
			}
			var rec struct {
				Type string
				Data json.RawMessage
			}
			if json.Unmarshal([]byte(line), &rec) != nil {
				continue
			}
			var data string
			var m map[string]map[string]int
			switch {
			case rec.Type == "printf" && json.Unmarshal(rec.Data, &data) == nil:
				printed = append(printed, strings.TrimSuffix(data, "\n"))
			case rec.Type == "value" && json.Unmarshal(rec.Data, &data) == nil:
				values = append(values, data)
			case rec.Type == "map" && json.Unmarshal(rec.Data, &m) == nil:
				for hash, height := range m["@height"] {
					keys = append(keys, fmt.Sprintf("%d %s", height, hash))
				}
			}
		}
		logged, err := os.ReadFile(summary)
		if err != nil {
			t.Fatal(err)
		}
		var want, wantValues []string
		for _, m := range fixtureBlock.FindAllStringSubmatch(string(logged), -1) {
			want = append(want, m[1]+" "+m[2])
			wantValues = append(wantValues, m[2])
		}
		slices.Sort(keys)
		if len(want) == 0 || !slices.Equal(printed, want) || !slices.Equal(keys, slices.Sorted(slices.Values(want))) || !slices.Equal(values, wantValues) {
			t.Errorf("%s: printf\n%s\nmap keys\n%s\nprint()\n%s\nwant the fixture's hashes\n%s", format,
				strings.Join(printed, "\n"), strings.Join(keys, "\n"), strings.Join(values, "\n"), strings.Join(want, "\n"))
		}
	}
}

// textKey matches a text map entry keyed by a hash; hashLine a hash alone.
var (
	textKey  = regexp.MustCompile(`^@height\[([0-9a-f]{64})\]: (\d+)$`)
	hashLine = regexp.MustCompile(`^[0-9a-f]{64}$`)
)
