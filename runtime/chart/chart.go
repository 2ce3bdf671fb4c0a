// Package chart draws the histograms (hist, lhist) and time series
// (tseries) of a trace as SVG: a panel per map entry, a bar per bucket
// or a line through the intervals, each with a tooltip of its value; and
// the maps a trace printed more than once over their prints (Prints). It
// is a static picture (no script), deterministic, self-contained.
package chart

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/gotrace/gotrace/internal/svg"
	"github.com/gotrace/gotrace/runtime/output"
)

// The geometry of a panel, in SVG user units (pixels at 100%).
const (
	imageWidth  = 1200
	titleHeight = 40
	panelHeight = 300
	// The plot within a panel: room on the left for the axis's
	// numbers, below for the labels.
	plotLeft   = 90
	plotRight  = imageWidth - 20
	plotTop    = 30
	plotBottom = panelHeight - 80
	// maxLabels is the most labels under a plot.
	maxLabels = 30
	// maxBar is the widest a bar gets: a histogram of two buckets
	// shows bars, not walls.
	maxBar = 80
	// titleChars is where the title is cut.
	titleChars = 110
)

// ErrEmpty says there was nothing to draw.
var ErrEmpty = errors.New("no histogram or time series to draw")

// Options say what the drawing is of and how it is written.
type Options struct {
	// Title heads the drawing.
	Title string
	// HTML writes an HTML page holding the drawing, not an SVG file.
	HTML bool
}

// Write draws series (from output.ChartSeries) as an SVG file, or an
// HTML page holding it, a panel each in the order given.
func Write(w io.Writer, series []output.Series, opts Options) error {
	return write(w, opts.HTML, series, opts.Title)
}

