// Package flamegraph draws flame graphs: from stacks and their weights it
// writes a self-contained, interactive SVG (or an HTML page holding it)
// with search, click to zoom and tooltips, through a small script of its
// own: no external file, no network. The output is a function of the
// stacks alone (frames in name order, colours from a hash of the name),
// so the same stacks always give the same bytes.
//
// The drawing: the root at the bottom, a frame per function on each
// path, as wide as its weight's share of the total; children sit above
// their parent, left to right in name order.
package flamegraph

import (
	"bufio"
	_ "embed"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/gotrace/gotrace/internal/svg"
)

// Stack is one stack: its frames from the root to the leaf and its
// weight (a count of samples or hits).
type Stack struct {
	Frames []string
	Weight uint64
}

// Options say what the drawing is of.
type Options struct {
	// Title heads the drawing; "Flame Graph" when empty.
	Title string
	// Unit names what the weights count, in tooltips: "samples" when
	// empty.
	Unit string
	// HTML writes an HTML page holding the drawing, not an SVG file.
	HTML bool
}

// The drawing's geometry, in SVG user units (pixels at 100%).
const (
	imageWidth  = 1200
	sidePad     = 10
	plotWidth   = imageWidth - 2*sidePad
	frameHeight = 16
	topPad      = 40
	bottomPad   = 30
	// charWidth is the width the labels are cut to fit by: Verdana at
	// 12 px averages a little under 7.
	charWidth = 7
	// titleWidth is the width the title is cut to fit by, between the
	// buttons; its font is larger, so it fits fewer characters than
	// charWidth says.
	titleWidth = (imageWidth - 2*150) * 7 / 10
	// rootName is the frame under every stack, as wide as the total.
	rootName = "all"
)

//go:embed flamegraph.js
var script string

// ErrEmpty says there was nothing to draw: no stack, or only stacks of
// weight 0.
var ErrEmpty = errors.New("no stack to draw")

// node is a frame of the merged tree: a path from the root.
type node struct {
	name     string
	weight   uint64
	children []*node
}

// child returns n's child named name, adding it.
func (n *node) child(name string) *node {
	i, found := slices.BinarySearchFunc(n.children, name, func(c *node, name string) int { return strings.Compare(c.name, name) })
	if !found {
		n.children = slices.Insert(n.children, i, &node{name: name})
	}
	return n.children[i]
}

// merge builds the tree of stacks: equal paths add up.
func merge(stacks []Stack) *node {
	root := &node{name: rootName}
	for _, s := range stacks {
		if s.Weight == 0 {
			continue
		}
		root.weight += s.Weight
		n := root
		for _, f := range s.Frames {
			n = n.child(f)
			n.weight += s.Weight
		}
	}
	return root
}

// depth is the number of levels of the tree under n, n's included.
func depth(n *node) int {
	d := 0
	for _, c := range n.children {
		d = max(d, depth(c))
	}
	return d + 1
}

// Write writes the flame graph of stacks: an SVG file, or with
// opts.HTML an HTML page that holds the SVG, for places that serve pages
// rather than images.
func Write(w io.Writer, stacks []Stack, opts Options) error {
	return svg.WriteDocument(w, opts.HTML, title(opts), func(w *bufio.Writer) error { return writeSVG(w, stacks, opts) })
}

// title is the drawing's title.
func title(opts Options) string {
	if opts.Title == "" {
		return "Flame Graph"
	}
	return opts.Title
}

