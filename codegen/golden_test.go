package codegen

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/gotrace/gotrace/internal/golden"
	"github.com/gotrace/gotrace/lang"
	"github.com/gotrace/gotrace/usdt"
)

// goldenTests are small programs whose bytecode listing is kept in
// testdata/golden/NAME.txt. Run `go test -run Golden -update` after a
// deliberate change to the lowering and review the diff.
var goldenTests = []struct {
	name string
	src  string
}{
	{"begin_printf", `BEGIN { printf("%d %s\n", 1 + 2, "hi"); exit(); }`},
	{"usdt_count", `usdt:/bin/fake:net:msg /arg1 > 0/ { @n[arg1] = count(); }`},
	{"hist_str_key", `BEGIN { $s = "k"; @h[$s] = hist(nsecs); }`},
	{"usdt_printf_str", `usdt:/bin/fake:net:msg { printf("%s %d %s\n", str(arg0), arg1, comm); }`},
}

// fakeProbe is the probe net:msg of /bin/fake with two locations whose
// arguments are laid out differently: registers at 0x1000, memory and a
// constant at 0x2000, with the given semaphore offset.
func fakeProbe(semaphoreOffset uint64) *usdt.Probe {
	rdi := usdt.Register{Name: "rdi", PtRegsOffset: 112, Width: 8}
	eax := usdt.Register{Name: "eax", PtRegsOffset: 80, Width: 4}
	rbp := usdt.Register{Name: "rbp", PtRegsOffset: 32, Width: 8}
	return &usdt.Probe{Path: "/bin/fake", Provider: "net", Name: "msg", Locations: []usdt.Location{
		{PC: 0x1000, Offset: 0x1000, ArgString: "-8@%rdi -4@%eax", Args: []usdt.Arg{
			{Size: 8, Signed: true, Loc: usdt.ArgRegister, Reg: rdi},
			{Size: 4, Signed: true, Loc: usdt.ArgRegister, Reg: eax},
		}},
		{PC: 0x2000, Offset: 0x2000, SemaphoreOffset: semaphoreOffset, ArgString: "8@-8(%rbp) 1@$-56", Args: []usdt.Arg{
			{Size: 8, Loc: usdt.ArgMemory, Reg: rbp, Disp: -8},
			{Size: 1, Loc: usdt.ArgConstant, Const: -56},
		}},
	}}
}

// fakeUSDT matches every usdt attach point of p, as resolved in info, to
// the probe fake: codegen's Options.USDT for a program whose probes are
// not looked for in any file.
func fakeUSDT(p *lang.Program, info *lang.Info, fake *usdt.Probe) map[*lang.AttachPoint][]*usdt.Probe {
	probes := map[*lang.AttachPoint][]*usdt.Probe{}
	for _, pr := range p.Probes {
		for _, ap := range info.AttachPoints(pr) {
			if ap.Kind == lang.ProbeUSDT {
				probes[ap] = []*usdt.Probe{fake}
			}
		}
	}
	return probes
}

func TestGolden(t *testing.T) {
	fake := fakeProbe(0)
	for _, tt := range goldenTests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := lang.Parse(tt.name+".bt", tt.src)
			if err != nil {
				t.Fatal(err)
			}
			info, err := lang.Analyze(p, lang.Config{}, nil)
			if err != nil {
				t.Fatal(err)
			}
			opts := Options{USDT: fakeUSDT(p, info, fake)}
			spec, err := Compile(info.ResolvedProgram(p), info, opts)
			if err != nil {
				t.Fatal(err)
			}
			got := listing(spec)
			again, err := Compile(info.ResolvedProgram(p), info, opts)
			if err != nil {
				t.Fatal(err)
			}
			if listing(again) != got {
				t.Fatal("two compilations of the same program differ")
			}
			golden.Compare(t, filepath.Join("testdata", "golden", tt.name+".txt"), []byte(got))
			load(t, spec)
		})
	}
}

// listing is spec's listing as a string.
func listing(spec *Spec) string {
	var b strings.Builder
	spec.WriteListing(&b)
	return b.String()
}
