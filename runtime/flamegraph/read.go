package flamegraph

import (
	"bytes"
	"cmp"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

// drawnFrame is a frame as a drawing holds it, read back.
type drawnFrame struct {
	name   string
	x, w   uint64
	depth  int
	title  string
	rectX  float64
	width  float64
	label  string
	parent *drawnFrame
}

// drawnSVG is the part of a drawing that Read needs.
type drawnSVG struct {
	XMLName xml.Name `xml:"svg"`
	Total   uint64   `xml:"data-total,attr"`
	Groups  []struct {
		Frames []struct {
			Name  string `xml:"data-n,attr"`
			X     uint64 `xml:"data-x,attr"`
			W     uint64 `xml:"data-w,attr"`
			D     int    `xml:"data-d,attr"`
			Title string `xml:"title"`
			Rect  struct {
				X     float64 `xml:"x,attr"`
				Width float64 `xml:"width,attr"`
			} `xml:"rect"`
			Text string `xml:"text"`
		} `xml:"g"`
	} `xml:"g"`
	Script string `xml:"script"`
}

// readFrames parses a drawing, an SVG file or the HTML page that holds
// one, and links each frame to its parent: the frame one level down
// whose range holds it.
func readFrames(r io.Reader) ([]*drawnFrame, *drawnSVG, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, nil, fmt.Errorf("read flame graph: %w", err)
	}
	start, end := bytes.Index(b, []byte("<svg")), bytes.LastIndex(b, []byte("</svg>"))
	if start < 0 || end < start {
		return nil, nil, errors.New("read flame graph: no svg element")
	}
	var doc drawnSVG
	if err := xml.Unmarshal(b[start:end+len("</svg>")], &doc); err != nil {
		return nil, nil, fmt.Errorf("read flame graph: %w", err)
	}
	var frames []*drawnFrame
	for _, g := range doc.Groups {
		for _, f := range g.Frames {
			frames = append(frames, &drawnFrame{name: f.Name, x: f.X, w: f.W, depth: f.D, title: f.Title, rectX: f.Rect.X, width: f.Rect.Width, label: f.Text})
		}
	}
	// By depth, then place: a frame's parent is among those of the
	// level before it, in order.
	slices.SortStableFunc(frames, func(a, b *drawnFrame) int {
		if a.depth != b.depth {
			return a.depth - b.depth
		}
		return cmp.Compare(a.x, b.x)
	})
	level := map[int][]*drawnFrame{}
	for _, f := range frames {
		level[f.depth] = append(level[f.depth], f)
		if f.depth == 0 {
			continue
		}
		below := level[f.depth-1]
		i, _ := slices.BinarySearchFunc(below, f.x, func(p *drawnFrame, x uint64) int { return cmp.Compare(p.x, x+1) })
		if i == 0 || below[i-1].x+below[i-1].w < f.x+f.w {
			return nil, nil, fmt.Errorf("read flame graph: frame %s at depth %d has no frame under it", f.name, f.depth)
		}
		f.parent = below[i-1]
	}
	return frames, &doc, nil
}

// Read reads the stacks back from a drawing that Write wrote (an SVG file or an HTML page): each frame's own weight (its weight less its children's) is a
// stack that ends there. The stacks come sorted by their frames, equal
// stacks added up, without the root frame "all".
func Read(r io.Reader) ([]Stack, error) {
	frames, _, err := readFrames(r)
	if err != nil {
		return nil, err
	}
	self := map[*drawnFrame]uint64{}
	for _, f := range frames {
		self[f] += f.w
		if f.parent != nil {
			self[f.parent] -= f.w
		}
	}
	weights := map[string]uint64{}
	for _, f := range frames {
		if self[f] == 0 || f.parent == nil {
			continue
		}
		var path []string
		for p := f; p.parent != nil; p = p.parent {
			path = append(path, p.name)
		}
		slices.Reverse(path)
		weights[strings.Join(path, "\x00")] += self[f]
	}
	stacks := make([]Stack, 0, len(weights))
	for path, w := range weights {
		stacks = append(stacks, Stack{Frames: strings.Split(path, "\x00"), Weight: w})
	}
	slices.SortFunc(stacks, func(a, b Stack) int { return slices.Compare(a.Frames, b.Frames) })
	return stacks, nil
}

// ReadFile reads the stacks back from the drawing in the named file, as
// Read does.
func ReadFile(name string) ([]Stack, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("read flame graph: %w", err)
	}
	defer f.Close()
	return Read(f)
}
