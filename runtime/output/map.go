package output

import (
	"cmp"
	"slices"
	"strconv"

	"github.com/gotrace/gotrace/codegen/layout"
)

// Map is a user map read at print() or at exit, with every aggregate
// already merged across CPUs.
type Map struct {
	// Name is the map's script name, "@x" or "@".
	Name string
	// Kind is the map's aggregation (layout.MapCount ... layout.MapTseries),
	// or layout.MapValue for a map of assigned values.
	Kind layout.MapKind
	// Lhist holds lhist()'s bounds when Kind is layout.MapLhist.
	Lhist layout.Lhist
	// Newer prints avg and stats maps as bpftrace 0.24 does: a stats
	// value as a record ({ .count = 3, .average = 2, .total = 6 }), and
	// no empty line after either kind of map.
	Newer bool
	// HistBits is hist(v, bits)'s bits when Kind is layout.MapHist.
	HistBits int
	// Tseries holds tseries()'s arguments when Kind is layout.MapTseries.
	Tseries layout.Tseries
	// KeyStacks says which elements of the key are stacks (ustack,
	// kstack), whose values are strings as the text format prints them;
	// nil when none is. The folded format and flame graphs read it.
	KeyStacks []bool
	// Entries are the map's entries in any order; the writer sorts them.
	// A map without keys has at most one entry, with a nil Key. bpftrace
	// 0.17 always prints a count() map without keys: give it one entry,
	// zero when nothing was counted or it was cleared.
	Entries []Entry
	// Len and Decode stand for Entries when Decode is set: the map has
	// Len entries and Decode(i, e) sets e to entry i, so that a map of a
	// million keys is decoded one entry at a time as it prints rather
	// than held decoded whole. Decode may reuse the memory of e.Key.
	Len    int
	Decode func(i int, e *Entry)
}

// entryCount is the number of m's entries.
func (m *Map) entryCount() int {
	if m.Decode != nil {
		return m.Len
	}
	return len(m.Entries)
}

// entry returns m's entry i. With Decode it is decoded into scratch and
// valid until the next call with scratch.
func (m *Map) entry(i int, scratch *Entry) *Entry {
	if m.Decode == nil {
		return &m.Entries[i]
	}
	m.Decode(i, scratch)
	return scratch
}

// AllEntries returns m's entries, each decoded into its own memory when m
// has Decode.
func (m *Map) AllEntries() []Entry {
	if m.Decode == nil {
		return m.Entries
	}
	es := make([]Entry, m.Len)
	for i := range es {
		m.Decode(i, &es[i])
	}
	return es
}

// Entry is one key of a map and its merged value.
type Entry struct {
	// Key holds the key's elements: one for @x[k], several for @x[a, b],
	// none for @x. bpftrace prints a pointer key in hex (@q[0x7]): pass
	// it as Str("0x7").
	Key []Value
	// Value is the value of a plain map and of count (unsigned), sum, min
	// and max (signed) maps.
	Value Value
	// Count and Total are an avg or stats map's number of values and
	// their sum.
	Count uint64
	Total int64
	// Buckets are a hist or lhist map's counts by bucket index, numbered
	// as docs/design.md says (hist: 0 negative, 1 zero, k+2 for
	// [2^k, 2^(k+1)); lhist: 0 below min, 1+i for each step, last for max
	// and above). Missing trailing buckets count as zero.
	Buckets []uint64
	// Intervals are a tseries map's intervals, in any order, each epoch
	// once.
	Intervals []Interval
}

// average is an avg or stats entry's mean, truncated toward zero.
func (e *Entry) average() int64 {
	if e.Count == 0 {
		return 0
	}
	return e.Total / int64(e.Count)
}

// bucketTotal is the sum of a hist entry's bucket counts.
func (e *Entry) bucketTotal() uint64 {
	var n uint64
	for _, c := range e.Buckets {
		n += c
	}
	return n
}

