package plan

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gotrace/gotrace/internal/fixture"
	"github.com/gotrace/gotrace/lang"
	"github.com/gotrace/gotrace/lang/attachpoint"
	"github.com/gotrace/gotrace/usdt"
)

// usdtProgram returns a program with one usdt attach point per raw
// string, parsed from the usdt:TARGET:PROVIDER:NAME form.
func usdtProgram(raws ...string) *lang.Program {
	p := &lang.Program{File: "test.bt"}
	for _, raw := range raws {
		parts := strings.Split(raw, ":")
		ap := &lang.AttachPoint{Raw: raw, Point: attachpoint.Point{Kind: lang.ProbeUSDT, Target: parts[1]}}
		if len(parts) == 4 {
			ap.Provider, ap.Func = parts[2], parts[3]
		} else {
			ap.Func = parts[2]
		}
		p.Probes = append(p.Probes, &lang.Probe{Attach: []*lang.AttachPoint{ap}, Body: &lang.Block{}})
	}
	return p
}

func TestResolveUSDT(t *testing.T) {
	bin := fixture.Build(t, "bitcoind")
	rel := relativePath(t, bin)
	for _, tc := range []struct {
		raw  string
		objs []string
		want []string // provider:name of every match, sorted
	}{
		{"usdt:" + bin + ":net:inbound_message", nil, []string{"net:inbound_message"}},
		{"usdt:" + rel + ":net:inbound_message", nil, []string{"net:inbound_message"}},
		{"usdt:" + bin + ":net:*bound_message", nil, []string{"net:inbound_message", "net:outbound_message"}},
		{"usdt:" + bin + ":connect_block", nil, []string{"validation:connect_block"}},
		{"usdt:" + bin + ":utxocache:*", nil, []string{"utxocache:add", "utxocache:flush", "utxocache:spent", "utxocache:uncache"}},
		{"usdt:" + bin + ":net:nope", nil, []string{}},
		{"usdt::validation:block_connected", []string{"/no/such/lib.so", bin}, []string{"validation:block_connected"}},
		{"usdt:*:validation:block_connected", []string{bin}, []string{"validation:block_connected"}},
		{"usdt:" + bin + "*:validation:block_connected", nil, []string{"validation:block_connected"}},
	} {
		p := usdtProgram(tc.raw)
		res, err := resolveUSDT(p, hostOf(t, p, Input{Objects: tc.objs}))
		if err != nil {
			t.Errorf("%s: %v", tc.raw, err)
			continue
		}
		got := []string{}
		ap := p.Probes[0].Attach[0]
		for _, pr := range res[ap] {
			got = append(got, pr.Provider+":"+pr.Name)
			// The path is the script's, for the probe builtin, or the
			// object's when the script names none or a pattern.
			want := ap.Target
			if WildcardPath(ap.Target) || strings.HasSuffix(ap.Target, "*") {
				want = bin
			}
			if pr.Path != want {
				t.Errorf("%s: probe path %s, want %s", tc.raw, pr.Path, want)
			}
		}
		slices.Sort(got)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: matched %q, want %q", tc.raw, got, tc.want)
		}
	}
}

func TestResolveUSDTErrors(t *testing.T) {
	for _, tc := range []struct {
		raw  string
		want string
	}{
		{"usdt:/no/such/binary:net:x", "usdt target file '/no/such/binary' does not exist or is not executable"},
		{"usdt::net:x", "needs -p PID or -c CMD"},
		{"usdt:/no/such/binary*:net:x", "usdt target file '/no/such/binary*' does not exist or is not executable"},
	} {
		p := usdtProgram(tc.raw)
		_, err := resolveUSDT(p, hostOf(t, p, Input{}))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want it to contain %q", tc.raw, err, tc.want)
		}
	}
}

func TestMatchedProgram(t *testing.T) {
	p := usdtProgram("usdt:/a:p:x", "usdt:/a:p:y")
	both := &lang.Probe{Attach: []*lang.AttachPoint{p.Probes[0].Attach[0], p.Probes[1].Attach[0]}}
	begin := &lang.Probe{Attach: []*lang.AttachPoint{{Raw: "BEGIN", Point: attachpoint.Point{Kind: lang.ProbeBegin}}}}
	p.Probes = append(p.Probes, both, begin)
	x, y := p.Probes[0].Attach[0], p.Probes[1].Attach[0]
	x1, x2 := &lang.AttachPoint{Raw: "x1"}, &lang.AttachPoint{Raw: "x2"}
	q := matchedProgram(p, map[*lang.AttachPoint][]*lang.AttachPoint{x: {x}, y: nil})
	if len(q.Probes) != 3 || q.Probes[0] != p.Probes[0] || q.Probes[2] != begin {
		t.Fatalf("matchedProgram kept %d probes, want x, x of both, BEGIN", len(q.Probes))
	}
	if got := q.Probes[1].Attach; len(got) != 1 || got[0] != x {
		t.Errorf("the block on x and y kept %d attach points, want x only", len(got))
	}
	if len(both.Attach) != 2 || len(p.Probes) != 4 {
		t.Error("matchedProgram changed its input")
	}
	q = matchedProgram(p, map[*lang.AttachPoint][]*lang.AttachPoint{x: {x1, x2}})
	if got := q.Probes[0].Attach; len(got) != 2 || got[0] != x1 || got[1] != x2 {
		t.Errorf("x expanded into %d attach points, want x1 and x2", len(got))
	}
}

func TestCommandObjects(t *testing.T) {
	files := &usdt.Files{}
	defer files.Close()
	objs, err := CommandObjects("sh -c true", files)
	if err != nil {
		t.Fatal(err)
	}
	if !filepath.IsAbs(objs[0]) || filepath.Base(objs[0]) != "sh" {
		t.Errorf("executable %s, want an absolute path to sh", objs[0])
	}
	libc := false
	for _, o := range objs[1:] {
		if strings.HasPrefix(filepath.Base(o), "libc.so") {
			libc = true
		}
	}
	if !libc {
		t.Errorf("libraries of sh %q do not include libc", objs[1:])
	}
	if _, err := CommandObjects("/no/such/command", files); err == nil || !strings.Contains(err.Error(), "does not exist or is not executable") {
		t.Errorf("missing command: error %v", err)
	}
}

// TestExpandUprobesInObjects checks uprobe:*:FUNC, which names the
// functions of every object of the -p process or -c command: each match
// gets its object as the target, objects that are not ELF files are
// passed over, and without objects it is an error.
func TestExpandUprobesInObjects(t *testing.T) {
	exe := fixture.Build(t, "bitcoind")
	notELF := filepath.Join(t.TempDir(), "notes.txt")
	if err := os.WriteFile(notELF, []byte("not an ELF file\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		objs []string
		want []string // targets and functions of the expanded attach points
		err  string
	}{
		{"in the executable", []string{notELF, exe}, []string{exe + ":main"}, ""},
		{"no objects", nil, nil, "needs -p PID or -c CMD"},
	} {
		p, _ := analyzedAs(t, "stdin", "uprobe:*:main { }")
		ap := p.Probes[0].Attach[0]
		res, err := expandUprobes(p, hostOf(t, p, Input{Objects: tc.objs}))
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: error %v, want %q", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var got []string
		for _, e := range res[ap] {
			got = append(got, e.Target+":"+e.Func)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: expanded to %q, want %q", tc.name, got, tc.want)
		}
	}
}
