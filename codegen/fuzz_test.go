package codegen

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/gotrace/gotrace/lang"
	"github.com/gotrace/gotrace/usdt"
)

// FuzzCompile compiles every script the checker accepts: Compile must
// return a Spec or an error, never panic, and as root the kernel must
// accept the Spec. USDT attach points resolve to a fake probe with two
// register arguments.
func FuzzCompile(f *testing.F) {
	for _, pattern := range []string{"../testdata/diff/*.bt", "../testdata/scripts/*.bt", "../scripts/*.bt", "../lang/testdata/check/good/*.bt"} {
		files, _ := filepath.Glob(pattern)
		for _, file := range files {
			src, err := os.ReadFile(file)
			if err == nil {
				f.Add(string(src))
			}
		}
	}
	for _, tt := range semanticsTests {
		f.Add(tt.src)
	}
	rdi := usdt.Register{Name: "rdi", PtRegsOffset: 112, Width: 8}
	fake := &usdt.Probe{Path: "/bin/fake", Provider: "p", Name: "n", Locations: []usdt.Location{
		{PC: 0x1000, Offset: 0x1000, ArgString: "-8@%rdi 8@%rdi", Args: []usdt.Arg{
			{Size: 8, Signed: true, Loc: usdt.ArgRegister, Reg: rdi},
			{Size: 8, Loc: usdt.ArgRegister, Reg: rdi},
		}},
	}}
	f.Fuzz(func(t *testing.T, src string) {
		p, err := lang.Parse("fuzz.bt", src)
		if err != nil {
			return
		}
		params := []string{"1", "two"}
		info, err := lang.Analyze(p, lang.Config{Params: params}, nil)
		if err != nil {
			return
		}
		opts := Options{EventsSize: 4096, ControlSize: 4096, USDT: fakeUSDT(p, info, fake)}
		spec, err := Compile(info.ResolvedProgram(p), info, opts)
		if err == nil && spec == nil {
			t.Fatal("Compile returned neither a Spec nor an error")
		}
		if err == nil && os.Geteuid() == 0 {
			coll, err := ebpf.NewCollection(spec.Collection)
			if err != nil {
				t.Fatalf("load: %v", err)
			}
			coll.Close()
		}
	})
}
