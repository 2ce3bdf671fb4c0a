package flamegraph

import (
	"bytes"
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gotrace/gotrace/internal/golden"
)

var testStacks = []Stack{
	{Frames: []string{"main", "run", "ConnectBlock", "CheckInputScripts"}, Weight: 312},
	{Frames: []string{"main", "run", "ConnectBlock"}, Weight: 40},
	{Frames: []string{"main", "run", "FlushStateToDisk"}, Weight: 17},
	{Frames: []string{"main", "idle"}, Weight: 3},
	{Frames: []string{"start_thread", "ThreadMessageHandler", "ProcessMessages"}, Weight: 120},
	{Frames: []string{"start_thread", "ThreadMessageHandler", "ProcessMessages"}, Weight: 8},
	{Frames: []string{"<lambda>&\"x\""}, Weight: 1},
	{Frames: []string{"never"}, Weight: 0},
}

// TestSVG draws stacks and reads the SVG back: every stack is there with
// its weight, each frame is as wide as its share, the labels fit.
func TestSVG(t *testing.T) {
	var b bytes.Buffer
	if err := Write(&b, testStacks, Options{Title: "test"}); err != nil {
		t.Fatal(err)
	}
	frames, doc, err := readFrames(bytes.NewReader(b.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	total := doc.Total
	want := map[string]uint64{}
	var sum uint64
	for _, s := range testStacks {
		if s.Weight > 0 {
			want[strings.Join(s.Frames, ";")] += s.Weight
			sum += s.Weight
		}
	}
	if total != sum {
		t.Errorf("total %d, want %d", total, sum)
	}
	stacks, err := Read(bytes.NewReader(b.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]uint64{}
	for _, s := range stacks {
		got[strings.Join(s.Frames, ";")] = s.Weight
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("stack %q: weight %d, want %d", k, got[k], w)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("stack %q drawn, not given", k)
		}
	}
	for _, f := range frames {
		wantWidth := float64(f.w) / float64(total) * plotWidth
		if math.Abs(f.width-wantWidth) > 0.01 {
			t.Errorf("%s: width %v, want %v (%d of %d)", f.name, f.width, wantWidth, f.w, total)
		}
		wantX := sidePad + float64(f.x)/float64(total)*plotWidth
		if math.Abs(f.rectX-wantX) > 0.01 {
			t.Errorf("%s: x %v, want %v", f.name, f.rectX, wantX)
		}
		if f.label != "" && !strings.HasPrefix(f.name, strings.TrimSuffix(f.label, "..")) {
			t.Errorf("%s: label %q", f.name, f.label)
		}
		if float64(len([]rune(f.label))*charWidth) > f.width {
			t.Errorf("%s: label %q wider than its frame (%v)", f.name, f.label, f.width)
		}
		wantTitle := f.name + " (" + strconv.FormatUint(f.w, 10) + " samples, " + percent(f.w, total) + "%)"
		if f.title != wantTitle {
			t.Errorf("title %q, want %q", f.title, wantTitle)
		}
	}
	if !strings.Contains(doc.Script, "function search(") {
		t.Errorf("the script is missing")
	}
	for _, external := range []string{"http://", "https://", "src=", "href="} {
		if strings.Contains(strings.ReplaceAll(b.String(), `xmlns="http://www.w3.org/2000/svg"`, ""), external) {
			t.Errorf("the SVG refers to something outside it: %q", external)
		}
	}
}

// TestHTML checks that the page holds the same drawing.
func TestHTML(t *testing.T) {
	var svg, page bytes.Buffer
	if err := Write(&svg, testStacks, Options{}); err != nil {
		t.Fatal(err)
	}
	if err := Write(&page, testStacks, Options{HTML: true}); err != nil {
		t.Fatal(err)
	}
	drawing := strings.TrimPrefix(svg.String(), "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n")
	if !strings.Contains(page.String(), drawing) || !strings.HasPrefix(page.String(), "<!DOCTYPE html>") {
		t.Errorf("the page does not hold the drawing:\n%s", page.String())
	}
	fromSVG, err := Read(&svg)
	if err != nil {
		t.Fatal(err)
	}
	fromPage, err := Read(&page)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.EqualFunc(fromSVG, fromPage, func(a, b Stack) bool { return a.Weight == b.Weight && slices.Equal(a.Frames, b.Frames) }) {
		t.Errorf("the page's stacks %v differ from the SVG's %v", fromPage, fromSVG)
	}
}

// TestGolden keeps the output byte for byte: the same stacks give the
// same file, in any order. -update rewrites testdata/golden.svg.
func TestGolden(t *testing.T) {
	shuffled := slices.Clone(testStacks)
	slices.Reverse(shuffled)
	var a, b bytes.Buffer
	if err := Write(&a, testStacks, Options{Title: "golden"}); err != nil {
		t.Fatal(err)
	}
	if err := Write(&b, shuffled, Options{Title: "golden"}); err != nil {
		t.Fatal(err)
	}
	if a.String() != b.String() {
		t.Errorf("the order of the stacks changes the drawing")
	}
	golden.Compare(t, "testdata/golden.svg", a.Bytes())
}

// TestEmpty checks that nothing to draw is an error, not an empty image.
func TestEmpty(t *testing.T) {
	for _, stacks := range [][]Stack{nil, {{Frames: []string{"f"}}}} {
		var b bytes.Buffer
		if err := Write(&b, stacks, Options{}); !errors.Is(err, ErrEmpty) {
			t.Errorf("%v: error %v, want ErrEmpty", stacks, err)
		}
	}
}

// TestLabel checks how names are cut to fit their frames.
func TestLabel(t *testing.T) {
	tests := []struct {
		name  string
		width float64
		want  string
	}{
		{"main", 100, "main"},
		{"ConnectBlock", 50, "Conn.."},
		{"main", 20, ""},
		{"ünïcödé", 48, "ünïc.."},
	}
	for _, tt := range tests {
		if got := label(tt.name, tt.width); got != tt.want {
			t.Errorf("label(%q, %v) = %q, want %q", tt.name, tt.width, got, tt.want)
		}
	}
}
