package output

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gotrace/gotrace/codegen/layout"
	"github.com/gotrace/gotrace/internal/printf"
)

func render(t *testing.T, f Format, do func(w *Writer) error) string {
	t.Helper()
	var b bytes.Buffer
	if err := do(NewWriter(&b, f)); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// bpftrace 0.17 leaves equal values in hash order; gotrace orders them by
// key, integers as unsigned.
func TestTiesSortByKey(t *testing.T) {
	m := &Map{Name: "@c", Kind: layout.MapCount}
	for _, k := range []int64{5, -1, 3, 1, 256, 2} {
		m.Entries = append(m.Entries, Entry{Key: []Value{Int(k)}, Value: Uint(1)})
	}
	m.Entries = append(m.Entries, Entry{Key: []Value{Int(9)}, Value: Uint(0)})
	got := render(t, Text, func(w *Writer) error { return w.Map(m, 0, 0) })
	want := "@c[9]: 0\n@c[1]: 1\n@c[2]: 1\n@c[3]: 1\n@c[5]: 1\n@c[256]: 1\n@c[-1]: 1\n"
	if got != want {
		t.Errorf("got\n%swant\n%s", got, want)
	}

	s := &Map{Name: "@s", Kind: layout.MapSum, Entries: []Entry{
		{Key: []Value{Str("b"), Int(1)}, Value: Int(7)},
		{Key: []Value{Str("a"), Int(2)}, Value: Int(7)},
		{Key: []Value{Str("a"), Int(1)}, Value: Int(7)},
		{Key: []Value{Str("ab"), Int(0)}, Value: Int(-7)},
	}}
	got = render(t, JSON, func(w *Writer) error { return w.Map(s, 0, 0) })
	want = `{"type": "map", "data": {"@s": {"ab,0": -7, "a,1": 7, "a,2": 7, "b,1": 7}}}` + "\n"
	if got != want {
		t.Errorf("got\n%swant\n%s", got, want)
	}
}

// bpftrace 0.17 cannot reach the top hist buckets (it files every value of
// 2^31 and more under [2G, 4G)), so their labels are gotrace's own.
func TestHistTopBuckets(t *testing.T) {
	m := &Map{Name: "@h", Kind: layout.MapHist, Entries: []Entry{{Buckets: make([]uint64, 66)}}}
	m.Entries[0].Buckets[42] = 1 // 2^40
	m.Entries[0].Buckets[52] = 2 // 2^50
	m.Entries[0].Buckets[65] = 4 // 2^63 and up
	text := render(t, Text, func(w *Writer) error { return w.Map(m, 0, 0) })
	for _, want := range []string{
		"[1T, 2T)               1 |@@@@@@@@@@@@@                                       |\n",
		"[512T, 1P)             0 |",
		"[1P, 2P)               2 |@@@@@@@@@@@@@@@@@@@@@@@@@@                          |\n",
		"[8E, 16E)              4 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("text lacks %q:\n%s", want, text)
		}
	}
	js := render(t, JSON, func(w *Writer) error { return w.Map(m, 0, 0) })
	for _, want := range []string{
		`{"min": 1099511627776, "max": 2199023255551, "count": 1}`,
		`{"min": 9223372036854775808, "max": 18446744073709551615, "count": 4}]}}`,
	} {
		if !strings.Contains(js, want) {
			t.Errorf("JSON lacks %q:\n%s", want, js)
		}
	}
}

func TestLhistLabel(t *testing.T) {
	for _, tt := range []struct {
		v    int64
		want string
	}{
		{0, "0"}, {1, "1"}, {1000, "1000"}, {1023, "1023"}, {1024, "1K"}, {1536, "1536"},
		{3072, "3K"}, {1 << 20, "1M"}, {3 << 20, "3M"}, {1025 << 10, "1025K"}, {1 << 30, "1G"},
		{1 << 40, "1T"}, {1 << 50, "1P"}, {1 << 60, "1E"}, {1 << 62, "4E"}, {-1024, "-1K"},
	} {
		if got := lhistLabel(tt.v); got != tt.want {
			t.Errorf("lhistLabel(%d) = %q, want %q", tt.v, got, tt.want)
		}
	}
}

