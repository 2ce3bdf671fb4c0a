package runtime

import (
	"errors"
	"fmt"
	"reflect"
	"unsafe"

	"github.com/cilium/ebpf"

	"github.com/gotrace/gotrace/codegen"
	"github.com/gotrace/gotrace/codegen/layout"
	"github.com/gotrace/gotrace/runtime/output"
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
	// Intervals are the intervals of tseries(), merged over the CPUs, in
	// no order, each epoch once.
	Intervals []output.Interval
}

// tseriesValue is the per-CPU value of tseries() (layout.MapTseries).
type tseriesValue struct {
	Value, Meta, Epoch uint64
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
	entries, err := readMapBy(m, em, true)
	if errors.Is(err, ebpf.ErrNotSupported) {
		entries, err = readMapBy(m, em, false)
	}
	if err != nil {
		return nil, fmt.Errorf("read map %s: %w", m.Name, err)
	}
	return entries, nil
}

// readMapBy is readMap with batch lookups (batch) or one key at a time
// (for kernels without them).
func readMapBy(m *codegen.Map, em *ebpf.Map, batch bool) ([]*mapEntry, error) {
	bucketed := m.Kind.Bucketed()
	if m.Array && bucketed {
		return readArrayHist(m, em)
	}
	var entries []*mapEntry
	// Only the entries of hist and lhist, one per bucket in the kernel,
	// share a user's key; every other key comes once.
	var byKey map[string]*mapEntry
	if bucketed || len(m.KeyFields) == 0 {
		byKey = map[string]*mapEntry{}
	}
	var slab []mapEntry
	entry := func(key []byte) *mapEntry {
		if len(m.KeyFields) == 0 {
			key = nil
		}
		if byKey != nil {
			if e, ok := byKey[string(key)]; ok {
				return e
			}
		}
		if len(slab) == 0 {
			slab = make([]mapEntry, batchKeys)
		}
		e := &slab[0]
		slab = slab[1:]
		e.Key = key
		if byKey != nil {
			byKey[string(key)] = e
		}
		entries = append(entries, e)
		return e
	}
	keys, keyBytes := byteRows(batchKeys, m.KeySize)
	// A batch's keys are copied into one allocation: a million small
	// clones are a million objects for the collector.
	var keyCopies []byte
	keyOf := func(i, size int) []byte {
		if len(keyCopies) < size {
			keyCopies = make([]byte, batchKeys*m.KeySize)
		}
		k := keyCopies[:size:size]
		keyCopies = keyCopies[size:]
		copy(k, keyBytes[i*m.KeySize:])
		return k
	}
	cpus := ebpfPossibleCPUs()
	switch {
	case m.Kind == layout.MapTseries:
		values := make([]tseriesValue, batchKeys*cpus)
		err := readElements(em, batch, keys, keyBytes, values, cpus, func(i int) {
			e := entry(keyOf(i, m.KeySize-8))
			iv := mergeInterval(m.Tseries, values[i*cpus:(i+1)*cpus])
			for _, have := range e.Intervals {
				if have.Epoch == iv.Epoch {
					return
				}
			}
			e.Intervals = append(e.Intervals, iv)
		})
		return entries, err
	case !m.PerCPU:
		values, valueBytes := byteRows(batchKeys, m.ValueSize)
		err := readElements(em, batch, keys, keyBytes, values, 1, func(i int) {
			e := entry(keyOf(i, m.KeySize))
			e.Value = clone(valueBytes[i*m.ValueSize : (i+1)*m.ValueSize])
		})
		return entries, err
	case m.ValueSize == 8:
		values := make([]uint64, batchKeys*cpus)
		var indexErr error
		err := readElements(em, batch, keys, keyBytes, values, cpus, func(i int) {
			var sum uint64
			for _, v := range values[i*cpus : (i+1)*cpus] {
				sum += v
			}
			if !bucketed {
				e := entry(keyOf(i, m.KeySize))
				e.Count, e.Total = sum, int64(sum)
				return
			}
			b := u64(keyBytes[i*m.KeySize:], m.KeySize-8)
			if b > maxBuckets {
				indexErr = fmt.Errorf("bucket index %d out of range", b)
				return
			}
			e := entry(keyOf(i, m.KeySize-8))
			for uint64(len(e.Buckets)) <= b {
				e.Buckets = append(e.Buckets, 0)
			}
			e.Buckets[b] += sum
		})
		if indexErr != nil {
			return nil, indexErr
		}
		return entries, err
	case m.Kind == layout.MapMin || m.Kind == layout.MapMax:
		values := make([]minMax, batchKeys*cpus)
		err := readElements(em, batch, keys, keyBytes, values, cpus, func(i int) {
			e := entry(keyOf(i, m.KeySize))
			set := false
			for _, v := range values[i*cpus : (i+1)*cpus] {
				if v.Set == 0 {
					continue
				}
				if !set || (m.Kind == layout.MapMin && v.Value < e.Total) || (m.Kind == layout.MapMax && v.Value > e.Total) {
					e.Total = v.Value
				}
				set = true
			}
		})
		return entries, err
	default:
		values := make([]countTotal, batchKeys*cpus)
		err := readElements(em, batch, keys, keyBytes, values, cpus, func(i int) {
			e := entry(keyOf(i, m.KeySize))
			for _, v := range values[i*cpus : (i+1)*cpus] {
				e.Count += v.Count
				e.Total += v.Total
			}
		})
		return entries, err
	}
}

