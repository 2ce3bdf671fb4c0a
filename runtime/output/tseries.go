package output

import (
	"strconv"
	"strings"
	"time"

	"github.com/gotrace/gotrace/codegen/layout"
)

// Interval is one interval of a tseries() map's entry: its epoch (its
// start divided by the interval's length) and its value.
type Interval struct {
	Epoch uint64
	Value Value
}

// tseriesPoint is one printed interval of a time series: its start, and
// its value unless no value fell in it (has false).
type tseriesPoint struct {
	start time.Time
	value Value
	has   bool
}

// tseriesEpochs returns the epochs every entry of a tseries map prints,
// first to last: the last Intervals up to the latest epoch of any entry,
// as bpftrace lines up the series of all keys. first > last (nothing to
// print) when the latest epoch is below Intervals-1, and for other maps.
func tseriesEpochs(m *Map) (first, last uint64) {
	if m.Kind != layout.MapTseries {
		return 1, 0
	}
	var scratch Entry
	for i := range m.entryCount() {
		for _, iv := range m.entry(i, &scratch).Intervals {
			last = max(last, iv.Epoch)
		}
	}
	return last - uint64(m.Tseries.Intervals) + 1, last
}

// tseriesPoints returns the points e prints for the epochs first to last:
// from the first epoch e has a value for (or the last when it has none in
// the range), each epoch with its value or without.
func tseriesPoints(m *Map, e *Entry, first, last uint64) []tseriesPoint {
	if first > last {
		return nil
	}
	values := make(map[uint64]Value, len(e.Intervals))
	from := last
	for _, iv := range e.Intervals {
		values[iv.Epoch] = iv.Value
		if iv.Epoch >= first {
			from = min(from, iv.Epoch)
		}
	}
	ps := make([]tseriesPoint, 0, last-from+1)
	for ep := from; ; ep++ {
		v, has := values[ep]
		ps = append(ps, tseriesPoint{start: time.Unix(0, int64(ep*uint64(m.Tseries.Interval))), value: v, has: has})
		if ep == last {
			return ps
		}
	}
}

// The geometry of a time series chart: the width of the graph between
// its two borders included, and of the column the minimum is printed in
// above and below it.
const (
	tseriesWidth  = 53
	tseriesMinCol = 21
)