// write draws series as an SVG file or an HTML page.
func write(w io.Writer, html bool, series []output.Series, title string) error {
	if len(series) == 0 {
		return ErrEmpty
	}
	return svg.WriteDocument(w, html, title, func(w *bufio.Writer) error {
		height := titleHeight + len(series)*panelHeight
		fmt.Fprintf(w, "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" font-family=\"Verdana, sans-serif\" font-size=\"11\">\n", imageWidth, height, imageWidth, height)
		fmt.Fprintf(w, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#ffffff\"/>\n", imageWidth, height)
		fmt.Fprintf(w, "<text x=\"%d\" y=\"26\" text-anchor=\"middle\" font-size=\"17\">%s</text>\n", imageWidth/2, svg.Escape(svg.Cut(title, titleChars)))
		scales := sharedScales(series)
		for i, s := range series {
			writePanel(w, s, scales[s.Map+s.Key], titleHeight+i*panelHeight)
		}
		w.WriteString("</svg>\n")
		return nil
	})
}

// scale is the range of values a plot spans.
type scale struct{ lo, hi int64 }

// sharedScales returns the scale of each entry drawn print by print
// (Series.Prints), by map name and key: the range of all its prints, so
// that the panels of the prints of one entry compare by eye.
func sharedScales(series []output.Series) map[string]scale {
	scales := map[string]scale{}
	for _, s := range series {
		if s.Prints == 0 {
			continue
		}
		lo, hi := valueRange(s)
		if sc, ok := scales[s.Map+s.Key]; ok {
			lo, hi = min(lo, sc.lo), max(hi, sc.hi)
		}
		scales[s.Map+s.Key] = scale{lo, hi}
	}
	return scales
}

// writePanel draws one series in the panel that starts at top, on scale
// sc when it is set, else on the range of its own values.
func writePanel(w *bufio.Writer, s output.Series, sc scale, top int) {
	name := s.Map + s.Key
	if s.Prints > 0 {
		name += fmt.Sprintf(" (print %d of %d)", s.Print, s.Prints)
		fmt.Fprintf(w, "<g class=\"panel\" data-name=\"%s\" data-print=\"%d\" transform=\"translate(0,%d)\">\n", svg.Escape(s.Map+s.Key), s.Print, top)
	} else {
		fmt.Fprintf(w, "<g class=\"panel\" data-name=\"%s\" transform=\"translate(0,%d)\">\n", svg.Escape(s.Map+s.Key), top)
	}
	fmt.Fprintf(w, "<text x=\"%d\" y=\"16\" font-size=\"13\" font-weight=\"bold\">%s</text>\n", plotLeft, svg.Escape(name))
	if len(s.Points) == 0 {
		fmt.Fprintf(w, "<text x=\"%d\" y=\"%d\">no data</text>\n</g>\n", plotLeft, (plotTop+plotBottom)/2)
		return
	}
	lo, hi := sc.lo, sc.hi
	if lo == hi {
		lo, hi = valueRange(s)
	}
	y := func(v int64) float64 {
		return plotBottom - float64(v-lo)/float64(hi-lo)*(plotBottom-plotTop)
	}
	// The axis: lines at the bottom and at the lowest, zero and highest
	// values, with their numbers.
	fmt.Fprintf(w, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#000000\"/>\n", plotLeft, plotTop, plotLeft, plotBottom)
	for _, v := range gridValues(lo, hi) {
		fmt.Fprintf(w, "<line x1=\"%d\" y1=\"%s\" x2=\"%d\" y2=\"%s\" stroke=\"#dddddd\"/>", plotLeft, svg.Coord(y(v)), plotRight, svg.Coord(y(v)))
		fmt.Fprintf(w, "<text x=\"%d\" y=\"%s\" text-anchor=\"end\">%d</text>\n", plotLeft-6, svg.Coord(y(v)+4), v)
	}
	slot := float64(plotRight-plotLeft) / float64(len(s.Points))
	every := (len(s.Points) + maxLabels - 1) / maxLabels
	var line []string
	for i, p := range s.Points {
		mid := plotLeft + (float64(i)+0.5)*slot
		tip := svg.Escape(p.Label) + ": " + strconv.FormatInt(p.Value, 10)
		switch {
		case p.Missing:
			tip = svg.Escape(p.Label) + ": no value"
			line = flush(w, line)
		case s.Time:
			line = append(line, svg.Coord(mid)+","+svg.Coord(y(p.Value)))
			fmt.Fprintf(w, "<circle cx=\"%s\" cy=\"%s\" r=\"3\" fill=\"#1f5fa8\"><title>%s</title></circle>\n", svg.Coord(mid), svg.Coord(y(p.Value)), tip)
		default:
			top, bottom := y(max(p.Value, 0)), y(min(p.Value, 0))
			width := min(slot*0.8, maxBar)
			fmt.Fprintf(w, "<rect class=\"bar\" x=\"%s\" y=\"%s\" width=\"%s\" height=\"%s\" fill=\"#d9662a\" data-value=\"%d\"><title>%s</title></rect>\n",
				svg.Coord(mid-width/2), svg.Coord(top), svg.Coord(width), svg.Coord(bottom-top), p.Value, tip)
		}
		if i%every == 0 {
			fmt.Fprintf(w, "<text x=\"%s\" y=\"%d\" text-anchor=\"end\" transform=\"rotate(-40 %s %d)\">%s</text>\n", svg.Coord(mid), plotBottom+14, svg.Coord(mid), plotBottom+14, svg.Escape(p.Label))
		}
	}
	flush(w, line)
	w.WriteString("</g>\n")
}

// flush draws the line through points, if it has two, and returns points
// emptied: an interval without a value breaks a time series' line.
func flush(w *bufio.Writer, points []string) []string {
	if len(points) > 1 {
		fmt.Fprintf(w, "<polyline points=\"%s\" fill=\"none\" stroke=\"#1f5fa8\" stroke-width=\"1.5\"/>\n", strings.Join(points, " "))
	}
	return points[:0]
}

// valueRange is the range of values the plot spans: the series' values
// and zero, never empty.
func valueRange(s output.Series) (lo, hi int64) {
	for _, p := range s.Points {
		if !p.Missing {
			lo, hi = min(lo, p.Value), max(hi, p.Value)
		}
	}
	if lo == hi {
		hi = lo + 1
	}
	return lo, hi
}

// gridValues are the values the axis is numbered at: the lowest, zero
// and the highest, each once.
func gridValues(lo, hi int64) []int64 {
	vs := []int64{lo}
	if lo < 0 && hi > 0 {
		vs = append(vs, 0)
	}
	return append(vs, hi)
}
