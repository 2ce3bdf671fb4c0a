package output

import (
	"time"

	"github.com/gotrace/gotrace/codegen/layout"
)

// Series is one entry of a hist, lhist or tseries map as a chart draws
// it: the points the text format prints for it, in order.
type Series struct {
	// Map is the map's name, Key its key as text prints it ("" for a map
	// without keys, "[comm, 2]" otherwise).
	Map, Key string
	// Time says the points are a time series' intervals, not buckets.
	Time bool
	// Points are the buckets from the first to the last that counted
	// something, or the intervals the text chart shows.
	Points []Point
	// Print and Prints say that the series is the entry as the Print-th
	// of Prints prints of its map showed it (counted from 1), for a map
	// printed more than once; both are 0 otherwise.
	Print, Prints int
}

// Point is one bucket or interval of a Series.
type Point struct {
	// Label is the bucket's range as text prints it ([4, 8)), or the
	// interval's start in local time (15:04:05, with the fraction of a
	// second when the intervals are shorter than one).
	Label string
	// Value is the bucket's count or the interval's value; Missing says
	// the interval had none.
	Value   int64
	Missing bool
	// At is the interval's start (zero for a bucket): the prints of a
	// time series are merged by it.
	At time.Time
	// Bucket is the bucket's number (docs/design.md; 0 for an
	// interval): the prints of a histogram are aligned by it.
	Bucket int
}

// Scalar is one entry of a map of numbers as a chart draws it over the
// prints of the map (ScalarValues).
type Scalar struct {
	// Key is the entry's key as text prints it ("" for a map without
	// keys).
	Key string
	// Value is the count, sum, min, max, average or assigned integer.
	Value int64
}

// ScalarValues returns the entries of a map of one number per key
// (count, sum, min, max, avg, or assigned integers) in the order text
// prints them; nil for other maps (hist, lhist, tseries, stats, and
// values that are not integers: strings, tuples, booleans).
func ScalarValues(m *Map) []Scalar {
	switch m.Kind {
	case layout.MapCount, layout.MapSum, layout.MapMin, layout.MapMax, layout.MapAvg, layout.MapValue:
	default:
		return nil
	}
	es := sortedEntries(m)
	values := make([]Scalar, 0, es.len())
	for i := range es.len() {
		e := es.at(i)
		sc := Scalar{Value: int64(e.Value.Bits)}
		if len(e.Key) > 0 {
			sc.Key = string(appendKeyText(nil, "", e.Key, false))
		}
		if m.Kind == layout.MapAvg {
			sc.Value = e.average()
		} else if e.Value.Kind != ValueInt || e.Value.Bool {
			return nil
		}
		values = append(values, sc)
	}
	return values
}

// ChartSeries returns the series of a hist, lhist or tseries map, a
// series per entry in the order text prints them; nil for other maps.
func ChartSeries(m *Map) []Series {
	switch m.Kind {
	case layout.MapHist, layout.MapLhist, layout.MapTseries:
	default:
		return nil
	}
	first, last := tseriesEpochs(m)
	es := sortedEntries(m)
	series := make([]Series, 0, es.len())
	for i := range es.len() {
		e := es.at(i)
		s := Series{Map: m.Name, Time: m.Kind == layout.MapTseries}
		if len(e.Key) > 0 {
			s.Key = string(appendKeyText(nil, "", e.Key, false))
		}
		if s.Time {
			ps := tseriesPoints(m, e, first, last)
			layoutOf := "15:04:05"
			if len(ps) > 1 && ps[1].start.Sub(ps[0].start) < time.Second {
				layoutOf = "15:04:05.000"
			}
			for _, p := range ps {
				s.Points = append(s.Points, Point{Label: p.start.Format(layoutOf), Value: int64(p.value.Bits), Missing: !p.has, At: p.start})
			}
		} else {
			for _, bk := range histBuckets(m, e, 0) {
				s.Points = append(s.Points, Point{Label: bk.label, Value: int64(bk.count), Bucket: bk.index})
			}
		}
		series = append(series, s)
	}
	return series
}
