package codegen

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gotrace/gotrace/internal/fixture"
	"github.com/gotrace/gotrace/lang"
	"github.com/gotrace/gotrace/usdt"
)

// TestScriptsLoad compiles every Bitcoin Core style script of the
// repository against the probes of the bitcoind fixture (an -O2 build
// with register operands and an -O0 build with stack operands) and checks
// that the kernel's verifier accepts every program.
func TestScriptsLoad(t *testing.T) {
	var scripts []string
	for _, dir := range []string{"../testdata/scripts", "../scripts"} {
		m, err := filepath.Glob(filepath.Join(dir, "*.bt"))
		if err != nil {
			t.Fatal(err)
		}
		scripts = append(scripts, m...)
	}
	if len(scripts) == 0 {
		t.Fatal("no scripts found")
	}
	for _, variant := range []string{"bitcoind", "bitcoind-O0", "bitcoind-pushdoc"} {
		bin := fixture.Build(t, variant)
		probes, err := usdt.ReadFile(bin)
		if err != nil {
			t.Fatal(err)
		}
		for _, script := range scripts {
			t.Run(variant+"/"+filepath.Base(script), func(t *testing.T) {
				src, err := os.ReadFile(script)
				if err != nil {
					t.Fatal(err)
				}
				p, err := lang.Parse(filepath.Base(script), string(src))
				if err != nil {
					t.Fatal(err)
				}
				params := []string{"1", "100", "5"}
				info, err := lang.Analyze(p, lang.Config{Params: params}, nil)
				if err != nil {
					t.Fatal(err)
				}
				opts := Options{USDT: map[*lang.AttachPoint][]*usdt.Probe{}}
				for _, pr := range p.Probes {
					for _, ap := range info.AttachPoints(pr) {
						if ap.Kind != lang.ProbeUSDT {
							continue
						}
						for i := range probes {
							if probes[i].Name == ap.Func && (ap.Provider == "" || probes[i].Provider == ap.Provider) {
								opts.USDT[ap] = append(opts.USDT[ap], &probes[i])
							}
						}
						if len(opts.USDT[ap]) == 0 {
							t.Skipf("%s has no probe %s", variant, ap.Raw)
						}
					}
				}
				spec, err := Compile(info.ResolvedProgram(p), info, opts)
				if err != nil {
					if strings.Contains(err.Error(), "has only") {
						// The refusal is the result: a script written for
						// another variant's arguments is a positioned error.
						t.Logf("refused, as expected of this variant: %v", err)
						return
					}
					t.Fatal(err)
				}
				load(t, spec)
			})
		}
	}
}
