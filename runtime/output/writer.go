package output

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/gotrace/gotrace/codegen/layout"
	"github.com/gotrace/gotrace/internal/printf"
)

// Format is an output format: bpftrace's -f option.
type Format int

// The output formats.
const (
	// Text is bpftrace's default human-readable output.
	Text Format = iota
	// JSON is bpftrace's -f json: one JSON object per line.
	JSON
	// Folded prints maps keyed by a stack in the folded format of
	// flame-graph tools (FoldStacks), a line per stack, and everything
	// else as Text, except "Attaching N probes...", which it leaves out.
	Folded
)

// ParseFormat returns the Format named by -f: "text", "json" or "folded".
func ParseFormat(name string) (Format, error) {
	switch name {
	case "text":
		return Text, nil
	case "json":
		return JSON, nil
	case "folded":
		return Folded, nil
	}
	return Text, fmt.Errorf("parse output format %q: want text, json or folded", name)
}

// Message names the kind of text a Writer.Message call prints; in JSON it
// is the object's "type".
type Message string

// The messages other than printf that carry text made by the runtime.
const (
	MessageTime    Message = "time"    // time()
	MessageCat     Message = "cat"     // cat()
	MessageSyscall Message = "syscall" // system()'s command output
	MessageJoin    Message = "join"    // join()
)

// Writer prints a program's output to an io.Writer in one Format. Every
// Write it makes holds whole lines, so that another writer of the same
// file (a traced command's own output) never lands inside a line. By
// default every call makes one Write; see Hold. A Writer is not safe for
// concurrent use.
type Writer struct {
	w      io.Writer
	format Format
	buf    []byte
	text   []byte // printf's text, before JSON quotes it
	hold   int    // see Hold
	divert func(m *Map) bool
	// newer prints values as current bpftrace does (SetNewer).
	newer bool
}

// SetNewer has print() values printed as current bpftrace prints them
// where it differs from 0.17: a record in JSON as {"a": 1} (0.17:
// { "a": 1 }).
func (w *Writer) SetNewer(newer bool) { w.newer = newer }

// NewWriter returns a Writer printing to w in format f.
func NewWriter(w io.Writer, f Format) *Writer {
	return &Writer{w: w, format: f}
}

// Hold makes the Writer keep its output until it holds n bytes or Flush is
// called: a burst of lines then costs one Write, not one per line.
func (w *Writer) Hold(n int) {
	w.hold = n
}

// flush ends each call: it writes the output unless Hold says to keep it.
func (w *Writer) flush() error {
	if len(w.buf) < w.hold {
		return nil
	}
	return w.Flush()
}

// Flush writes the output the Writer holds.
func (w *Writer) Flush() error {
	if len(w.buf) == 0 {
		return nil
	}
	_, err := w.w.Write(w.buf)
	w.buf = w.buf[:0]
	if err != nil {
		return fmt.Errorf("write output: %w", err)
	}
	return nil
}

// AttachedProbes prints "Attaching N probes..." (text) or the
// attached_probes object (JSON), as bpftrace 0.17 does; with newer, as
// bpftrace 0.24 does: in JSON the object has a "count" too, and text has
// nothing here but AttachedNotice on standard error.
func (w *Writer) AttachedProbes(n int, newer bool) error {
	if w.format == JSON {
		count := ""
		if newer {
			count = fmt.Sprintf(" \"count\": %d,", n)
		}
		w.buf = fmt.Appendf(w.buf, "{\"type\": \"attached_probes\",%s \"data\": {\"probes\": %d}}\n", count, n)
	} else if newer || w.format == Folded {
		return nil
	} else if n == 1 {
		w.buf = append(w.buf, "Attaching 1 probe...\n"...)
	} else {
		w.buf = fmt.Appendf(w.buf, "Attaching %d probes...\n", n)
	}
	return w.flush()
}

// AttachedNotice is bpftrace 0.24's line for n probes attached, which it
// prints on standard error in text mode: "Attached 1 probe", "Attached 2
// probes".
func AttachedNotice(n int) string {
	if n == 1 {
		return "Attached 1 probe\n"
	}
	return fmt.Sprintf("Attached %d probes\n", n)
}