// appendTseriesText appends a time series as bpftrace's text chart: the
// minimum and maximum above and below, then a line per interval with its
// start in local time, the graph with a * at the value (and a . at zero
// when the range spans it), and the value, or - for an interval without
// one. A series of no interval is "<no data>".
func appendTseriesText(b []byte, ps []tseriesPoint) []byte {
	if len(ps) == 0 {
		return append(b, "<no data>"...)
	}
	lo, hi := ps[0].value, ps[0].value
	for _, p := range ps {
		if !p.has {
			continue
		}
		if compareIntValues(p.value, lo) < 0 {
			lo = p.value
		}
		if compareIntValues(p.value, hi) > 0 {
			hi = p.value
		}
	}
	if ps[0].has && compareIntValues(lo, hi) == 0 {
		// Room on both sides of a flat line, where the type allows it.
		lo, hi = step(lo, -1), step(hi, 1)
	}
	var spacing time.Duration
	if len(ps) > 1 {
		spacing = ps[len(ps)-1].start.Sub(ps[0].start) / time.Duration(len(ps)-1)
	}
	unit, digits := "", 0
	switch {
	case spacing >= time.Second:
	case spacing >= time.Millisecond:
		unit, digits = "ms", 3
	case spacing >= time.Microsecond:
		unit, digits = "μs", 6
	default:
		unit, digits = "ns", 9
	}
	timeCol := len("hh:mm:ss")
	header := "hh:mm:ss"
	if unit != "" {
		timeCol += 1 + digits
		header += "." + unit
	}
	bounds := func(b []byte) []byte {
		b = appendRepeat(b, ' ', timeCol+1)
		l, h := tseriesBound(lo, ps[0].has), tseriesBound(hi, ps[0].has)
		b = append(b, l...)
		b = appendRepeat(b, ' ', tseriesMinCol-len(l))
		b = appendRepeat(b, ' ', tseriesWidth-tseriesMinCol-len(h))
		b = append(b, h...)
		return append(b, '\n')
	}
	b = bounds(b)
	b = append(b, header...)
	b = appendRepeat(b, ' ', timeCol+1-len(header))
	b = append(b, '|')
	b = appendRepeat(b, '_', tseriesWidth-2)
	b = append(b, "|\n"...)

	span := float32(diff(lo, hi))
	zero := 0
	if diff(lo, Int(0)) < 0 && diff(Int(0), hi) < 0 {
		zero = int(float32(tseriesWidth) * float32(diff(lo, Int(0))) / span)
	}
	line := make([]byte, tseriesWidth)
	for _, p := range ps {
		b = p.start.Local().AppendFormat(b, "15:04:05")
		if digits > 0 {
			frac := strconv.Itoa(p.start.Nanosecond())
			frac = strings.Repeat("0", 9-len(frac)) + frac
			b = append(b, '.')
			b = append(b, frac[:digits]...)
		}
		b = append(b, ' ')
		for i := range line {
			line[i] = ' '
		}
		line[0], line[tseriesWidth-1] = '|', '|'
		if zero > 0 {
			line[zero] = '.'
		}
		if !p.has {
			b = append(b, line...)
			b = append(b, " -\n"...)
			continue
		}
		at := tseriesWidth / 2
		if compareIntValues(lo, hi) != 0 {
			at = int(float32(tseriesWidth-1) * float32(diff(lo, p.value)) / span)
		}
		line[max(0, min(tseriesWidth-1, at))] = '*'
		b = append(b, line...)
		b = append(b, ' ')
		b = appendInt(b, p.value)
		b = append(b, '\n')
	}
	b = appendRepeat(b, ' ', timeCol+1)
	b = append(b, 'v')
	b = appendRepeat(b, '_', tseriesWidth-2)
	b = append(b, "v\n"...)
	return bounds(b)
}

// tseriesBound is the text of a chart's minimum or maximum: "null" when
// the series printed has no value at all, as in bpftrace.
func tseriesBound(v Value, has bool) string {
	if !has {
		return "null"
	}
	return string(appendInt(nil, v))
}

// step returns the integer v moved by d (1 or -1), or v at its type's
// limit.
func step(v Value, d int64) Value {
	switch {
	case v.Signed && (d < 0 && int64(v.Bits) == -1<<63 || d > 0 && int64(v.Bits) == 1<<63-1),
		!v.Signed && (d < 0 && v.Bits == 0 || d > 0 && v.Bits == ^uint64(0)):
		return v
	}
	v.Bits += uint64(d)
	return v
}

// diff is a - b as a signed 64-bit number, as bpftrace computes it for
// its charts: b's bits read as an int64, wrapping beyond its range.
func diff(a, b Value) int64 {
	other := int64(b.Bits)
	switch {
	case a.Signed:
		return int64(a.Bits) - other
	case other < 0:
		return int64(uint64(-other) + a.Bits)
	case a.Bits > uint64(other):
		return int64(a.Bits - uint64(other))
	}
	return -int64(uint64(other) - a.Bits)
}

// appendTseriesJSON appends a time series as bpftrace's JSON array: an
// object per interval that has a value, with the interval's start in UTC.
func appendTseriesJSON(b []byte, ps []tseriesPoint) []byte {
	b = append(b, '[')
	n := 0
	for _, p := range ps {
		if !p.has {
			continue
		}
		if n > 0 {
			b = append(b, ',')
		}
		n++
		b = append(b, `{"interval_start":"`...)
		b = p.start.UTC().AppendFormat(b, "2006-01-02 15:04:05.000000000")
		b = append(b, `","value":`...)
		b = appendInt(b, p.value)
		b = append(b, '}')
	}
	return append(b, ']')
}
