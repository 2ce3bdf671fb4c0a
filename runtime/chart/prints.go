package chart

import (
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/gotrace/gotrace/runtime/output"
)

// Prints gathers the maps a trace prints, each time it prints them (at
// every interval, on print(), at exit), and makes from them the series
// Write draws (Series). A map printed once is drawn as it was printed.
// A map printed more than once is drawn over its prints, so that what
// changed from one to the next shows:
//
//   - a hist or lhist map as small multiples: a panel per entry and
//     print, an entry's prints one under the other on one scale;
//   - a tseries map as one line per entry through the intervals of all
//     its prints (an interval printed twice has its later value);
//   - a map of numbers (count, sum, min, max, avg, assigned integers),
//     which text prints too, as a line per entry through its prints.
//
// The zero Prints is ready for use.
type Prints struct {
	// charted are the series of each print of each hist, lhist and
	// tseries map, by map name; scalars the values of each print of
	// each map of numbers.
	charted map[string][][]output.Series
	scalars map[string][][]output.Scalar
}

// Add keeps a print of m. It reports whether m is drawn instead of
// printed as text: true for hist, lhist and tseries maps; a map of
// numbers is kept and still printed as text, since it is drawn only when
// printed more than once.
func (p *Prints) Add(m *output.Map) bool {
	if series := output.ChartSeries(m); series != nil {
		if p.charted == nil {
			p.charted = map[string][][]output.Series{}
		}
		p.charted[m.Name] = append(p.charted[m.Name], series)
		return true
	}
	if values := output.ScalarValues(m); values != nil {
		if p.scalars == nil {
			p.scalars = map[string][][]output.Scalar{}
		}
		p.scalars[m.Name] = append(p.scalars[m.Name], values)
	}
	return false
}

// Series returns the series to draw, the maps in name order (see
// Prints).
func (p *Prints) Series() []output.Series {
	names := slices.Sorted(maps.Keys(p.charted))
	for name, prints := range p.scalars {
		if len(prints) > 1 {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	var series []output.Series
	for _, name := range names {
		prints, charted := p.charted[name]
		switch {
		case !charted:
			series = append(series, scalarLines(name, p.scalars[name])...)
		case len(prints) == 1:
			series = append(series, prints[0]...)
		case slices.ContainsFunc(prints, func(s []output.Series) bool { return len(s) > 0 && s[0].Time }):
			series = append(series, mergedTimes(prints)...)
		default:
			series = append(series, smallMultiples(name, prints)...)
		}
	}
	return series
}

// keysInOrder returns the keys of the entries of prints, each once, in
// the order they were first printed.
func keysInOrder[T any](prints [][]T, key func(T) string) []string {
	var keys []string
	seen := map[string]bool{}
	for _, print := range prints {
		for _, v := range print {
			if k := key(v); !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
	}
	return keys
}

// smallMultiples returns the series of map name's prints entry by entry:
// each print of an entry, numbered, on the buckets any of its prints
// showed (a print counts 0 in those it did not show), so that a bucket
// stands at one place in every panel; an empty one where a print did not
// hold the entry (it drew "no data").
func smallMultiples(name string, prints [][]output.Series) []output.Series {
	var series []output.Series
	for _, key := range keysInOrder(prints, func(s output.Series) string { return s.Key }) {
		entry := make([]output.Series, len(prints))
		labels := map[int]string{}
		for i, print := range prints {
			entry[i] = output.Series{Map: name, Key: key}
			if j := slices.IndexFunc(print, func(s output.Series) bool { return s.Key == key }); j >= 0 {
				entry[i] = print[j]
				for _, pt := range print[j].Points {
					labels[pt.Bucket] = pt.Label
				}
			}
			entry[i].Print, entry[i].Prints = i+1, len(prints)
		}
		buckets := slices.Sorted(maps.Keys(labels))
		for i := range entry {
			if len(entry[i].Points) == 0 {
				continue
			}
			counts := map[int]int64{}
			for _, pt := range entry[i].Points {
				counts[pt.Bucket] = pt.Value
			}
			entry[i].Points = make([]output.Point, len(buckets))
			for j, b := range buckets {
				entry[i].Points[j] = output.Point{Label: labels[b], Value: counts[b], Bucket: b}
			}
		}
		series = append(series, entry...)
	}
	return series
}

// mergedTimes returns a series per entry of a tseries map through the
// intervals of all its prints, in time order.
func mergedTimes(prints [][]output.Series) []output.Series {
	var series []output.Series
	for _, key := range keysInOrder(prints, func(s output.Series) string { return s.Key }) {
		var merged output.Series
		at := map[time.Time]output.Point{}
		for _, print := range prints {
			for _, s := range print {
				if s.Key != key {
					continue
				}
				merged = s
				for _, pt := range s.Points {
					if old, ok := at[pt.At]; !ok || !pt.Missing || old.Missing {
						at[pt.At] = pt
					}
				}
			}
		}
		merged.Points = slices.SortedFunc(maps.Values(at), func(a, b output.Point) int { return a.At.Compare(b.At) })
		series = append(series, merged)
	}
	return series
}

// scalarLines returns a line per entry of map name through its prints: a
// point per print, labelled with the print's number, missing where the
// print did not hold the entry.
func scalarLines(name string, prints [][]output.Scalar) []output.Series {
	var series []output.Series
	for _, key := range keysInOrder(prints, func(sc output.Scalar) string { return sc.Key }) {
		s := output.Series{Map: name, Key: key, Time: true}
		for i, print := range prints {
			pt := output.Point{Label: "print " + strconv.Itoa(i+1), Missing: true}
			if j := slices.IndexFunc(print, func(sc output.Scalar) bool { return sc.Key == key }); j >= 0 {
				pt.Value, pt.Missing = print[j].Value, false
			}
			s.Points = append(s.Points, pt)
		}
		series = append(series, s)
	}
	return series
}
