package chart

import (
	"bytes"
	"encoding/xml"
	"errors"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gotrace/gotrace/codegen/layout"
	"github.com/gotrace/gotrace/runtime/output"
)

// drawn is the part of a chart the tests read back.
type drawn struct {
	Panels []struct {
		Name  string `xml:"data-name,attr"`
		Print string `xml:"data-print,attr"`
		Bars  []struct {
			Height float64 `xml:"height,attr"`
			Value  int64   `xml:"data-value,attr"`
			Title  string  `xml:"title"`
		} `xml:"rect"`
		Points []struct {
			Cy    float64 `xml:"cy,attr"`
			Title string  `xml:"title"`
		} `xml:"circle"`
		Lines []struct {
			Points string `xml:"points,attr"`
		} `xml:"polyline"`
	} `xml:"g"`
}

func readChart(t *testing.T, b []byte) drawn {
	t.Helper()
	var d drawn
	if err := xml.Unmarshal(b, &d); err != nil {
		t.Fatalf("parse SVG: %v", err)
	}
	return d
}

// TestBars checks a histogram's panel: a bar per bucket, as tall as its
// share of the largest, with its range and count as tooltip.
func TestBars(t *testing.T) {
	s := output.Series{Map: "@size", Key: "[inv]", Points: []output.Point{
		{Label: "[4, 8)", Value: 10}, {Label: "[8, 16)", Value: 0}, {Label: "[16, 32)", Value: 40}, {Label: "[32, 64)", Value: 25},
	}}
	var b bytes.Buffer
	if err := Write(&b, []output.Series{s}, Options{Title: "sizes"}); err != nil {
		t.Fatal(err)
	}
	d := readChart(t, b.Bytes())
	if len(d.Panels) != 1 || d.Panels[0].Name != "@size[inv]" {
		t.Fatalf("panels %+v", d.Panels)
	}
	bars := d.Panels[0].Bars
	if len(bars) != len(s.Points) {
		t.Fatalf("%d bars, want %d", len(bars), len(s.Points))
	}
	full := float64(plotBottom - plotTop)
	for i, bar := range bars {
		p := s.Points[i]
		want := float64(p.Value) / 40 * full
		if bar.Value != p.Value || math.Abs(bar.Height-want) > 0.01 {
			t.Errorf("bar %d: value %d height %v, want %d and %v", i, bar.Value, bar.Height, p.Value, want)
		}
		if !strings.HasPrefix(bar.Title, p.Label+": ") {
			t.Errorf("bar %d: tooltip %q", i, bar.Title)
		}
	}
}

// TestLine checks a time series' panel: a point per interval with a
// value, the line broken where one has none.
func TestLine(t *testing.T) {
	s := output.Series{Map: "@rate", Time: true, Points: []output.Point{
		{Label: "10:00:01", Value: 5}, {Label: "10:00:02", Value: -5}, {Label: "10:00:03", Missing: true},
		{Label: "10:00:04", Value: 0}, {Label: "10:00:05", Value: 10},
	}}
	var b bytes.Buffer
	if err := Write(&b, []output.Series{s}, Options{Title: "rate"}); err != nil {
		t.Fatal(err)
	}
	d := readChart(t, b.Bytes())
	p := d.Panels[0]
	if len(p.Points) != 4 || len(p.Lines) != 2 {
		t.Fatalf("%d points and %d lines, want 4 and 2", len(p.Points), len(p.Lines))
	}
	// -5 .. 10 spans the plot: 10 at the top, -5 at the bottom.
	if p.Points[3].Cy != plotTop || p.Points[1].Cy != plotBottom {
		t.Errorf("points at %v and %v, want %d and %d", p.Points[3].Cy, p.Points[1].Cy, plotTop, plotBottom)
	}
	if p.Points[0].Title != "10:00:01: 5" {
		t.Errorf("tooltip %q", p.Points[0].Title)
	}
}

// TestEmpty checks that nothing to draw is an error.
func TestEmpty(t *testing.T) {
	var b bytes.Buffer
	if err := Write(&b, nil, Options{}); !errors.Is(err, ErrEmpty) {
		t.Errorf("error %v, want ErrEmpty", err)
	}
}

