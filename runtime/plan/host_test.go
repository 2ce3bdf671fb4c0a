package plan

import (
	"debug/elf"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"testing"
	"unsafe"

	"github.com/gotrace/gotrace/internal/fixture"
	"github.com/gotrace/gotrace/internal/settings"
	"github.com/gotrace/gotrace/lang"
	"github.com/gotrace/gotrace/lang/attachpoint"
	"github.com/gotrace/gotrace/usdt"
)

// hostOf reads the host for the attach points of p as a plan for a run on
// in reads it; its files are closed when the test ends.
func hostOf(t *testing.T, p *lang.Program, in Input) *hostFacts {
	t.Helper()
	files := &usdt.Files{}
	t.Cleanup(func() { files.Close() })
	in.Files = files
	return gatherHost(p, in)
}

// targetOf returns the file attach point ap names as a plan reads it.
func targetOf(t *testing.T, ap *lang.AttachPoint) targetFacts {
	t.Helper()
	p := &lang.Program{Probes: []*lang.Probe{{Attach: []*lang.AttachPoint{ap}, Body: &lang.Block{}}}}
	return hostOf(t, p, Input{}).targets[ap.Target]
}

// plainFunctions returns the function symbols a uprobe can name in the
// ELF file at path, as a plan reads them.
func plainFunctions(t *testing.T, path string) []elf.Symbol {
	t.Helper()
	target := targetOf(t, &lang.AttachPoint{Point: attachpoint.Point{Kind: lang.ProbeUprobe, Target: path, Func: "*"}})
	if target.funcsErr != nil {
		t.Fatal(target.funcsErr)
	}
	return target.funcs
}

// TestPlanOpensEachFileOnce makes plans whose rules all read the same
// files (usdt probes and uprobes in the fixture, by absolute and relative
// path, by address and with a wildcard; uprobe:* and usdt without a path
// in the -c command's objects) with an opener that counts: each file is
// opened once per plan, whatever rules and sites read it.
func TestPlanOpensEachFileOnce(t *testing.T) {
	bin := fixture.Build(t, "bitcoind")
	main := functionSymbol(t, bin, "main")
	rel := relativePath(t, bin)
	for _, tc := range []struct {
		name, src string
		in        Input
	}{
		{"usdt and uprobes of one file", fmt.Sprintf(`usdt:%[1]s:net:inbound_message { } usdt:%[2]s:net:*bound_message { }
uprobe:%[1]s:main { } uretprobe:%[2]s:main { } uprobe:%[1]s:%#[3]x { } uprobe:%[1]s:main+0 { } uprobe:%[1]s:"CChainState::Connect*" { }
usdt:%[1]s:net:no_such_probe { } uprobe:%[1]s:no_such_function { }`, bin, rel, main.Value), Input{}},
		{"objects of a command", `usdt::net:inbound_message { } uprobe:*:main { } usdt:*:validation:block_connected { }`,
			Input{Objects: []string{bin, rel}, Command: bin}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, info := analyzed(t, tc.src)
			files := &usdt.Files{}
			t.Cleanup(func() { files.Close() })
			opens := map[string]int{}
			count := func(path string) (*usdt.File, error) {
				opens[path]++
				return files.Open(path)
			}
			in := tc.in
			in.Files, in.MissingProbes, in.open = files, settings.MissingIgnore, count
			pl, err := Make(p, info, in)
			if err != nil {
				t.Fatal(err)
			}
			if len(pl.Sites) == 0 {
				t.Fatal("the plan has no sites")
			}
			if want := map[string]int{bin: 1}; !maps.Equal(opens, want) {
				t.Errorf("opened %v, want %v", opens, want)
			}
		})
	}
}

// relativePath returns path relative to the working directory.
func relativePath(t *testing.T, path string) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(wd, path)
	if err != nil {
		t.Fatal(err)
	}
	return rel
}

// TestPlanReadsMapsOnce reads the host for a -p trace (this test's
// process) whose rules all ask about the process's mappings: a usdt probe
// without a path looks in the objects it maps, a watchpoint needs its
// address mapped, a uprobe's file is checked against the files it maps.
// /proc/PID/maps is read once for all of them.
func TestPlanReadsMapsOnce(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	watched := new(int64)
	p, _ := analyzed(t, fmt.Sprintf(`usdt::net:inbound_message { } watchpoint:%#x:8:w { } uprobe:%s:main { }`,
		uintptr(unsafe.Pointer(watched)), exe))
	reads := 0
	in := Input{PID: os.Getpid(), readMaps: func(pid int) ([]usdt.Mapping, error) {
		reads++
		return usdt.ReadMappings(pid)
	}}
	h := hostOf(t, p, in)
	if reads != 1 {
		t.Errorf("read /proc/%d/maps %d times, want once", in.PID, reads)
	}
	if h.objectsErr != nil || len(h.objects) == 0 {
		t.Errorf("objects %v, err %v: want the files this process maps", h.objects, h.objectsErr)
	}
	for ap, fact := range h.watched {
		if !fact.mapped || fact.err != nil {
			t.Errorf("%s: mapped %v, err %v: want mapped", ap.Raw, fact.mapped, fact.err)
		}
	}
	if len(h.watched) != 1 {
		t.Errorf("%d watchpoints asked about, want 1", len(h.watched))
	}
	if id, ok := h.inodes[exe]; !ok || !h.mapped[id] {
		t.Errorf("%s (%v, stat %v) is not among the files mapped: %v", exe, id, ok, h.mapped)
	}
	_ = *watched
}