// LostEvents prints "Lost N events" (text) or the lost_events object
// (JSON).
func (w *Writer) LostEvents(n uint64) error {
	if w.format == JSON {
		w.buf = fmt.Appendf(w.buf, "{\"type\": \"lost_events\", \"data\": {\"events\": %d}}\n", n)
	} else {
		w.buf = fmt.Appendf(w.buf, "Lost %d events\n", n)
	}
	return w.flush()
}

// Printf prints one printf record: parts from printf.Parse, args
// decoded from the record (see AppendPrintf). In JSON the text becomes a
// printf object's data. On an error nothing is printed.
func (w *Writer) Printf(parts []printf.Part, args []Value) error {
	if w.format == JSON {
		var err error
		w.text, err = AppendPrintf(w.text[:0], parts, args)
		if err != nil {
			return err
		}
		w.buf = append(w.buf, "{\"type\": \"printf\", \"data\": "...)
		w.buf = appendJSONString(w.buf, w.text)
		w.buf = append(w.buf, "}\n"...)
		return w.flush()
	}
	start := len(w.buf)
	var err error
	w.buf, err = AppendPrintf(w.buf, parts, args)
	if err != nil {
		w.buf = w.buf[:start]
		return err
	}
	return w.flush()
}

// Message prints text the runtime produced for time(), cat(), system() or
// join(): as it is in text, as a JSON object of type kind in JSON. text is
// what text mode prints; for join that ends in a newline, which bpftrace
// leaves out of the JSON data.
func (w *Writer) Message(kind Message, text string) error {
	if w.format == JSON {
		if kind == MessageJoin {
			text = strings.TrimSuffix(text, "\n")
		}
		w.buf = append(w.buf, "{\"type\": \""...)
		w.buf = append(w.buf, kind...)
		w.buf = append(w.buf, "\", \"data\": "...)
		w.buf = appendJSONString(w.buf, text)
		w.buf = append(w.buf, "}\n"...)
	} else {
		w.buf = append(w.buf, text...)
	}
	return w.flush()
}

// Value prints print(expr) of a non-map value: "5", "abc", "(1, abc)" on
// a line, or a JSON value object.
func (w *Writer) Value(v Value) error {
	if w.format == JSON {
		w.buf = append(w.buf, "{\"type\": \"value\", \"data\": "...)
		w.buf = appendJSON(w.buf, v, w.newer)
		w.buf = append(w.buf, "}\n"...)
	} else {
		w.buf = appendText(w.buf, v)
		w.buf = append(w.buf, '\n')
	}
	return w.flush()
}

// Map prints print(@m, top, div): the top entries with the largest values
// (all when top is 0), with values divided by div (integer division; 0 or
// 1 divide nothing). Like bpftrace 0.17, stats maps ignore top and div,
// avg maps divide their averages and hist maps their bucket counts;
// tseries maps ignore them too, as in bpftrace.
func (w *Writer) Map(m *Map, top, div uint64) error {
	if m.Kind == layout.MapStats || m.Kind == layout.MapTseries {
		top, div = 0, 0
	}
	if w.divert != nil && w.divert(m) {
		return nil
	}
	if w.format == Folded && m.HasStackKey() {
		return w.appendFolded(m, top, div)
	}
	es := topEntries(sortedEntries(m), top)
	if w.format == JSON {
		w.appendMapJSON(m, es, div)
	} else {
		w.appendMapText(m, es, div)
	}
	return w.flush()
}

// appendFolded prints m's stacks in the folded format; on an error
// nothing of m is printed.
func (w *Writer) appendFolded(m *Map, top, div uint64) error {
	b, err := appendMapFolded(w.buf, m, top, div)
	if err != nil {
		return err
	}
	w.buf = b
	return w.flush()
}

// Divert gives every map that Map, Maps and Exit would print to take
// first: a map it takes (returns true for) is not printed. The flame
// graph and chart commands collect their maps so.
func (w *Writer) Divert(take func(m *Map) bool) {
	w.divert = take
}