// sortedEntries returns m's entries in the order bpftrace 0.17 prints them,
// ascending: integer-valued maps (count, sum, min, max, ints) by value,
// avg and stats by average, hist and lhist by their total count, maps of
// strings, tuples and bufs and tseries maps by key. Equal values, which bpftrace leaves in
// hash order, are ordered by key.
func sortedEntries(m *Map) *sortedList {
	// The sort compares records that hold what it orders by, side by
	// side in memory, rather than chasing each entry's pointers: a map of
	// a million keys sorts in a fraction of the time. Only keys that are
	// not one integer are kept decoded for it.
	rs := make([]sortRecord, m.entryCount())
	intKeys := true
	var scratch Entry
	for i := range rs {
		e := m.entry(i, &scratch)
		r := &rs[i]
		r.index = int32(i)
		switch m.Kind {
		case layout.MapAvg, layout.MapStats:
			r.value = orderedInt(e.average())
		case layout.MapHist, layout.MapLhist:
			r.value = e.bucketTotal()
		default:
			if e.Value.Kind == ValueInt {
				r.value = e.Value.Bits
				if e.Value.Signed {
					r.value = orderedInt(int64(e.Value.Bits))
				}
			}
		}
		if len(e.Key) == 1 && e.Key[0].Kind == ValueInt {
			r.key = e.Key[0].Bits
		} else {
			intKeys = false
		}
	}
	var keys [][]Value
	if !intKeys {
		keys = make([][]Value, len(rs))
		for i := range keys {
			var e Entry
			keys[i] = m.entry(i, &e).Key
		}
	}
	slices.SortFunc(rs, func(a, b sortRecord) int {
		if c := cmp.Compare(a.value, b.value); c != 0 {
			return c
		}
		if intKeys {
			return cmp.Compare(a.key, b.key)
		}
		return compareKeys(keys[a.index], keys[b.index])
	})
	order := make([]int32, len(rs))
	for i := range rs {
		order[i] = rs[i].index
	}
	return &sortedList{m: m, order: order}
}

// sortRecord is an entry's place in sortedEntries' order: its value as an
// unsigned integer of the same order (0 for values that are not integers),
// its key when every key is one integer, and its index in the map.
type sortRecord struct {
	value, key uint64
	index      int32
}

// sortedList is a map's entries in the order they print, each decoded
// only when asked for.
type sortedList struct {
	m       *Map
	order   []int32
	scratch Entry
}

// len is the number of entries in l.
func (l *sortedList) len() int { return len(l.order) }

// at returns the ith entry of l, valid until the next call.
func (l *sortedList) at(i int) *Entry { return l.m.entry(int(l.order[i]), &l.scratch) }

// orderedInt maps a signed integer to an unsigned one of the same order.
func orderedInt(v int64) uint64 { return uint64(v) ^ 1<<63 }

// topEntries keeps the last top entries of es (all when top is 0).
func topEntries(es *sortedList, top uint64) *sortedList {
	if top > 0 && top < uint64(len(es.order)) {
		es.order = es.order[uint64(len(es.order))-top:]
	}
	return es
}

// bucket is one printed histogram bucket: its text label, its inclusive
// bounds in decimal for JSON ("" for the open end of the under and over
// buckets), and its count, divided and raw (the bars use the raw counts).
type bucket struct {
	// index is the bucket's number (docs/design.md).
	index    int
	label    string
	min, max string
	count    uint64
	raw      uint64
}