// A zeroed hist keeps its keys but has no bucket to print.
func TestZeroedHist(t *testing.T) {
	m := &Map{Name: "@h", Kind: layout.MapHist, Entries: []Entry{{Key: []Value{Int(1)}, Buckets: make([]uint64, 66)}}}
	if got, want := render(t, Text, func(w *Writer) error { return w.Map(m, 0, 0) }), "@h[1]: \n\n"; got != want {
		t.Errorf("text: got %q, want %q", got, want)
	}
	if got, want := render(t, JSON, func(w *Writer) error { return w.Map(m, 0, 0) }), `{"type": "hist", "data": {"@h": {"1": []}}}`+"\n"; got != want {
		t.Errorf("JSON: got %q, want %q", got, want)
	}
}

func TestJSONString(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"", `""`},
		{"a\"b\\c\n\r\t/", `"a\"b\\c\n\r\t/"`},
		{"\x00\x01\x08\x0c\x1b\x1f\x7f", `"\u0000\u0001\u0008\u000c\u001b\u001f` + "\x7f" + `"`},
		{"µs ✓ 🙂", `"µs ✓ 🙂"`},
		{"a\xffb\xc2", `"a\u00ffb\u00c2"`},
	} {
		if got := string(appendJSONString(nil, tt.in)); got != tt.want {
			t.Errorf("appendJSONString(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

func TestPrintfArgErrors(t *testing.T) {
	parse := func(s string) []printf.Part {
		p, err := printf.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tt := range []struct {
		format string
		args   []Value
	}{
		{"%d %d\n", []Value{Int(1)}},
		{"%d\n", []Value{Int(1), Int(2)}},
		{"no verbs\n", []Value{Int(1)}},
		{"%d\n", []Value{Str("x")}},
		{"%s\n", []Value{Int(1)}},
		{"%r\n", []Value{Str("x")}},
		{"%c\n", []Value{Tuple(Int(1), Int(2))}},
		{"%%d\n", nil},
	} {
		var b bytes.Buffer
		err := NewWriter(&b, Text).Printf(parse(tt.format), tt.args)
		if !errors.Is(err, ErrArgs) {
			t.Errorf("Printf(%q, %v) = %v, want ErrArgs", tt.format, tt.args, err)
		}
		if b.Len() != 0 {
			t.Errorf("Printf(%q, %v) wrote %q despite the error", tt.format, tt.args, b.String())
		}
	}
}

type failWriter struct{}

var errDiskFull = errors.New("disk full")

func (failWriter) Write([]byte) (int, error) { return 0, errDiskFull }

func TestWriteErrors(t *testing.T) {
	w := NewWriter(failWriter{}, JSON)
	for name, err := range map[string]error{
		"AttachedProbes": w.AttachedProbes(2, false),
		"LostEvents":     w.LostEvents(3),
		"Value":          w.Value(Int(1)),
		"Exit":           w.Exit(nil),
		"Message":        w.Message(MessageTime, "12:00\n"),
	} {
		if !errors.Is(err, errDiskFull) {
			t.Errorf("%s: got %v, want an error wrapping %v", name, err, errDiskFull)
		}
	}
}

func TestMessages(t *testing.T) {
	for _, tt := range []struct {
		f    Format
		do   func(w *Writer) error
		want string
	}{
		{Text, func(w *Writer) error { return w.AttachedProbes(1, false) }, "Attaching 1 probe...\n"},
		{Text, func(w *Writer) error { return w.AttachedProbes(3, false) }, "Attaching 3 probes...\n"},
		{JSON, func(w *Writer) error { return w.AttachedProbes(2, false) }, `{"type": "attached_probes", "data": {"probes": 2}}` + "\n"},
		// bpftrace 0.24's: in text on standard error (AttachedNotice).
		{Text, func(w *Writer) error { return w.AttachedProbes(3, true) }, ""},
		{JSON, func(w *Writer) error { return w.AttachedProbes(2, true) }, `{"type": "attached_probes", "count": 2, "data": {"probes": 2}}` + "\n"},
		{Text, func(w *Writer) error { return w.LostEvents(17) }, "Lost 17 events\n"},
		{JSON, func(w *Writer) error { return w.LostEvents(17) }, `{"type": "lost_events", "data": {"events": 17}}` + "\n"},
		{Text, func(w *Writer) error { return w.Message(MessageSyscall, "hi\n") }, "hi\n"},
		{JSON, func(w *Writer) error { return w.Message(MessageSyscall, "hi\n") }, `{"type": "syscall", "data": "hi\n"}` + "\n"},
		{JSON, func(w *Writer) error { return w.Message(MessageTime, "12:14:13\n") }, `{"type": "time", "data": "12:14:13\n"}` + "\n"},
		{Text, func(w *Writer) error { return w.Message(MessageJoin, "./jbin aa bb\n") }, "./jbin aa bb\n"},
		{JSON, func(w *Writer) error { return w.Message(MessageJoin, "./jbin,aa,bb\n") }, `{"type": "join", "data": "./jbin,aa,bb"}` + "\n"},
		{Text, func(w *Writer) error { return w.Value(Buf([]byte("a\x00"))) }, `a\x00` + "\n"},
		{JSON, func(w *Writer) error { return w.Value(Tuple(Uint(1<<63), Buf([]byte{1}))) }, `{"type": "value", "data": [9223372036854775808,"\\x01"]}` + "\n"},
		{Text, func(w *Writer) error { return w.Value(Tuple(Boolean(true), Boolean(false))) }, "(true, false)\n"},
		{JSON, func(w *Writer) error { return w.Value(Tuple(Boolean(true), Boolean(false))) }, `{"type": "value", "data": [true,false]}` + "\n"},
		{Text, func(w *Writer) error { return w.Value(Value{Kind: ValueInt, Bits: 46, Hex: true}) }, "0x2e\n"},
		{JSON, func(w *Writer) error { return w.Value(Value{Kind: ValueInt, Bits: 46, Hex: true}) }, `{"type": "value", "data": 46}` + "\n"},
		{JSON, func(w *Writer) error { return w.Value(record()) }, `{"type": "value", "data": { "m": 2, "in": { "s": "x" } }}` + "\n"},
		{JSON, func(w *Writer) error { w.SetNewer(true); return w.Value(record()) }, `{"type": "value", "data": {"m": 2, "in": {"s": "x"}}}` + "\n"},
	} {
		if got := render(t, tt.f, tt.do); got != tt.want {
			t.Errorf("got %q, want %q", got, tt.want)
		}
	}
}

func TestParseOutputFormat(t *testing.T) {
	if f, err := ParseFormat("text"); f != Text || err != nil {
		t.Errorf("ParseFormat(text) = %v, %v", f, err)
	}
	if f, err := ParseFormat("json"); f != JSON || err != nil {
		t.Errorf("ParseFormat(json) = %v, %v", f, err)
	}
	if _, err := ParseFormat("xml"); err == nil {
		t.Error("ParseFormat(xml) succeeded")
	}
}

// Bad values from a confused decoder must not panic.
func TestOddValues(t *testing.T) {
	m := &Map{Name: "@l", Kind: layout.MapLhist, Entries: []Entry{{Buckets: []uint64{0, 1, 0, 0, 0, 0, 0, 0, 2}}}}
	text := render(t, Text, func(w *Writer) error { return w.Map(m, 0, 0) })
	if !strings.Contains(text, "[0, ...)") {
		t.Errorf("lhist without bounds: %q", text)
	}
	for _, f := range []Format{Text, JSON} {
		render(t, f, func(w *Writer) error {
			return w.Exit([]*Map{
				{Name: "@a", Kind: layout.MapAvg, Entries: []Entry{{Count: 0, Total: 5}}},
				{Name: "@v", Kind: layout.MapValue, Entries: []Entry{{Value: Value{}}}},
				{Name: "@m", Kind: layout.MapMax, Entries: []Entry{{Key: []Value{{}}, Value: Int(1)}}},
			})
		})
	}
}

// FuzzJSONString checks that every string becomes valid JSON that decodes
// back to it when it is valid UTF-8.
func FuzzJSONString(f *testing.F) {
	for _, s := range []string{"", "a\"b\\c\n", "\x00\x1f\x7f", "µs", "a\xffb\xc2", "\xed\xa0\x80"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := appendJSONString(nil, s)
		var back string
		if err := json.Unmarshal(out, &back); err != nil {
			t.Fatalf("%q gives invalid JSON %s: %v", s, out, err)
		}
		if utf8.ValidString(s) && back != s {
			t.Fatalf("%q gives %s, which decodes to %q", s, out, back)
		}
	})
}

// writeCounter records each Write it gets.
type writeCounter struct{ writes []string }

func (c *writeCounter) Write(p []byte) (int, error) {
	c.writes = append(c.writes, string(p))
	return len(p), nil
}

// A holding Writer writes nothing until it holds its size or is flushed,
// then whole lines only; a failed printf drops its own text, not the lines
// held before it.
func TestHold(t *testing.T) {
	line, err := printf.Parse("%d\n")
	if err != nil {
		t.Fatal(err)
	}
	var c writeCounter
	w := NewWriter(&c, Text)
	w.Hold(8)
	for i := range 3 {
		if err := w.Printf(line, []Value{Int(int64(i * 100))}); err != nil {
			t.Fatal(err)
		}
	}
	if want := []string{"0\n100\n200\n"}; !slices.Equal(c.writes, want) {
		t.Fatalf("after three lines over 8 bytes: writes %q, want %q", c.writes, want)
	}
	if err := w.Printf(line, []Value{Int(7)}); err != nil {
		t.Fatal(err)
	}
	if err := w.Printf(line, []Value{Str("x")}); !errors.Is(err, ErrArgs) {
		t.Fatalf("Printf of a string with %%d = %v, want ErrArgs", err)
	}
	if len(c.writes) != 1 {
		t.Fatalf("a line under the held size was written: %q", c.writes)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if want := []string{"0\n100\n200\n", "7\n"}; !slices.Equal(c.writes, want) {
		t.Errorf("after Flush twice: writes %q, want %q", c.writes, want)
	}
}

// TestAttachedNotice checks bpftrace 0.24's line for the probes attached.
func TestAttachedNotice(t *testing.T) {
	for n, want := range map[int]string{1: "Attached 1 probe\n", 2: "Attached 2 probes\n", 0: "Attached 0 probes\n"} {
		if got := AttachedNotice(n); got != want {
			t.Errorf("AttachedNotice(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestStatsNewer checks avg and stats maps printed as bpftrace 0.24 does
// (Map.Newer): stats as a record, no empty line after either map.
func TestStatsNewer(t *testing.T) {
	var b bytes.Buffer
	w := NewWriter(&b, Text)
	maps := []*Map{
		{Name: "@s", Kind: layout.MapStats, Newer: true, Entries: []Entry{{Count: 3, Total: -10}}},
		{Name: "@a", Kind: layout.MapAvg, Newer: true, Entries: []Entry{{Key: []Value{Int(1)}, Count: 2, Total: 7}}},
	}
	if err := w.Maps(maps); err != nil {
		t.Fatal(err)
	}
	want := "@a[1]: 3\n@s: { .count = 3, .average = -3, .total = -10 }\n"
	if b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
}

// record is a struct's record, { .m = 2, .in = { .s = x } }.
func record() Value {
	in := Tuple(Str("x"))
	in.Names = []string{"s"}
	v := Tuple(Int(2), in)
	v.Names = []string{"m", "in"}
	return v
}
