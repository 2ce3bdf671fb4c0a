package lang

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"
)

// largeScripts are generated scripts of about 400 KB for
// BenchmarkCheckLarge: the stress script of bench's check-expr-400k, one
// expression of 400,000 nodes, and a script of many probes with the
// usual mix of maps, variables, builtins, casts and printf.
func largeScripts() map[string]string {
	var mixed strings.Builder
	for i := 0; mixed.Len() < 400_000; i++ {
		fmt.Fprintf(&mixed, "interval:s:%d /pid != %d/ {\n", i%50+1, i)
		fmt.Fprintf(&mixed, "  $a = (uint32)%d + nsecs * 2; $s = comm;\n", i)
		fmt.Fprintf(&mixed, "  @m%d[pid, $s] = count(); @h%d = hist($a - %d);\n", i%40, i%40, i)
		fmt.Fprintf(&mixed, "  if ($a > %d) { printf(\"%%d %%s %%d\\n\", $a, $s, cpu); } else { @t%d = ($a, $s); }\n", i, i%40)
		mixed.WriteString("}\n")
	}
	return map[string]string{
		"expr-400k": "BEGIN { @ = 1" + strings.Repeat("+1", 200_000) + "; }",
		"mixed":     mixed.String(),
	}
}

// BenchmarkCheckLarge resolves and checks a 400 KB script, parsed once:
// the passes write nothing on the AST, so the same program is checked
// again at every iteration, each time into a new Info. Besides the wall
// time it reports cpu-ns/op, the process's CPU time (user and system,
// the collector's included), which a machine shared with other work
// changes far less.
func BenchmarkCheckLarge(b *testing.B) {
	for name, src := range largeScripts() {
		b.Run(name, func(b *testing.B) {
			p, err := Parse("large.bt", src)
			if err != nil {
				b.Fatal(err)
			}
			if err := Desugar(p); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(src)))
			b.ReportAllocs()
			start := cpuTime(b)
			for b.Loop() {
				info := NewInfo()
				if err := Resolve(p, Config{}, info); err != nil {
					b.Fatal(err)
				}
				if err := Check(p, Config{}, info); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(cpuTime(b)-start)/float64(b.N), "cpu-ns/op")
		})
	}
}

// cpuTime returns the CPU time the process has used, user and system.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatalf("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
