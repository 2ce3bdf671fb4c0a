package output

import (
	"reflect"
	"testing"
	"time"

	"github.com/gotrace/gotrace/codegen/layout"
)

// TestChartSeries checks that a chart's points are what text prints: the
// buckets from the first to the last that counted, with their labels, and
// a time series' intervals with the empty ones marked.
func TestChartSeries(t *testing.T) {
	hist := &Map{Name: "@h", Kind: layout.MapHist, Entries: []Entry{
		{Key: []Value{Str("b")}, Buckets: []uint64{0, 0, 0, 2, 0, 5}},
		{Key: []Value{Str("a")}, Buckets: []uint64{0, 1}},
	}}
	want := []Series{
		{Map: "@h", Key: "[a]", Points: []Point{{Label: "[0]", Value: 1, Bucket: 1}}},
		{Map: "@h", Key: "[b]", Points: []Point{{Label: "[2, 4)", Value: 2, Bucket: 3}, {Label: "[4, 8)", Value: 0, Bucket: 4}, {Label: "[8, 16)", Value: 5, Bucket: 5}}},
	}
	if got := ChartSeries(hist); !reflect.DeepEqual(got, want) {
		t.Errorf("hist: got %+v\nwant %+v", got, want)
	}

	ts := &Map{Name: "@t", Kind: layout.MapTseries, Tseries: layout.Tseries{Interval: int64(time.Second), Intervals: 3}, Entries: []Entry{
		{Intervals: []Interval{{Epoch: 100, Value: Int(4)}, {Epoch: 102, Value: Int(-1)}}},
	}}
	got := ChartSeries(ts)
	if len(got) != 1 || !got[0].Time || len(got[0].Points) != 3 {
		t.Fatalf("tseries: got %+v", got)
	}
	label := func(epoch int64) string { return time.Unix(epoch, 0).Format("15:04:05") }
	wantPoints := []Point{{Label: label(100), Value: 4, At: time.Unix(100, 0)}, {Label: label(101), Missing: true, At: time.Unix(101, 0)}, {Label: label(102), Value: -1, At: time.Unix(102, 0)}}
	if !reflect.DeepEqual(got[0].Points, wantPoints) {
		t.Errorf("tseries points %+v, want %+v", got[0].Points, wantPoints)
	}
	if ChartSeries(&Map{Name: "@c", Kind: layout.MapCount}) != nil {
		t.Errorf("a count map has series")
	}
}
