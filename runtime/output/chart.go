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
			s.Key = string(appendKeyText(nil, "", e.Key))
		}
		if s.Time {
			ps := tseriesPoints(m, e, first, last)
			layoutOf := "15:04:05"
			if len(ps) > 1 && ps[1].start.Sub(ps[0].start) < time.Second {
				layoutOf = "15:04:05.000"
			}
			for _, p := range ps {
				s.Points = append(s.Points, Point{Label: p.start.Format(layoutOf), Value: int64(p.value.Bits), Missing: !p.has})
			}
		} else {
			for _, bk := range histBuckets(m, e, 0) {
				s.Points = append(s.Points, Point{Label: bk.label, Value: int64(bk.count)})
			}
		}
		series = append(series, s)
	}
	return series
}
