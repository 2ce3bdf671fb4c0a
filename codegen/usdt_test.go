package codegen

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/cilium/ebpf/link"

	"github.com/gotrace/gotrace/internal/testenv"
	"github.com/gotrace/gotrace/lang"
	"github.com/gotrace/gotrace/usdt"
)

// usdtProgram fires probe t:p from two sites with different operands:
// registers and a constant at the first, a SIB memory operand and
// %rip-relative globals at the second.
const usdtProgram = `#include <sys/sdt.h>
volatile long g = 7;
long arr[4] = {10, 20, -30, 40};
volatile short sh = -5;
int main(int argc, char **argv) {
  long x = argc * 100;
  for (int i = 0; i < 3; i++) {
    DTRACE_PROBE3(t, p, x + i, (unsigned char)200, (int)-i);
    DTRACE_PROBE3(t, p, arr[(i + argc) & 3], g, sh);
  }
  return 0;
}
`

// TestUSDTEndToEnd attaches a compiled probe to every site of a real
// USDT probe, with the cookies of the Spec, runs the program and checks
// the arguments each site passed. bpftrace 0.17 prints garbage for the
// %rip-relative operands ("deref ident is not handled yet"); the values
// here are the C program's.
func TestUSDTEndToEnd(t *testing.T) {
	testenv.RequireRoot(t)
	gcc := testenv.RequireTool(t, "gcc")
	dir := t.TempDir()
	src, bin := filepath.Join(dir, "p.c"), filepath.Join(dir, "p")
	if err := os.WriteFile(src, []byte(usdtProgram), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(gcc, "-O2", "-o", bin, src).CombinedOutput(); err != nil {
		testenv.Unavailable(t, "gcc with <sys/sdt.h>: %v\n%s", err, out)
	}
	probes, err := usdt.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if len(probes) != 1 || len(probes[0].Locations) != 2 {
		t.Fatalf("probes = %+v, want t:p at two sites", probes)
	}

	p, err := lang.Parse("test.bt", "usdt:"+bin+":t:p { printf(\"%ld %ld %ld\\n\", arg0, arg1, arg2); @n[arg1] = count(); }")
	if err != nil {
		t.Fatal(err)
	}
	info, err := lang.Analyze(p, lang.Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ap := info.AttachPoints(p.Probes[0])[0]
	spec, err := Compile(info.ResolvedProgram(p), info, Options{USDT: map[*lang.AttachPoint][]*usdt.Probe{ap: {&probes[0]}}})
	if err != nil {
		t.Fatal(err)
	}
	l := load(t, spec)
	att := spec.Attachments[0]
	if len(att.Sites) != 2 || att.Sites[0].Cookie == att.Sites[1].Cookie {
		t.Fatalf("sites = %+v, want two layouts", att.Sites)
	}
	ex, err := link.OpenExecutable(bin)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range att.Sites {
		lk, err := ex.Uprobe("", l.coll.Programs[att.Program], &link.UprobeOptions{Address: s.Offset, Cookie: s.Cookie})
		if err != nil {
			t.Fatalf("attach: %v", err)
		}
		defer lk.Close()
	}
	if out, err := exec.Command(bin).CombinedOutput(); err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	var got []string
	for _, r := range l.drain(t, spec.EventsMap) {
		got = append(got, formatRecord(t, r))
	}
	want := []string{"100 200 0\n", "20 7 -5\n", "101 200 -1\n", "-30 7 -5\n", "102 200 -2\n", "40 7 -5\n"}
	if !slices.Equal(got, want) {
		t.Errorf("events = %q, want %q", got, want)
	}
}
