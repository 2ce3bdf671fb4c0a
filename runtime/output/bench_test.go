package output

import (
	"bufio"
	"fmt"
	"io"
	"testing"

	"github.com/gotrace/gotrace/codegen/layout"
	"github.com/gotrace/gotrace/internal/printf"
)

func benchMap(n int) *Map {
	m := &Map{Name: "@bytes", Kind: layout.MapSum}
	for i := 0; i < n; i++ {
		m.Entries = append(m.Entries, Entry{
			Key:   []Value{Str(fmt.Sprintf("203.0.%d.%d:8333", i/256, i%256)), Str("inv")},
			Value: Int(int64(i*7919%10007) - 5000),
		})
	}
	return m
}

func BenchmarkMap4096(b *testing.B) {
	m := benchMap(4096)
	for _, f := range []struct {
		name   string
		format Format
	}{{"text", Text}, {"json", JSON}} {
		b.Run(f.name, func(b *testing.B) {
			w := NewWriter(io.Discard, f.format)
			for b.Loop() {
				if err := w.Map(m, 0, 0); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkHist4096(b *testing.B) {
	m := &Map{Name: "@lat", Kind: layout.MapHist}
	for i := 0; i < 4096; i++ {
		bk := make([]uint64, 66)
		for j := 10; j < 30; j++ {
			bk[j] = uint64(i*j) % 977
		}
		m.Entries = append(m.Entries, Entry{Key: []Value{Int(int64(i))}, Buckets: bk})
	}
	w := NewWriter(io.Discard, Text)
	for b.Loop() {
		if err := w.Map(m, 0, 0); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPrintf1M formats one million records of a netmsg.bt-like printf
// per iteration, through a bufio.Writer as the runtime would.
func BenchmarkPrintf1M(b *testing.B) {
	parts, err := printf.Parse("%s %d %s %-8d %x %r\n")
	if err != nil {
		b.Fatal(err)
	}
	args := []Value{Str("203.0.113.7:8333"), Int(17), Str("inv"), Int(24), Uint(0xdeadbeef), Buf([]byte{0, 1, 2, 'a', 'b'})}
	for _, f := range []struct {
		name   string
		format Format
	}{{"text", Text}, {"json", JSON}} {
		b.Run(f.name, func(b *testing.B) {
			bw := bufio.NewWriterSize(io.Discard, 64<<10)
			w := NewWriter(bw, f.format)
			for b.Loop() {
				for i := 0; i < 1_000_000; i++ {
					args[1].Bits = uint64(i)
					if err := w.Printf(parts, args); err != nil {
						b.Fatal(err)
					}
				}
			}
			bw.Flush()
		})
	}
}
