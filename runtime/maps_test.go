package runtime

import (
	"bytes"
	"encoding/binary"
	"reflect"
	"slices"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/gotrace/gotrace/codegen"
	"github.com/gotrace/gotrace/codegen/layout"
	"github.com/gotrace/gotrace/internal/testenv"
	"github.com/gotrace/gotrace/lang"
)

// perCPUMap creates a per-CPU hash map of layout m and stores one value
// per CPU under each key.
func perCPUMap(t *testing.T, m *codegen.Map, values map[string][][]byte) *ebpf.Map {
	t.Helper()
	em, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.PerCPUHash, KeySize: uint32(m.KeySize), ValueSize: uint32(m.ValueSize), MaxEntries: 16})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { em.Close() })
	for k, v := range values {
		if err := em.Put([]byte(k), v); err != nil {
			t.Fatal(err)
		}
	}
	return em
}

func le(vs ...int64) []byte {
	var b []byte
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint64(b, uint64(v))
	}
	return b
}

// TestReadMapMerges checks the merging of per-CPU aggregation values:
// min and max ignore CPUs that never set a value, avg adds counts and
// totals, hist adds bucket counts under the user's key.
func TestReadMapMerges(t *testing.T) {
	testenv.RequireRoot(t)
	cpus, err := ebpf.PossibleCPU()
	if err != nil {
		t.Fatal(err)
	}
	if cpus < 2 {
		testenv.Unavailable(t, "needs 2 CPUs to merge, has %d", cpus)
	}
	perCPU := func(first, second []byte, size int) [][]byte {
		v := make([][]byte, cpus)
		for i := range v {
			v[i] = make([]byte, size)
		}
		v[0], v[1] = first, second
		return v
	}
	key := string(le(0))
	for _, tc := range []struct {
		kind   layout.MapKind
		values [][]byte
		want   mapEntry
	}{
		// CPU 1 never set its min: its 0 must not win.
		{layout.MapMin, perCPU(le(5, 1), le(0, 0), 16), mapEntry{Total: 5}},
		{layout.MapMin, perCPU(le(5, 1), le(-3, 1), 16), mapEntry{Total: -3}},
		{layout.MapMax, perCPU(le(-5, 1), le(0, 0), 16), mapEntry{Total: -5}},
		{layout.MapAvg, perCPU(le(2, 10), le(3, 20), 16), mapEntry{Count: 5, Total: 30}},
		{layout.MapCount, perCPU(le(2), le(3), 8), mapEntry{Count: 5, Total: 5}},
	} {
		m := &codegen.Map{Name: "@m", Kind: tc.kind, KeySize: 8, PerCPU: true, ValueSize: len(tc.values[0])}
		entries := readBothWays(t, m, perCPUMap(t, m, map[string][][]byte{key: tc.values}))
		if len(entries) != 1 || entries[0].Count != tc.want.Count || entries[0].Total != tc.want.Total || entries[0].Key != nil {
			t.Errorf("%v: read %+v, want %+v", tc.kind, entries[0], tc.want)
		}
	}

	// hist keyed by one int: key, then bucket index.
	fields, size := codegen.Layout(lang.Int64)
	m := &codegen.Map{Name: "@h", Kind: layout.MapHist, KeyFields: fields, KeySize: size + 8, PerCPU: true, ValueSize: 8}
	entries := readBothWays(t, m, perCPUMap(t, m, map[string][][]byte{
		string(le(7, 3)): perCPU(le(1), le(2), 8),
		string(le(7, 5)): perCPU(le(4), le(0), 8),
		string(le(9, 1)): perCPU(le(0), le(6), 8),
	}))
	got := map[int64][]uint64{}
	for _, e := range entries {
		got[int64(u64(e.Key, 0))] = e.Buckets
	}
	if len(got) != 2 || !slices.Equal(got[7], []uint64{0, 0, 0, 3, 0, 4}) || !slices.Equal(got[9], []uint64{0, 6}) {
		t.Errorf("hist buckets %v, want key 7: [0 0 0 3 0 4], key 9: [0 6]", got)
	}
}

// readBothWays reads a map with batch lookups and key by key, checks that
// both read the same entries and returns them.
func readBothWays(t *testing.T, m *codegen.Map, em *ebpf.Map) []*mapEntry {
	t.Helper()
	var read [2][]mapEntry
	for i, batch := range []bool{true, false} {
		entries, err := readMapBy(m, em, batch)
		if err != nil {
			t.Fatalf("batch %v: %v", batch, err)
		}
		for _, e := range entries {
			read[i] = append(read[i], *e)
		}
		slices.SortFunc(read[i], func(a, b mapEntry) int { return bytes.Compare(a.Key, b.Key) })
	}
	if !reflect.DeepEqual(read[0], read[1]) {
		t.Fatalf("batch lookups read %+v, key by key %+v", read[0], read[1])
	}
	entries, err := readMap(m, em)
	if err != nil {
		t.Fatal(err)
	}
	return entries
}

// TestReadMapBatches reads maps of more keys than one batch holds, a
// plain hash map of values and a per-CPU count, and finds every key once.
func TestReadMapBatches(t *testing.T) {
	testenv.RequireRoot(t)
	const n = 3*batchKeys + 17
	fields, size := codegen.Layout(lang.Int64)
	for _, m := range []*codegen.Map{
		{Name: "@v", Kind: layout.MapValue, KeyFields: fields, KeySize: size, ValueSize: 8},
		{Name: "@c", Kind: layout.MapCount, KeyFields: fields, KeySize: size, ValueSize: 8, PerCPU: true},
	} {
		typ := ebpf.Hash
		if m.PerCPU {
			typ = ebpf.PerCPUHash
		}
		em, err := ebpf.NewMap(&ebpf.MapSpec{Type: typ, KeySize: uint32(m.KeySize), ValueSize: uint32(m.ValueSize), MaxEntries: n})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { em.Close() })
		for k := range int64(n) {
			var v any = le(2 * k)
			if m.PerCPU {
				v = make([]uint64, ebpfPossibleCPUs())
				v.([]uint64)[0] = uint64(2 * k)
			}
			if err := em.Put(le(k), v); err != nil {
				t.Fatal(err)
			}
		}
		entries := readBothWays(t, m, em)
		seen := map[int64]bool{}
		for _, e := range entries {
			k := int64(u64(e.Key, 0))
			v := e.Count
			if !m.PerCPU {
				v = u64(e.Value, 0)
			}
			if seen[k] || v != uint64(2*k) {
				t.Fatalf("%s: key %d read twice or with value %d", m.Name, k, v)
			}
			seen[k] = true
		}
		if len(seen) != n {
			t.Errorf("%s: read %d keys, want %d", m.Name, len(seen), n)
		}
	}
}
