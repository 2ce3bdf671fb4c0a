package output

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/gotrace/gotrace/codegen/layout"
)

// FoldedStack is one line of the folded format that flame-graph tools
// read: the frames from the root (the outermost caller) to the leaf, and
// the stack's weight.
type FoldedStack struct {
	Frames []string
	Weight uint64
}

// String is the stack's folded line without its newline: the frames
// joined by ';', a blank, the weight.
func (s FoldedStack) String() string {
	return strings.Join(s.Frames, ";") + " " + strconv.FormatUint(s.Weight, 10)
}

// emptyStackFrame stands for a stack without frames (a kstack taken
// while the CPU ran user code): a folded line needs a frame.
const emptyStackFrame = "[no frames]"

// HasStackKey says whether m's key holds a ustack or kstack, the maps
// that -f folded and flame graphs fold.
func (m *Map) HasStackKey() bool {
	return slices.Contains(m.KeyStacks, true)
}

// FoldStacks returns the entries of m, a map with a stack in its key
// (HasStackKey), as folded stacks sorted by their frames. The key's
// elements become frames: a stack its frames from
// the root to the leaf, named without their "+offset" so that the calls
// of a function from one caller add up; any other element (comm, pid,
// a probe) one frame, as the text format prints it, below the stacks
// (keyFrames). A ';' in a frame
// becomes ':', as ';' separates frames. Entries whose frames are the
// same after that are added up.
//
// The weight is the value of count, sum, min and max maps and of maps of
// assigned integers, and for hist, lhist, avg and stats maps the number
// of values they were given (how often the stack was seen). A negative
// value, a value that is not an integer and a tseries map are errors:
// a flame graph has nothing to draw for them.
func FoldStacks(m *Map) ([]FoldedStack, error) {
	if m.Kind == layout.MapTseries {
		return nil, fmt.Errorf("fold %s: a tseries map has no weight per stack", m.Name)
	}
	weights := map[string]uint64{}
	var scratch Entry
	for i := range m.entryCount() {
		e := m.entry(i, &scratch)
		w, err := foldedWeight(m, e)
		if err != nil {
			return nil, err
		}
		weights[strings.Join(keyFrames(m, e.Key), ";")] += w
	}
	stacks := make([]FoldedStack, 0, len(weights))
	for line, w := range weights {
		stacks = append(stacks, FoldedStack{Frames: strings.Split(line, ";"), Weight: w})
	}
	slices.SortFunc(stacks, compareFrames)
	return stacks, nil
}

// keyFrames returns the frames of key, a key of m: its parts that are
// not stacks first, in the key's order, then its stacks' frames, each
// from its root to its leaf, in the key's order. The other parts (comm,
// pid, a probe) are roots, whatever their place in the key, because they
// group the stacks the way a flame graph is read: @[ustack, pid] and
// @[pid, ustack] draw a tower per process, not a pid above every leaf.
func keyFrames(m *Map, key []Value) []string {
	var roots, stacks []string
	for j, k := range key {
		if j < len(m.KeyStacks) && m.KeyStacks[j] {
			stacks = append(stacks, stackFrames(k.Str)...)
		} else {
			roots = append(roots, foldedFrame(string(appendText(nil, k))))
		}
	}
	return append(roots, stacks...)
}

// foldedWeight is entry e's weight in a flame graph (see FoldStacks).
func foldedWeight(m *Map, e *Entry) (uint64, error) {
	switch m.Kind {
	case layout.MapHist, layout.MapLhist:
		return e.bucketTotal(), nil
	case layout.MapAvg, layout.MapStats:
		return e.Count, nil
	}
	v := e.Value
	if v.Kind != ValueInt || v.Bool {
		return 0, fmt.Errorf("fold %s: its values are not counts: a flame graph needs integers", m.Name)
	}
	if v.Signed && int64(v.Bits) < 0 {
		return 0, fmt.Errorf("fold %s: %s has the negative value %d: a flame graph needs counts", m.Name, appendKeyText(nil, m.Name, e.Key, false), int64(v.Bits))
	}
	return v.Bits, nil
}

// stackFrames returns the frames of a stack as the runtime formats it
// (one frame a line, the leaf first; in perf mode a tab, the address and
// "sym+off (file)"), from the root to the leaf.
func stackFrames(text string) []string {
	var frames []string
	for line := range strings.SplitSeq(text, "\n") {
		perf := strings.HasPrefix(line, "\t")
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if perf {
			// "7f12 sym+off (file)": the name is between the
			// address and the file.
			_, line, _ = strings.Cut(line, " ")
			if i := strings.LastIndex(line, " ("); i > 0 && strings.HasSuffix(line, ")") {
				line = line[:i]
			}
		}
		frames = append(frames, foldedFrame(withoutOffset(line)))
	}
	if len(frames) == 0 {
		return []string{emptyStackFrame}
	}
	slices.Reverse(frames)
	return frames
}

// withoutOffset returns a frame "sym+123" as "sym"; an address without a
// symbol (0x7f12) stays as it is.
func withoutOffset(frame string) string {
	i := strings.LastIndexByte(frame, '+')
	if i <= 0 {
		return frame
	}
	if _, err := strconv.ParseUint(frame[i+1:], 0, 64); err != nil {
		return frame
	}
	return frame[:i]
}

// foldedFrame makes s one frame of a folded line: ';' separates frames,
// and a newline would end the line.
func foldedFrame(s string) string {
	s = strings.ReplaceAll(s, ";", ":")
	return strings.ReplaceAll(s, "\n", " ")
}

// appendMapFolded appends m's stacks in the folded format, a line each,
// sorted by their frames. top keeps the top stacks of the largest
// weights, div divides the weights, as print(@m, top, div) does for
// text.
func appendMapFolded(b []byte, m *Map, top, div uint64) ([]byte, error) {
	stacks, err := FoldStacks(m)
	if err != nil {
		return b, err
	}
	if top > 0 && top < uint64(len(stacks)) {
		// The heaviest top stacks, printed in the order of their frames.
		slices.SortStableFunc(stacks, func(a, b FoldedStack) int { return cmp.Compare(b.Weight, a.Weight) })
		stacks = stacks[:top]
		slices.SortFunc(stacks, compareFrames)
	}
	for _, s := range stacks {
		if div > 1 {
			s.Weight /= div
		}
		b = append(b, s.String()...)
		b = append(b, '\n')
	}
	return b, nil
}

// compareFrames orders folded stacks by their frames.
func compareFrames(a, b FoldedStack) int { return slices.Compare(a.Frames, b.Frames) }