// mergeInterval merges the CPUs' values of one tseries element: the
// latest epoch any CPU holds, with the values of that epoch combined as
// the aggregation says (without one, the value set last). Values never
// set (epoch 0) do not count; an element with none is epoch 0, value 0,
// as bpftrace reads it.
func mergeInterval(p layout.Tseries, cpus []tseriesValue) output.Interval {
	var cur tseriesValue
	for _, v := range cpus {
		if v.Epoch == 0 || v.Epoch < cur.Epoch {
			continue
		}
		if v.Epoch > cur.Epoch {
			cur = v
			continue
		}
		switch p.Agg {
		case "":
			if v.Meta > cur.Meta {
				cur = v
			}
		case "avg":
			cur.Value += v.Value
			cur.Meta += v.Meta
		case "sum":
			cur.Value += v.Value
		case "min", "max":
			less := v.Value < cur.Value
			if p.Signed {
				less = int64(v.Value) < int64(cur.Value)
			}
			if less == (p.Agg == "min") && v.Value != cur.Value {
				cur.Value = v.Value
			}
		}
	}
	if p.Agg == "avg" && cur.Meta != 0 {
		if p.Signed {
			cur.Value = uint64(int64(cur.Value) / int64(cur.Meta))
		} else {
			cur.Value /= cur.Meta
		}
	}
	return output.Interval{Epoch: cur.Epoch, Value: intervalValue(p, cur.Value)}
}

// intervalValue is the value of a tseries interval whose bits are v.
func intervalValue(p layout.Tseries, v uint64) output.Value {
	if p.Signed {
		return output.Int(int64(v))
	}
	return output.Uint(v)
}

// batchKeys is how many keys one batch lookup reads: few system calls for
// a big map, and more than any hash bucket holds (a smaller batch than a
// bucket fails with ENOSPC).
const batchKeys = 4096

// byteRows makes a slice of n byte arrays of size bytes, which cilium/ebpf
// fills in place in a batch lookup, and its memory as bytes.
func byteRows(n, size int) (any, []byte) {
	rows := reflect.MakeSlice(reflect.SliceOf(reflect.ArrayOf(size, reflect.TypeFor[byte]())), n, n)
	return rows.Interface(), unsafe.Slice((*byte)(rows.UnsafePointer()), n*size)
}

// readElements reads every element of em into keys (whose memory is
// keyBytes) and values (perKey values a key: a per-CPU map's CPUs), and
// calls fn with the index of each key read. With batch it reads
// batchKeys keys in a system call; without, it reads key by key into the
// first slots, as kernels without batch lookups must.
func readElements(em *ebpf.Map, batch bool, keys any, keyBytes []byte, values any, perKey int, fn func(i int)) error {
	if !batch {
		key := keyBytes[:em.KeySize()]
		first := reflect.ValueOf(values).Slice(0, perKey).Interface()
		if perKey == 1 {
			first = unsafe.Slice((*byte)(reflect.ValueOf(values).UnsafePointer()), em.ValueSize())
		}
		it := em.Iterate()
		for it.Next(key, first) {
			fn(0)
		}
		return it.Err()
	}
	var cursor ebpf.MapBatchCursor
	for {
		n, err := em.BatchLookup(&cursor, keys, values, nil)
		for i := range n {
			fn(i)
		}
		if errors.Is(err, ebpf.ErrKeyNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
	}
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
