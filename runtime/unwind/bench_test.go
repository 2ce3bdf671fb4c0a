package unwind

import (
	"debug/elf"
	"path/filepath"
	"testing"

	"github.com/gotrace/gotrace/internal/testenv"
)

// BenchmarkBuild measures Build on the files a traced bitcoind maps
// (docs/design.md quotes it: Build runs at attach). Run it with a small
// -benchtime, e.g. -benchtime=10x.
func BenchmarkBuild(b *testing.B) {
	for _, path := range []string{bitcoind(b), libc, libstdcxx} {
		b.Run(filepath.Base(path), func(b *testing.B) {
			testenv.RequireFile(b, path)
			f, err := elf.Open(path)
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			b.ReportAllocs()
			var t *Table
			for b.Loop() {
				if t, err = Build(f); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(t.Rows)), "rows")
			b.ReportMetric(float64(len(t.Rules)), "rules")
		})
	}
}