// Exit prints the maps at the end of tracing: bpftrace's two newlines
// (in JSON too, not in the folded format, which tools read line by
// line), then the maps as Maps prints them.
func (w *Writer) Exit(maps []*Map) error {
	if w.format != Folded {
		w.buf = append(w.buf, "\n\n"...)
	}
	return w.Maps(maps)
}

// Maps prints every map sorted by name as Map prints them, as bpftrace
// does on SIGUSR1 and, after two newlines, at exit.
func (w *Writer) Maps(maps []*Map) error {
	sorted := slices.Clone(maps)
	slices.SortFunc(sorted, func(a, b *Map) int { return strings.Compare(a.Name, b.Name) })
	var errs []error
	for _, m := range sorted {
		if w.divert != nil && w.divert(m) {
			continue
		}
		if w.format == Folded && m.HasStackKey() {
			errs = append(errs, w.appendFolded(m, 0, 0))
			continue
		}
		es := sortedEntries(m)
		if w.format == JSON {
			w.appendMapJSON(m, es, 0)
		} else {
			w.appendMapText(m, es, 0)
		}
	}
	return errors.Join(append(errs, w.flush())...)
}

// appendKeyText appends "@name[k1, k2]" (or "@name" without keys). A
// struct in a key prints as bpftrace 0.17 prints it there, {.m=2,.n=3}
// (appendKeyElem; in JSON keys too), unless newer, as current bpftrace
// does, { .m = 2, .n = 3 }.
func appendKeyText(b []byte, name string, key []Value, newer bool) []byte {
	b = append(b, name...)
	if len(key) == 0 {
		return b
	}
	b = append(b, '[')
	for i, k := range key {
		if i > 0 {
			b = append(b, ", "...)
		}
		if newer {
			b = appendText(b, k)
		} else {
			b = appendKeyElem(b, k)
		}
	}
	return append(b, ']')
}

// appendKeyElem appends v, an element of a map key, as bpftrace 0.17
// prints it: a record (a struct) without blanks, {.m=2,.n={.a=1}}.
func appendKeyElem(b []byte, v Value) []byte {
	if v.Kind != ValueTuple || v.Names == nil || v.Array {
		return appendText(b, v)
	}
	return appendElems(b, v, "{", ",", "}", func(b []byte, name string) []byte {
		return append(append(append(b, '.'), name...), '=')
	}, appendKeyElem)
}

// appendMapText prints entries es of m as text. Like bpftrace 0.17, an
// empty map prints an empty line, each hist is followed by an empty line,
// and so is a whole avg or stats map (not with Map.Newer).
func (w *Writer) appendMapText(m *Map, es *sortedList, div uint64) {
	b := w.buf
	if es.len() == 0 {
		b = append(b, '\n')
	}
	first, last := tseriesEpochs(m)
	for i := range es.len() {
		e := es.at(i)
		b = appendKeyText(b, m.Name, e.Key, m.Newer)
		if m.Kind == layout.MapTseries {
			// A chart of the intervals all entries share, then an empty
			// line, as bpftrace prints it.
			b = append(b, ":\n"...)
			b = appendTseriesText(b, tseriesPoints(m, e, first, last))
			b = append(b, '\n')
			continue
		}
		b = append(b, ": "...)
		switch m.Kind {
		case layout.MapHist, layout.MapLhist:
			b = append(b, '\n')
			b = appendHistText(b, histBuckets(m, e, div))
			b = append(b, '\n')
			continue
		case layout.MapStats:
			format := "count %d, average %d, total %d"
			if m.Newer {
				format = "{ .count = %d, .average = %d, .total = %d }"
			}
			b = fmt.Appendf(b, format, e.Count, e.average(), e.Total)
		case layout.MapAvg:
			b = appendInt(b, divide(Int(e.average()), div))
		default:
			b = appendText(b, divide(e.Value, div))
		}
		b = append(b, '\n')
	}
	if (m.Kind == layout.MapAvg || m.Kind == layout.MapStats) && !m.Newer {
		b = append(b, '\n')
	}
	w.buf = b
}

// histBarWidth is the width of the widest bar of a histogram.
const histBarWidth = 52