// TestPrints checks what a map printed several times draws: a histogram
// a panel per entry and print on one scale, a time series one line
// through the intervals of all its prints, a map of numbers a line
// through its prints; a map printed once as it was printed.
func TestPrints(t *testing.T) {
	hist := func(buckets map[string][]uint64) *output.Map {
		m := &output.Map{Name: "@lat", Kind: layout.MapHist}
		for _, key := range slices.Sorted(maps.Keys(buckets)) {
			m.Entries = append(m.Entries, output.Entry{Key: []output.Value{output.Str(key)}, Buckets: buckets[key]})
		}
		return m
	}
	count := func(values map[string]uint64) *output.Map {
		m := &output.Map{Name: "@n", Kind: layout.MapCount}
		for _, key := range slices.Sorted(maps.Keys(values)) {
			m.Entries = append(m.Entries, output.Entry{Key: []output.Value{output.Str(key)}, Value: output.Uint(values[key])})
		}
		return m
	}
	tseries := func(values map[uint64]int64) *output.Map {
		m := &output.Map{Name: "@t", Kind: layout.MapTseries, Tseries: layout.Tseries{Interval: int64(time.Second), Intervals: 2}}
		e := output.Entry{}
		for _, epoch := range slices.Sorted(maps.Keys(values)) {
			e.Intervals = append(e.Intervals, output.Interval{Epoch: epoch, Value: output.Int(values[epoch])})
		}
		m.Entries = append(m.Entries, e)
		return m
	}
	// panel is what a test expects of one panel: its name, print, and
	// bar values or point titles.
	type panel struct {
		name   string
		print  string
		values []int64
	}
	tests := []struct {
		name   string
		prints []*output.Map
		want   []panel
		// full is the value drawn as tall as the plot in every panel of
		// an entry's bars, by panel name.
		full map[string]int64
	}{{
		name:   "a hist printed three times",
		prints: []*output.Map{hist(map[string][]uint64{"read": {0, 0, 2}}), hist(map[string][]uint64{"read": {0, 0, 8}, "write": {0, 1}}), hist(map[string][]uint64{"read": {0, 0, 4, 1}})},
		// Every print of an entry on the buckets of all of them.
		want: []panel{
			{"@lat[read]", "1", []int64{2, 0}}, {"@lat[read]", "2", []int64{8, 0}}, {"@lat[read]", "3", []int64{4, 1}},
			{"@lat[write]", "1", nil}, {"@lat[write]", "2", []int64{1}}, {"@lat[write]", "3", nil},
		},
		full: map[string]int64{"@lat[read]": 8, "@lat[write]": 1},
	}, {
		name:   "a hist cleared between its prints",
		prints: []*output.Map{hist(map[string][]uint64{"read": {0, 0, 2}}), hist(map[string][]uint64{"read": {0, 0, 0, 0, 3}})},
		want:   []panel{{"@lat[read]", "1", []int64{2, 0}}, {"@lat[read]", "2", []int64{0, 3}}},
		full:   map[string]int64{"@lat[read]": 3},
	}, {
		name:   "a hist printed once",
		prints: []*output.Map{hist(map[string][]uint64{"read": {0, 0, 2, 6}})},
		want:   []panel{{"@lat[read]", "", []int64{2, 6}}},
		full:   map[string]int64{"@lat[read]": 6},
	}, {
		name:   "a count printed three times",
		prints: []*output.Map{count(map[string]uint64{"a": 1}), count(map[string]uint64{"a": 5, "b": 2}), count(map[string]uint64{"a": 9})},
		want:   []panel{{"@n[a]", "", []int64{1, 5, 9}}, {"@n[b]", "", []int64{2}}},
	}, {
		name:   "a tseries printed twice",
		prints: []*output.Map{tseries(map[uint64]int64{100: 1, 101: 2}), tseries(map[uint64]int64{101: 3, 102: 4})},
		want:   []panel{{"@t", "", []int64{1, 3, 4}}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p Prints
			for _, m := range tt.prints {
				p.Add(m)
			}
			var b bytes.Buffer
			if err := Write(&b, p.Series(), Options{Title: tt.name}); err != nil {
				t.Fatal(err)
			}
			d := readChart(t, b.Bytes())
			if len(d.Panels) != len(tt.want) {
				t.Fatalf("%d panels, want %d: %+v", len(d.Panels), len(tt.want), d.Panels)
			}
			full := float64(plotBottom - plotTop)
			for i, want := range tt.want {
				got := d.Panels[i]
				var values []int64
				for _, bar := range got.Bars {
					values = append(values, bar.Value)
					if h := float64(bar.Value) / float64(tt.full[want.name]) * full; math.Abs(bar.Height-h) > 0.01 {
						t.Errorf("panel %d: bar of %d is %v tall, want %v (one scale for every print)", i, bar.Value, bar.Height, h)
					}
				}
				for _, pt := range got.Points {
					_, v, _ := strings.Cut(pt.Title, ": ")
					if n, err := strconv.ParseInt(v, 10, 64); err == nil {
						values = append(values, n)
					}
				}
				if got.Name != want.name || got.Print != want.print || !slices.Equal(values, want.values) {
					t.Errorf("panel %d: %s print %q values %v, want %s print %q values %v", i, got.Name, got.Print, values, want.name, want.print, want.values)
				}
			}
		})
	}
}
