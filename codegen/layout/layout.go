// Package layout describes the bytes a compiled program hands to user
// space: the fields of ring-buffer records and of map keys and values,
// what each field holds, and which aggregation each map is. The code
// generator decides every layout and records it in its Spec in these
// types; the runtime decodes with them and runtime/output prints what they
// describe, so neither needs the language's types. It imports nothing of
// gotrace.
package layout

import (
	"bytes"
	"encoding/binary"
)

// Kind says what a field holds, and so how its bytes decode and print.
type Kind int

// The field kinds. Every field starts at a multiple of 8 bytes.
const (
	// Int is an integer of any declared size, sign- or zero-extended to a
	// u64 as Field.Signed says. Struct addresses and every other value
	// the script computes as a number take this form too.
	Int Kind = iota + 1
	// Pointer is a u64 address: printed in decimal, but in hex in a map
	// key (@[0x40b538]), as bpftrace does.
	Pointer
	// String is a NUL-terminated string in a buffer of Field.Size bytes.
	String
	// Buf is buf()'s value: a u64 length, then Field.Size-8 bytes of data.
	Buf
	// Tuple holds Field.Elems, laid out from the tuple's start.
	Tuple
	// Inet is ntop()'s value: a u64 address family (AF_INET or AF_INET6),
	// then 16 bytes of address.
	Inet
	// Timestamp is strftime()'s value: a u64 index into the Spec's
	// TimeFormats, then a u64 bpf_ktime_get_ns time.
	Timestamp
	// Usym is usym()'s and func's value: a u64 code address.
	Usym
	// Ksym is ksym()'s value: a u64 kernel address.
	Ksym
	// Errno is strerror()'s value: a u64 errno, printed as the C
	// library's message for it.
	Errno
	// Signal is signal_name()'s value: a u64 signal number, printed as
	// the C library's description of it.
	Signal
	// Syscall is syscall_name()'s value: a u64 system call number,
	// printed as the call's name.
	Syscall
	// Username is the username builtin: a u64 uid, printed as the user's
	// name.
	Username
	// Stack is ustack()'s value: a u64 holding the thread id in its high
	// 32 bits and, in its low 32, an id in the stack map of
	// Field.StackFrames frames. A kernel stack (StackKernel) is the id
	// alone.
	Stack
	// Probe is the probe builtin: a u64 index into the Spec's
	// Attachments, printed as the name of the attach point that fired.
	Probe
	// Bool is a u64 that prints as false (0) or true (any other value).
	Bool
	// Hash is a Buf whose data print in reverse order as one hex number
	// (hash256()).
	Hash
	// Array is an array value (lang.KindIntArray): Size bytes of
	// integers packed as in C, each as Elems[0] describes it (Size is
	// then the element's size in bytes), printed as [1,2,3].
	Array
	// Macaddr is macaddr()'s value: a u64 whose first six bytes, as they
	// lie in memory, are a MAC address, printed as 00:1C:42:B5:20:09.
	Macaddr
	// CgroupPath is cgroup_path()'s value: a u64 cgroup id, then a u64
	// index into the Spec's CgroupFilters, printed as the cgroup's paths
	// in the hierarchies the filter names.
	CgroupPath
)

// Known reports whether k is one of the kinds above: a capture file
// written by a later gotrace may hold kinds this one cannot print.
func (k Kind) Known() bool { return k >= Int && k <= CgroupPath }

// Field is one value inside a record, a map key, a map value or a tuple.
type Field struct {
	Kind Kind
	// Offset is where the field starts: in a record, counted from just
	// after the record's u64 event id; in a key, a value or a tuple, from
	// its start.
	Offset int
	// Size is how many bytes of the record the field's data takes: a
	// String's buffer size, a Buf's length word and data, a Tuple's
	// elements; 8 for every u64-sized kind.
	Size int
	// Signed says whether an Int prints as signed.
	Signed bool
	// Packed says a String or Buf of a record is sent at its length: a
	// string's bytes up to and with its NUL, a buf's u64 length (at any
	// alignment) and that many bytes, follow those of the record's
	// previous packed field, or start at Offset for the first; Size is
	// the most it holds.
	Packed bool
	// Elems are a Tuple's elements; Names are a record's field names,
	// one per element (nil for a tuple).
	Elems []Field
	Names []string
	// StackFrames is a Stack's frame limit, which names its stack map;
	// StackPerf says it prints in perf's format (ustack(perf));
	// StackKernel says it is the kernel's stack (kstack).
	StackFrames int
	StackPerf   bool
	StackKernel bool
	// EnumNames are an Int's enumerator names by value: the field holds
	// a value of an enum, which current bpftrace prints by name.
	EnumNames map[int64]string
}

