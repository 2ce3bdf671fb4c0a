package output

import (
	"bytes"
	"strings"
	"testing"

	"github.com/gotrace/gotrace/codegen/layout"
)

// stackKey is a stack as the runtime hands it: the text a map key prints,
// the leaf first.
func stackKey(frames ...string) Value {
	return Str("\n    " + strings.Join(frames, "\n    ") + "\n")
}

// TestFolded checks -f folded on maps of each kind: one line per stack,
// root first, other key parts as root frames in the key's order, offsets dropped
// and equal stacks added up, other maps as text.
func TestFolded(t *testing.T) {
	stackOnly := []bool{true}
	tests := []struct {
		name string
		m    *Map
		top  uint64
		div  uint64
		want string
	}{{
		name: "count",
		m: &Map{Name: "@", Kind: layout.MapCount, KeyStacks: stackOnly, Entries: []Entry{
			{Key: []Value{stackKey("leaf+4", "mid+10", "main+99")}, Value: Uint(7)},
			{Key: []Value{stackKey("other+1", "main+5")}, Value: Uint(2)},
			// The same functions from other call sites add up.
			{Key: []Value{stackKey("leaf+8", "mid+12", "main+99")}, Value: Uint(1)},
		}},
		want: "main;mid;leaf 8\nmain;other 2\n",
	}, {
		name: "key parts and perf frames",
		m: &Map{Name: "@c", Kind: layout.MapSum, KeyStacks: []bool{false, true}, Entries: []Entry{
			{Key: []Value{Str("bitcoind"), Str("\n\t55d0 leaf+3 (/bin/bitcoind)\n\t55a0 main+9 (/bin/bitcoind)\n\t7f00 0x7f00 ([unknown])\n")}, Value: Int(40)},
			{Key: []Value{Str("b;c"), stackKey("0x1234")}, Value: Int(1)},
		}},
		want: "b:c;0x1234 1\nbitcoind;0x7f00;main;leaf 40\n",
	}, {
		name: "key parts after the stack are roots too",
		m: &Map{Name: "@p", Kind: layout.MapCount, KeyStacks: []bool{true, false}, Entries: []Entry{
			{Key: []Value{stackKey("leaf+1", "main+2"), Uint(4242)}, Value: Uint(3)},
			{Key: []Value{stackKey("leaf+1", "main+2"), Uint(7)}, Value: Uint(1)},
		}},
		want: "4242;main;leaf 3\n7;main;leaf 1\n",
	}, {
		name: "parts around the stack keep their order below it",
		m: &Map{Name: "@t", Kind: layout.MapCount, KeyStacks: []bool{false, true, false}, Entries: []Entry{
			{Key: []Value{Str("bitcoind"), stackKey("leaf+1", "main+2"), Uint(12)}, Value: Uint(5)},
		}},
		want: "bitcoind;12;main;leaf 5\n",
	}, {
		name: "hist weighs the values seen",
		m: &Map{Name: "@h", Kind: layout.MapHist, KeyStacks: stackOnly, Entries: []Entry{
			{Key: []Value{stackKey("f", "main")}, Buckets: []uint64{0, 1, 2, 3}},
		}},
		want: "main;f 6\n",
	}, {
		name: "an empty kstack",
		m: &Map{Name: "@k", Kind: layout.MapCount, KeyStacks: stackOnly, Entries: []Entry{
			{Key: []Value{Str("")}, Value: Uint(3)},
		}},
		want: "[no frames] 3\n",
	}, {
		name: "top and div",
		m: &Map{Name: "@", Kind: layout.MapCount, KeyStacks: stackOnly, Entries: []Entry{
			{Key: []Value{stackKey("a")}, Value: Uint(10)},
			{Key: []Value{stackKey("b")}, Value: Uint(30)},
			{Key: []Value{stackKey("c")}, Value: Uint(20)},
		}},
		top: 2, div: 10,
		want: "b 3\nc 2\n",
	}, {
		name: "a map without a stack prints as text",
		m: &Map{Name: "@n", Kind: layout.MapCount, Entries: []Entry{
			{Key: []Value{Str("x")}, Value: Uint(3)},
		}},
		want: "@n[x]: 3\n",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := NewWriter(&b, Folded).Map(tt.m, tt.top, tt.div); err != nil {
				t.Fatalf("Map: %v", err)
			}
			if b.String() != tt.want {
				t.Errorf("got\n%s\nwant\n%s", b.String(), tt.want)
			}
		})
	}
}

// TestFoldedErrors checks that what has no weight per stack is an error
// naming the map, and prints nothing of it.
func TestFoldedErrors(t *testing.T) {
	key := []Value{stackKey("f")}
	tests := []struct {
		name string
		m    *Map
		want string
	}{
		{"negative", &Map{Name: "@s", Kind: layout.MapSum, KeyStacks: []bool{true}, Entries: []Entry{{Key: key, Value: Int(-3)}}}, "fold @s: @s[\n    f\n] has the negative value -3: a flame graph needs counts"},
		{"string values", &Map{Name: "@v", Kind: layout.MapValue, KeyStacks: []bool{true}, Entries: []Entry{{Key: key, Value: Str("x")}}}, "fold @v: its values are not counts: a flame graph needs integers"},
		{"tseries", &Map{Name: "@t", Kind: layout.MapTseries, KeyStacks: []bool{true}}, "fold @t: a tseries map has no weight per stack"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			w := NewWriter(&b, Folded)
			err := w.Maps([]*Map{tt.m})
			if err == nil || err.Error() != tt.want {
				t.Errorf("error %v, want %q", err, tt.want)
			}
			if b.Len() != 0 {
				t.Errorf("printed %q", b.String())
			}
		})
	}
}

// TestFoldedExit checks what the folded format leaves out of text: the
// attach line and the two newlines before the maps at exit.
func TestFoldedExit(t *testing.T) {
	var b bytes.Buffer
	w := NewWriter(&b, Folded)
	if err := w.AttachedProbes(2, false); err != nil {
		t.Fatal(err)
	}
	m := &Map{Name: "@", Kind: layout.MapCount, KeyStacks: []bool{true}, Entries: []Entry{{Key: []Value{stackKey("f", "main")}, Value: Uint(1)}}}
	if err := w.Exit([]*Map{m}); err != nil {
		t.Fatal(err)
	}
	if b.String() != "main;f 1\n" {
		t.Errorf("got %q", b.String())
	}
}

// TestDivert checks that a map the divert function takes is not printed.
func TestDivert(t *testing.T) {
	var b bytes.Buffer
	w := NewWriter(&b, Text)
	var took []string
	w.Divert(func(m *Map) bool {
		took = append(took, m.Name)
		return m.HasStackKey()
	})
	stacks := &Map{Name: "@s", Kind: layout.MapCount, KeyStacks: []bool{true}, Entries: []Entry{{Key: []Value{stackKey("f")}, Value: Uint(1)}}}
	plain := &Map{Name: "@p", Kind: layout.MapCount, Entries: []Entry{{Value: Uint(2)}}}
	if err := w.Maps([]*Map{stacks, plain}); err != nil {
		t.Fatal(err)
	}
	if err := w.Map(stacks, 0, 0); err != nil {
		t.Fatal(err)
	}
	if b.String() != "@p: 2\n" || strings.Join(took, ",") != "@p,@s,@s" {
		t.Errorf("printed %q, offered %v", b.String(), took)
	}
}
