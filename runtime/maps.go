package runtime

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf"

	"github.com/gotrace/gotrace/codegen"
	"github.com/gotrace/gotrace/codegen/layout"
)

// maxBuckets bounds the bucket index of hist and lhist keys: hist has 66
// buckets, lhist (max-min)/step+2, and a corrupt index must not make the
// runtime allocate without bound.
const maxBuckets = 1 << 20

// mapEntry is one key of a user map with its value merged over the CPUs.
type mapEntry struct {
	// Key is the user's key, without the bucket index of hist and lhist
	// maps; nil for a map without keys.
	Key []byte
	// Value holds the bytes of a map that is not an aggregation.
	Value []byte
	// Count is the count of count(), avg() and stats().
	Count uint64
	// Total is the value of sum(), min() and max() and the total of avg()
	// and stats().
	Total int64
	// Buckets holds the count of every bucket of hist() and lhist(), by
	// bucket index.
	Buckets []uint64
}

// minMax is the per-CPU value of min() and max(): the value and whether
// this CPU has set it.
type minMax struct {
	Value int64
	Set   uint64
}

// countTotal is the per-CPU value of avg() and stats().
type countTotal struct {
	Count uint64
	Total int64
}

// readMap reads every entry of a user map and merges the per-CPU values of
// aggregations: count and sum add up, min and max keep the extreme of the
// CPUs that set one, avg and stats add counts and totals, hist and lhist
// gather bucket counts under the user's key. Entries come in the kernel's
// iteration order; printing sorts them.
func readMap(m *codegen.Map, em *ebpf.Map) ([]*mapEntry, error) {
	bucketed := m.Kind.Bucketed()
	keyless := len(m.KeyFields) == 0
	var entries []*mapEntry
	byKey := map[string]*mapEntry{}
	entry := func(key []byte) *mapEntry {
		if keyless {
			key = nil
		}
		e, ok := byKey[string(key)]
		if !ok {
			e = &mapEntry{Key: key}
			byKey[string(key)] = e
			entries = append(entries, e)
		}
		return e
	}
	if m.Array && bucketed {
		return readArrayHist(m, em)
	}
	key := make([]byte, m.KeySize)
	it := em.Iterate()
	switch {
	case !m.PerCPU:
		value := make([]byte, m.ValueSize)
		for it.Next(&key, &value) {
			e := entry(clone(key))
			e.Value = clone(value)
		}
	case m.ValueSize == 8:
		var values []uint64
		for it.Next(&key, &values) {
			var sum uint64
			for _, v := range values {
				sum += v
			}
			if !bucketed {
				e := entry(clone(key))
				e.Count, e.Total = sum, int64(sum)
				continue
			}
			e := entry(clone(key[:m.KeySize-8]))
			b := u64(key, m.KeySize-8)
			if b > maxBuckets {
				return nil, fmt.Errorf("read map %s: bucket index %d out of range", m.Name, b)
			}
			for uint64(len(e.Buckets)) <= b {
				e.Buckets = append(e.Buckets, 0)
			}
			e.Buckets[b] += sum
		}
	case m.Kind == layout.MapMin || m.Kind == layout.MapMax:
		var values []minMax
		for it.Next(&key, &values) {
			e := entry(clone(key))
			set := false
			for _, v := range values {
				if v.Set == 0 {
					continue
				}
				if !set || (m.Kind == layout.MapMin && v.Value < e.Total) || (m.Kind == layout.MapMax && v.Value > e.Total) {
					e.Total = v.Value
				}
				set = true
			}
		}
	default:
		var values []countTotal
		for it.Next(&key, &values) {
			e := entry(clone(key))
			for _, v := range values {
				e.Count += v.Count
				e.Total += v.Total
			}
		}
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("read map %s: %w", m.Name, err)
	}
	return entries, nil
}

// readArrayHist reads a key-less hist or lhist kept in a per-CPU array
// (codegen.Map.Array): one entry, with the buckets summed over the CPUs,
// or none when the flag in the last element is zero on every CPU.
func readArrayHist(m *codegen.Map, em *ebpf.Map) ([]*mapEntry, error) {
	n := em.MaxEntries() - 1
	e := &mapEntry{Buckets: make([]uint64, n)}
	var held bool
	var values []uint64
	for i := range n + 1 {
		if err := em.Lookup(i, &values); err != nil {
			return nil, fmt.Errorf("read map %s: %w", m.Name, err)
		}
		for _, v := range values {
			if i == n {
				held = held || v != 0
			} else {
				e.Buckets[i] += v
			}
		}
	}
	if !held {
		return nil, nil
	}
	return []*mapEntry{e}, nil
}

// clearMap deletes every entry of a map (clear()), or with zero set keeps
// the keys and zeroes their values (zero()). An array's element cannot be
// deleted, so clear() zeroes it too.
func clearMap(m *codegen.Map, em *ebpf.Map, zero bool) error {
	var keys [][]byte
	var prev any
	for {
		next := make([]byte, m.KeySize)
		err := em.NextKey(prev, &next)
		if errors.Is(err, ebpf.ErrKeyNotExist) {
			break
		}
		if err != nil {
			return fmt.Errorf("clear map %s: %w", m.Name, err)
		}
		keys = append(keys, next)
		prev = next
	}
	if zero && m.Array && m.Kind.Bucketed() {
		// A histogram array's last element says the map holds one, which
		// zero() keeps.
		keys = keys[:len(keys)-1]
	}
	for _, k := range keys {
		var err error
		switch {
		case !zero && !m.Array:
			err = em.Delete(k)
			if errors.Is(err, ebpf.ErrKeyNotExist) {
				err = nil
			}
		case m.PerCPU:
			zeros := make([][]byte, ebpfPossibleCPUs())
			for i := range zeros {
				zeros[i] = make([]byte, m.ValueSize)
			}
			err = em.Put(k, zeros)
		default:
			err = em.Put(k, make([]byte, m.ValueSize))
		}
		if err != nil {
			return fmt.Errorf("clear map %s: %w", m.Name, err)
		}
	}
	return nil
}

// ebpfPossibleCPUs is the number of per-CPU values of a per-CPU map.
func ebpfPossibleCPUs() int {
	n, err := ebpf.PossibleCPU()
	if err != nil {
		return 1
	}
	return n
}

func clone(b []byte) []byte { return append([]byte(nil), b...) }