// appendHistText appends a histogram's bucket lines: the label left in 16
// columns, the count right in 8, and a bar of @ scaled so that the largest
// bucket fills histBarWidth columns.
func appendHistText(b []byte, bs []bucket) []byte {
	var most uint64
	for _, bk := range bs {
		most = max(most, bk.raw)
	}
	for _, bk := range bs {
		b = append(b, bk.label...)
		b = appendRepeat(b, ' ', 16-len(bk.label))
		count := strconv.FormatUint(bk.count, 10)
		b = appendRepeat(b, ' ', 8-len(count))
		b = append(b, count...)
		b = append(b, " |"...)
		bar := 0
		if most > 0 {
			bar = int(mulDiv(bk.raw, histBarWidth, most))
		}
		b = appendRepeat(b, '@', bar)
		b = appendRepeat(b, ' ', histBarWidth-bar)
		b = append(b, "|\n"...)
	}
	return b
}

// mulDiv returns a*m/d for a <= d without overflowing.
func mulDiv(a, m, d uint64) uint64 {
	if a <= ^uint64(0)/m {
		return a * m / d
	}
	return uint64(float64(a) / float64(d) * float64(m))
}

// appendKeyJSON appends a JSON object key for a map key: its elements as
// text joined by commas ("1,abc").
func appendKeyJSON(b []byte, key []Value, newer bool) []byte {
	var s []byte
	for i, k := range key {
		if i > 0 {
			s = append(s, ',')
		}
		if newer {
			s = appendText(s, k)
		} else {
			s = appendKeyElem(s, k)
		}
	}
	return appendJSONString(b, s)
}

// appendMapJSON prints entries es of m as one JSON object: type map, hist,
// tseries or stats (avg maps are "stats" too), data {"@name": value} for a map
// without keys or {"@name": {"key": value, ...}}. Empty maps print
// nothing.
func (w *Writer) appendMapJSON(m *Map, es *sortedList, div uint64) {
	if es.len() == 0 {
		return
	}
	kind := "map"
	switch m.Kind {
	case layout.MapHist, layout.MapLhist:
		kind = "hist"
	case layout.MapAvg, layout.MapStats:
		kind = "stats"
	case layout.MapTseries:
		kind = "tseries"
	}
	first, last := tseriesEpochs(m)
	b := w.buf
	b = append(b, "{\"type\": \""...)
	b = append(b, kind...)
	b = append(b, "\", \"data\": {"...)
	b = appendJSONString(b, m.Name)
	b = append(b, ": "...)
	keyed := len(es.at(0).Key) > 0
	if keyed {
		b = append(b, '{')
	}
	for i := range es.len() {
		e := es.at(i)
		if keyed {
			if i > 0 {
				b = append(b, ", "...)
			}
			b = appendKeyJSON(b, e.Key, m.Newer)
			b = append(b, ": "...)
		}
		switch m.Kind {
		case layout.MapHist, layout.MapLhist:
			b = append(b, '[')
			for j, bk := range histBuckets(m, e, div) {
				if j > 0 {
					b = append(b, ", "...)
				}
				b = append(b, '{')
				if bk.min != "" {
					b = append(b, "\"min\": "...)
					b = append(b, bk.min...)
					b = append(b, ", "...)
				}
				if bk.max != "" {
					b = append(b, "\"max\": "...)
					b = append(b, bk.max...)
					b = append(b, ", "...)
				}
				b = append(b, "\"count\": "...)
				b = strconv.AppendUint(b, bk.count, 10)
				b = append(b, '}')
			}
			b = append(b, ']')
		case layout.MapStats:
			b = fmt.Appendf(b, "{\"count\": %d, \"average\": %d, \"total\": %d}", e.Count, e.average(), e.Total)
		case layout.MapAvg:
			b = appendInt(b, divide(Int(e.average()), div))
		case layout.MapTseries:
			b = appendTseriesJSON(b, tseriesPoints(m, e, first, last))
		default:
			b = appendJSON(b, divide(e.Value, div), m.Newer)
		}
	}
	if keyed {
		b = append(b, '}')
	}
	b = append(b, "}}\n"...)
	w.buf = b
}