// MapKind says what a map's values are: the values the script assigns, or
// one of the aggregations, whose per-CPU values user space merges.
type MapKind int

// The map kinds, with what one CPU's value of an aggregation holds.
const (
	// MapValue is a map of assigned values, laid out by its value Field;
	// it is not per CPU.
	MapValue MapKind = iota
	// MapCount: a u64 count. MapSum: an i64 total.
	MapCount
	MapSum
	// MapMin and MapMax: an i64 value, then a u64 that is non-zero once
	// this CPU has set it.
	MapMin
	MapMax
	// MapAvg and MapStats: a u64 count, then an i64 total.
	MapAvg
	MapStats
	// MapHist and MapLhist: a u64 count for one bucket, whose index ends
	// the key (or is the index of a key-less map kept in an array),
	// numbered as docs/design.md says.
	MapHist
	MapLhist
	// MapTseries: one interval of a time series, whose index (its epoch
	// modulo the number of intervals) ends the key: an i64 or u64 value,
	// a u64 the aggregation keeps beside it (the time of the last value,
	// avg's count, min's and max's "set" flag), and the u64 epoch (the
	// time divided by the interval) the value belongs to.
	MapTseries
)

// Bucketed reports whether the keys of maps of kind k end with a bucket
// index (hist, lhist and tseries).
func (k MapKind) Bucketed() bool { return k == MapHist || k == MapLhist || k == MapTseries }

// HistBuckets is the number of buckets of a hist(v) map: negative values,
// zero, and one per power of two up to 2^63 (HistBucketsOf(0)).
const HistBuckets = 66

// HistBucketsOf is the number of buckets of a hist(v, bits) map: negative
// values, one per value below 2^bits, then 2^bits for each power of two
// from 2^bits up to 2^63.
func HistBucketsOf(bits int) int64 { return int64(65-bits)<<bits + 1 }

// Lhist holds the constant bounds of an lhist(v, min, max, step) map.
type Lhist struct {
	Min, Max, Step int64
}

// Buckets is the number of buckets of an lhist with bounds l: values
// below Min, one per Step, then Max and above. It is 0 for bounds lhist
// refuses (a Step that is not positive, Max not above Min).
func (l Lhist) Buckets() int64 {
	if l.Step <= 0 || l.Max <= l.Min {
		return 0
	}
	return (l.Max-l.Min)/l.Step + 2
}

// Tseries holds the constant arguments of a tseries(v, interval, n, agg)
// map and the sign of its values.
type Tseries struct {
	// Interval is an interval's length in nanoseconds; Intervals is how
	// many the map keeps.
	Interval, Intervals int64
	// Agg is how the values of one interval combine: "" keeps the last
	// one, "avg", "max", "min" or "sum".
	Agg string
	// Signed says whether the values are signed.
	Signed bool
}

// Cursor finds the fields of a record in its data, taken in order: a
// packed field (Field.Packed) starts just after the previous one.
// The zero Cursor is at the start of a record.
type Cursor struct {
	next int // where the next packed field starts, once past the first
}

// Field returns the bytes of f in data, a record after its event id: from
// f's Offset to the end for a field at a fixed place; for a packed string
// its bytes before its NUL, at most f.Size, empty past the end of data;
// for a packed buf its length word and data, nil when data ends before
// them.
func (c *Cursor) Field(f Field, data []byte) []byte {
	if !f.Packed {
		return data[f.Offset:]
	}
	c.next = max(c.next, f.Offset)
	if f.Kind == Buf {
		start := c.next
		if start+8 > len(data) {
			c.next = len(data)
			return nil
		}
		n := min(binary.LittleEndian.Uint64(data[start:]), uint64(f.Size-8))
		c.next = min(start+8+int(n), len(data))
		if start+8+int(n) > len(data) {
			return nil
		}
		return data[start:c.next]
	}
	if c.next >= len(data) {
		return nil
	}
	b := data[c.next:]
	n := bytes.IndexByte(b, 0)
	if n < 0 {
		n = len(b)
	}
	c.next += n + 1
	return b[:min(n, f.Size)]
}