// writeSVG writes the svg element.
func writeSVG(w *bufio.Writer, stacks []Stack, opts Options) error {
	root := merge(stacks)
	if root.weight == 0 {
		return ErrEmpty
	}
	unit := opts.Unit
	if unit == "" {
		unit = "samples"
	}
	levels := depth(root)
	height := topPad + levels*frameHeight + bottomPad
	fmt.Fprintf(w, "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" id=\"fg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" data-total=\"%d\" data-unit=\"%s\" data-pad=\"%d\" data-plot=\"%d\" data-char=\"%d\">\n",
		imageWidth, height, imageWidth, height, root.weight, svg.Escape(unit), sidePad, plotWidth, charWidth)
	w.WriteString(style)
	fmt.Fprintf(w, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#f8f8f4\"/>\n", imageWidth, height)
	fmt.Fprintf(w, "<text id=\"fg-title\" x=\"%d\" y=\"24\" text-anchor=\"middle\">%s</text>\n", imageWidth/2, svg.Escape(label(title(opts), titleWidth)))
	fmt.Fprintf(w, "<text id=\"fg-reset\" class=\"fg-button\" x=\"%d\" y=\"24\">Reset zoom</text>\n", sidePad)
	fmt.Fprintf(w, "<text id=\"fg-search\" class=\"fg-button\" x=\"%d\" y=\"24\" text-anchor=\"end\">Search</text>\n", imageWidth-sidePad)
	fmt.Fprintf(w, "<text id=\"fg-details\" x=\"%d\" y=\"%d\"> </text>\n", sidePad, height-10)
	fmt.Fprintf(w, "<text id=\"fg-matched\" x=\"%d\" y=\"%d\" text-anchor=\"end\"> </text>\n", imageWidth-sidePad, height-10)
	w.WriteString("<g id=\"fg-frames\">\n")
	writeFrames(w, root, 0, 0, root.weight, unit, height-bottomPad)
	w.WriteString("</g>\n")
	// Last, so that the frames exist when it runs.
	w.WriteString("<script><![CDATA[\n")
	w.WriteString(script)
	w.WriteString("]]></script>\n</svg>\n")
	return nil
}

// style is the drawing's stylesheet.
const style = `<style>
#fg { font-family: Verdana, sans-serif; font-size: 12px; }
#fg-title { font-size: 17px; }
.fg-button { cursor: pointer; fill: #333366; text-decoration: underline; }
.fg-f { cursor: pointer; }
.fg-f text { pointer-events: none; fill: #000000; }
.fg-f:hover rect { stroke: #000000; stroke-width: 0.5; }
.fg-above rect { opacity: 0.5; }
</style>
`

// writeFrames writes n at depth d, starting at weight offset x, then its
// children above it; base is the y where the root's frame ends.
func writeFrames(w *bufio.Writer, n *node, d int, x, total uint64, unit string, base int) {
	width := float64(n.weight) / float64(total) * plotWidth
	left := sidePad + float64(x)/float64(total)*plotWidth
	y := base - (d+1)*frameHeight
	name := svg.Escape(n.name)
	fmt.Fprintf(w, "<g class=\"fg-f\" data-n=\"%s\" data-x=\"%d\" data-w=\"%d\" data-d=\"%d\"><title>%s (%d %s, %s%%)</title>", name, x, n.weight, d, name, n.weight, svg.Escape(unit), percent(n.weight, total))
	fmt.Fprintf(w, "<rect x=\"%s\" y=\"%d\" width=\"%s\" height=\"%d\" rx=\"2\" fill=\"%s\" data-fill=\"%s\"/>", svg.Coord(left), y, svg.Coord(width), frameHeight-1, colour(n.name), colour(n.name))
	fmt.Fprintf(w, "<text x=\"%s\" y=\"%d\">%s</text></g>\n", svg.Coord(left+3), y+frameHeight-4, svg.Escape(label(n.name, width)))
	for _, c := range n.children {
		writeFrames(w, c, d+1, x, total, unit, base)
		x += c.weight
	}
}

// label is name cut to fit a frame width wide: whole, cut with "..", or
// nothing when not even three characters fit. flamegraph.js cuts so too
// after a zoom.
func label(name string, width float64) string {
	return svg.Cut(name, int((width-6)/charWidth))
}

// percent is w's share of total with two decimals.
func percent(w, total uint64) string {
	return strconv.FormatFloat(float64(w)*100/float64(total), 'f', 2, 64)
}

// colour is a warm colour chosen by a hash of name, so that a function
// has the same colour in every drawing.
func colour(name string) string {
	h := fnv.New32a()
	h.Write([]byte(name))
	v := h.Sum32()
	r := 205 + v%50
	g := (v >> 8) % 190
	b := (v >> 16) % 55
	return fmt.Sprintf("rgb(%d,%d,%d)", r, g, b)
}