// histBuckets returns the buckets bpftrace prints for a hist or lhist
// entry: those from the first to the last non-empty one, with counts
// divided by div (the bars use the raw counts).
func histBuckets(m *Map, e *Entry, div uint64) []bucket {
	first, last := -1, -1
	for i, c := range e.Buckets {
		if c != 0 {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	if first < 0 {
		return nil
	}
	bs := make([]bucket, 0, last-first+1)
	for i := first; i <= last; i++ {
		var bk bucket
		if m.Kind == layout.MapLhist {
			bk = lhistBucket(m.Lhist, i)
		} else {
			bk = histBucketOf(m, i)
		}
		bk.index = i
		bk.raw = e.Buckets[i]
		bk.count = bk.raw
		if div > 1 {
			bk.count /= div
		}
		bs = append(bs, bk)
	}
	return bs
}

// BucketRange returns the inclusive bounds of the values that bucket i of
// a hist or lhist map counts, in decimal as -f json writes them: min is
// "" for the bucket below all others, max "" for lhist's bucket of max
// and above.
func BucketRange(m *Map, i int) (min, max string) {
	if m.Kind == layout.MapLhist {
		b := lhistBucket(m.Lhist, i)
		return b.min, b.max
	}
	b := histBucketOf(m, i)
	return b.min, b.max
}

// histBucketOf describes bucket i of hist map m, of bits 0 (bpftrace
// 0.17's labels) or more.
func histBucketOf(m *Map, i int) bucket {
	if m.HistBits == 0 {
		return histBucket(i)
	}
	return histBucketBits(i, m.HistBits)
}

// histBucketBits describes bucket i of a hist(v, bits) map with bits > 0,
// labelled as bpftrace 0.20 labels it: [v] for a bucket of one value,
// [lo, hi) for the others, where a bound m*2^p past 2^(bits+1) is
// written m*2^(p mod 10) with a K, M ... for each 10 in p (2K, 3K, but
// 1536 and 2048 = 4*2^9).
func histBucketBits(i, bits int) bucket {
	if i == 0 {
		return bucket{label: "(..., 0)", max: "-1"}
	}
	loText, lo, loPlain := histBitsBound(i-1, bits)
	hiText, hi, hiPlain := histBitsBound(i, bits)
	label := "[" + loText + ", " + hiText + ")"
	if loPlain && hiPlain && lo+1 == hi {
		label = "[" + loText + "]"
	}
	return bucket{label: label, min: strconv.FormatUint(lo, 10), max: strconv.FormatUint(hi-1, 10)}
}

// histBitsBound returns the bound between buckets j and j+1 of a
// hist(v, bits) map, the least value of bucket j+1: its label, its value
// (wrapping to 0 at 2^64), and whether bpftrace prints it as a plain
// number, which it does up to bucket 2^(bits+1).
func histBitsBound(j, bits int) (string, uint64, bool) {
	if j <= 2<<bits {
		return strconv.Itoa(j), uint64(j), true
	}
	n := 1 << bits
	power := j>>bits - 1
	mult := uint64(n + j&(n-1))
	label := strconv.FormatUint(mult<<(power%10), 10)
	if power >= 10 {
		label += string(" KMGTPE"[power/10])
	}
	return label, mult << power, false
}

// histBucket describes hist() bucket i.
func histBucket(i int) bucket {
	switch i {
	case 0:
		return bucket{label: "(..., 0)", max: "-1"}
	case 1:
		return bucket{label: "[0]", min: "0", max: "0"}
	case 2:
		return bucket{label: "[1]", min: "1", max: "1"}
	}
	k := i - 2
	lo := uint64(1) << k
	hi := lo<<1 - 1 // wraps to 2^64-1 for k = 63
	return bucket{
		label: "[" + powerLabel(k) + ", " + powerLabel(k+1) + ")",
		min:   strconv.FormatUint(lo, 10),
		max:   strconv.FormatUint(hi, 10),
	}
}

// powerLabel names 2^k with a binary suffix: 512, 1K, 2M, 16E.
func powerLabel(k int) string {
	const suffixes = " KMGTPE"
	s := strconv.FormatUint(uint64(1)<<(k%10), 10)
	if k >= 10 {
		s += string(suffixes[k/10])
	}
	return s
}

// lhistBucket describes lhist() bucket i.
func lhistBucket(p layout.Lhist, i int) bucket {
	switch {
	case i == 0:
		return bucket{label: "(..., " + lhistLabel(p.Min) + ")", max: strconv.FormatInt(p.Min-1, 10)}
	case int64(i) >= p.Buckets()-1:
		return bucket{label: "[" + lhistLabel(p.Max) + ", ...)", min: strconv.FormatInt(p.Max, 10)}
	}
	lo := p.Min + int64(i-1)*p.Step
	hi := lo + p.Step
	return bucket{
		label: "[" + lhistLabel(lo) + ", " + lhistLabel(hi) + ")",
		min:   strconv.FormatInt(lo, 10),
		max:   strconv.FormatInt(hi-1, 10),
	}
}

// lhistLabel names an lhist bound: with a K, M, G ... suffix when it is a
// non-zero multiple of 1024, else in decimal (1000000, 3K, 1M).
func lhistLabel(v int64) string {
	const suffixes = "KMGTPE"
	if v == 0 {
		return "0"
	}
	s := 0
	for s < len(suffixes) && v%1024 == 0 {
		v /= 1024
		s++
	}
	if s == 0 {
		return strconv.FormatInt(v, 10)
	}
	return strconv.FormatInt(v, 10) + string(suffixes[s-1])
}
