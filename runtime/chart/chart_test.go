package chart

import (
	"bytes"
	"encoding/xml"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/gotrace/gotrace/runtime/output"
)

// drawn is the part of a chart the tests read back.
type drawn struct {
	Panels []struct {
		Name string `xml:"data-name,attr"`
		Bars []struct {
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
