package capture

import (
	"fmt"
	"slices"

	"github.com/gotrace/gotrace/codegen"
	"github.com/gotrace/gotrace/codegen/layout"
)

// checkHeader refuses a header whose layouts would send a decoder outside
// a record or a map entry: the runtime decodes with them as it decodes
// the records of a live trace, trusting the code generator.
func checkHeader(h *Header) error {
	for i, ev := range h.Events {
		if ev.Kind < codegen.EventPrintf || ev.Kind > codegen.EventLoad {
			return fmt.Errorf("event %d: unknown kind %d", i, ev.Kind)
		}
		for _, f := range ev.Args {
			if err := checkField(f, maxRecord); err != nil {
				return fmt.Errorf("event %d: %w", i, err)
			}
		}
	}
	for _, m := range h.Maps {
		if m.KeySize < 0 || m.KeySize > maxRecord || m.ValueSize < 0 || m.ValueSize > maxRecord {
			return fmt.Errorf("map %s: key of %d bytes, value of %d", m.Name, m.KeySize, m.ValueSize)
		}
		for _, f := range m.KeyFields {
			if err := checkField(f, m.KeySize); err != nil {
				return fmt.Errorf("map %s key: %w", m.Name, err)
			}
		}
		if m.Kind == layout.MapValue {
			if err := checkField(m.Value, m.ValueSize); err != nil {
				return fmt.Errorf("map %s value: %w", m.Name, err)
			}
		}
		if m.Kind == layout.MapLhist && (m.Lhist.Step <= 0 || m.Lhist.Max <= m.Lhist.Min || m.Lhist.Buckets() > maxBuckets) {
			return fmt.Errorf("map %s: lhist bounds %d, %d, %d", m.Name, m.Lhist.Min, m.Lhist.Max, m.Lhist.Step)
		}
		if m.Kind == layout.MapTseries && (m.Tseries.Interval <= 0 || m.Tseries.Intervals <= 0 || m.Tseries.Intervals > maxBuckets) {
			return fmt.Errorf("map %s: tseries of %d intervals of %d ns", m.Name, m.Tseries.Intervals, m.Tseries.Interval)
		}
	}
	return nil
}

// maxBuckets bounds an lhist's buckets, as the runtime bounds a bucket
// index.
const maxBuckets = 1 << 20

// minSize is the fewest bytes a field of each kind reads; u64-sized
// kinds not listed read 8.
var minSize = map[layout.Kind]int{
	layout.String:     0,
	layout.Tuple:      0,
	layout.Array:      0,
	layout.Buf:        8,
	layout.Hash:       8,
	layout.Timestamp:  16,
	layout.Inet:       24,
	layout.CgroupPath: 16,
}

// checkField checks that f lies within size bytes and reads no more than
// it holds.
func checkField(f layout.Field, size int) error {
	least, ok := minSize[f.Kind]
	if !ok {
		least = 8
	}
	if !f.Kind.Known() {
		return fmt.Errorf("field of unknown kind %d", f.Kind)
	}
	if f.Offset < 0 || f.Size < least || f.Size > size || f.Offset > size-f.Size {
		return fmt.Errorf("field of %d bytes at offset %d outside %d bytes", f.Size, f.Offset, size)
	}
	if f.Names != nil && len(f.Names) != len(f.Elems) {
		return fmt.Errorf("record of %d fields with %d names", len(f.Elems), len(f.Names))
	}
	if f.Kind == layout.Array {
		// One element field, an integer the printer reads byte by byte
		// over the array's Size.
		if len(f.Elems) != 1 || !slices.Contains([]int{1, 2, 4, 8}, f.Elems[0].Size) || f.Elems[0].Size > f.Size {
			return fmt.Errorf("array of %d bytes without an element of 1, 2, 4 or 8 bytes", f.Size)
		}
		return nil
	}
	for _, e := range f.Elems {
		if err := checkField(e, f.Size); err != nil {
			return err
		}
	}
	return nil
}
