package codegen

import (
	"encoding/binary"
	"testing"

	"github.com/gotrace/gotrace/codegen/layout"
	"github.com/gotrace/gotrace/internal/settings"
	"github.com/gotrace/gotrace/lang"
)

// TestAggregations checks the per-CPU values the aggregations leave in
// their maps, summed over CPUs, against the layouts of design.md.
func TestAggregations(t *testing.T) {
	src := `BEGIN {
  @c = count(); @c = count();
  @s["a"] = sum(5); @s["a"] = sum(-7);
  @mn = min(5); @mn = min(-3); @mn = min(9);
  @mx = max(-5); @mx = max(-3); @mx = max(-9);
  @a = avg(10); @a = avg(21);
  @st = stats(4); @st = stats(8);
  @h = hist(0); @h = hist(1); @h = hist(5); @h = hist(1024); @h = hist(-1); @h = hist(1099511627776);
  @h = hist(0x8000000000000000 - 1);
  @l = lhist(-1, 0, 100, 10); @l = lhist(0, 0, 100, 10); @l = lhist(55, 0, 100, 10); @l = lhist(100, 0, 100, 10); @l = lhist(99, 0, 100, 10);
  @kh[7] = hist(3);
  exit();
}`
	l := load(t, compileSource(t, src))
	l.runKind(t, lang.ProbeBegin)

	tests := []struct {
		m    string
		key  []byte
		want []int64
	}{
		{"@c", u32(0), []int64{2}}, // a key-less count() is a per-CPU array
		{"@s", []byte("a\x00\x00\x00\x00\x00\x00\x00"), []int64{-2}},
		{"@mn", u64s(0), []int64{-3, 1}},
		{"@mx", u64s(0), []int64{-3, 1}},
		{"@a", u64s(0), []int64{2, 31}},
		{"@st", u64s(0), []int64{2, 12}},
		{"@h", u32(0), []int64{1}},
		{"@h", u32(1), []int64{1}},
		{"@h", u32(2), []int64{1}},
		{"@h", u32(4), []int64{1}},
		{"@h", u32(12), []int64{1}},
		{"@h", u32(42), []int64{1}},
		{"@h", u32(64), []int64{1}},
		{"@l", u32(0), []int64{1}},
		{"@l", u32(1), []int64{1}},
		{"@l", u32(6), []int64{1}},
		{"@l", u32(10), []int64{1}},
		{"@l", u32(11), []int64{1}},
		// Key-less histograms are per-CPU arrays indexed by bucket, with
		// an element after the buckets that says the map holds one.
		{"@h", u32(layout.HistBuckets), []int64{1}},
		{"@l", u32(12), []int64{1}},
		{"@kh", u64s(7, 3), []int64{1}},
	}
	for _, tt := range tests {
		got := sumPerCPU(t, l, tt.m, tt.key)
		for i, w := range tt.want {
			if got[i] != w {
				t.Errorf("%s[%x] word %d = %d, want %d", tt.m, tt.key, i, got[i], w)
			}
		}
	}
	// Nothing else landed in the histograms.
	for _, name := range []string{"@h", "@l"} {
		n := 0
		it := l.coll.Maps[name].Iterate()
		var k uint32
		var v []uint64
		for it.Next(&k, &v) {
			for _, c := range v {
				if c != 0 {
					n++
					break
				}
			}
		}
		if err := it.Err(); err != nil {
			t.Fatal(err)
		}
		if want := map[string]int{"@h": 8, "@l": 6}[name]; n != want {
			t.Errorf("%s has %d non-zero elements, want %d", name, n, want)
		}
	}
}

func u32(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }

func u64s(vs ...uint64) []byte {
	b := make([]byte, 8*len(vs))
	for i, v := range vs {
		binary.LittleEndian.PutUint64(b[8*i:], v)
	}
	return b
}

// sumPerCPU returns the words of a per-CPU map value summed over CPUs,
// with min/max style values (word 1 a "set" flag) taken from the CPU
// that set them.
func sumPerCPU(t *testing.T, l *loaded, name string, key []byte) []int64 {
	t.Helper()
	var vals [][]byte
	if err := l.coll.Maps[name].Lookup(key, &vals); err != nil {
		t.Fatalf("lookup %s[%x]: %v", name, key, err)
	}
	var out []int64
	for _, v := range vals {
		if len(out) == 0 {
			out = make([]int64, len(v)/8)
		}
		if (name == "@mn" || name == "@mx") && binary.LittleEndian.Uint64(v[8:]) == 0 {
			continue
		}
		for i := range out {
			w := int64(binary.LittleEndian.Uint64(v[8*i:]))
			if name == "@mn" || name == "@mx" {
				out[i] = w
			} else {
				out[i] += w
			}
		}
	}
	return out
}

// TestFullAndLost checks that updates of a full map and records that do
// not fit the ring buffer are counted, not lost silently.
func TestFullAndLost(t *testing.T) {
	src := `BEGIN {
  $i = 0;
  while ($i < 5) { @m[$i] = $i; @c[$i] = count(); $i++; }
  $j = 0;
  while ($j < 200) { printf("%s %s\n", "a record of some bytes", "padding it out to a bigger size"); $j++; }
}`
	p, err := lang.Parse("t.bt", src)
	if err != nil {
		t.Fatal(err)
	}
	info, err := lang.Analyze(p, lang.Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	spec, err := Compile(info.ResolvedProgram(p), info, Options{Values: settings.Values{MapKeysMax: 2}, EventsSize: 4096})
	if err != nil {
		t.Fatal(err)
	}
	l := load(t, spec)
	l.runKind(t, lang.ProbeBegin)
	counters := readCounters(t, l)
	for i, m := range spec.Maps {
		if counters.Full[i] != 3 {
			t.Errorf("%s: %d failed updates counted, want 3", m.Name, counters.Full[i])
		}
	}
	lost := counters.Lost
	got := len(l.drain(t, spec.EventsMap))
	if lost == 0 || got+int(lost) != 200 {
		t.Errorf("%d records read and %d lost, want 200 in all with some lost", got, lost)
	}
}

// TestLoopCapCounted checks that while and for loops stopped at
// MaxLoopIterations are counted, for the runtime's warning, and those that
// end are not.
func TestLoopCapCounted(t *testing.T) {
	spec := compileSource(t, `BEGIN { $i = 0; while ($i < 5) { $i++; } $j = 0; while ($j < 5000) { $j++; } for ($k : 0..5) { } for ($k : 0..5000) { } }`)
	l := load(t, spec)
	l.runKind(t, lang.ProbeBegin)
	counters := readCounters(t, l)
	if counters.LoopCapped != 2 {
		t.Errorf("%d loops counted as stopped at the cap, want 2", counters.LoopCapped)
	}
}

// readCounters reads and decodes the loaded programs' CountersMap.
func readCounters(t *testing.T, l *loaded) Counters {
	t.Helper()
	var value []byte
	if err := l.coll.Maps[l.spec.CountersMap].Lookup(uint32(0), &value); err != nil {
		t.Fatal(err)
	}
	counters, err := l.spec.DecodeCounters(value)
	if err != nil {
		t.Fatal(err)
	}
	return counters
}
