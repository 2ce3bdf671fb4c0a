package capture

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/gotrace/gotrace/codegen"
	"github.com/gotrace/gotrace/codegen/layout"
)

// TestCheckHeader refuses headers whose layouts would send a decoder
// outside its bytes: such a header comes from a damaged or crafted file,
// never from the code generator.
func TestCheckHeader(t *testing.T) {
	u64 := layout.Field{Kind: layout.Int, Size: 8}
	event := func(f layout.Field) []codegen.Event {
		return []codegen.Event{{Kind: codegen.EventPrintf, Args: []layout.Field{f}}}
	}
	tests := []struct {
		name string
		h    Header
		msg  string
	}{
		{"good", Header{Events: event(u64), Maps: []codegen.Map{{Name: "@m", Kind: layout.MapCount, KeyFields: []layout.Field{u64}, KeySize: 8}}}, ""},
		{"negative offset", Header{Events: event(layout.Field{Kind: layout.Int, Offset: -8, Size: 8})}, "outside"},
		{"short u64", Header{Events: event(layout.Field{Kind: layout.Usym, Size: 4})}, "outside"},
		{"short timestamp", Header{Events: event(layout.Field{Kind: layout.Timestamp, Size: 8})}, "outside"},
		{"unknown field kind", Header{Events: event(layout.Field{Kind: 99, Size: 8})}, "unknown kind 99"},
		{"unknown event kind", Header{Events: []codegen.Event{{Kind: 99}}}, "event 0: unknown kind 99"},
		{"tuple element outside", Header{Events: event(layout.Field{Kind: layout.Tuple, Size: 8, Elems: []layout.Field{{Kind: layout.Int, Offset: 8, Size: 8}}})}, "outside 8 bytes"},
		{"record names", Header{Events: event(layout.Field{Kind: layout.Tuple, Size: 8, Elems: []layout.Field{u64}, Names: []string{"a", "b"}})}, "1 fields with 2 names"},
		{"array of bytes", Header{Events: event(layout.Field{Kind: layout.Array, Size: 6, Elems: []layout.Field{{Kind: layout.Int, Size: 1}}})}, ""},
		{"macaddr", Header{Events: event(layout.Field{Kind: layout.Macaddr, Size: 8})}, ""},
		{"array element of 0 bytes", Header{Events: event(layout.Field{Kind: layout.Array, Size: 6, Elems: []layout.Field{{Kind: layout.Int}}})}, "without an element"},
		{"array element of 3 bytes", Header{Events: event(layout.Field{Kind: layout.Array, Size: 6, Elems: []layout.Field{{Kind: layout.Int, Size: 3}}})}, "without an element"},
		{"array without element", Header{Events: event(layout.Field{Kind: layout.Array, Size: 6})}, "without an element"},
		{"key outside", Header{Maps: []codegen.Map{{Name: "@m", KeyFields: []layout.Field{u64}, KeySize: 4}}}, "map @m key"},
		{"lhist step", Header{Maps: []codegen.Map{{Name: "@l", Kind: layout.MapLhist, Lhist: layout.Lhist{Min: 0, Max: 10, Step: 0}}}}, "lhist bounds"},
		{"tseries intervals", Header{Maps: []codegen.Map{{Name: "@t", Kind: layout.MapTseries, Tseries: layout.Tseries{Interval: 1, Intervals: 1 << 40}}}}, "tseries of"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			w, err := NewWriter(&b, &tt.h)
			if err != nil {
				t.Fatal(err)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			_, err = NewReader(&b)
			switch {
			case tt.msg == "" && err != nil:
				t.Fatalf("NewReader: %v", err)
			case tt.msg != "" && (err == nil || !strings.Contains(err.Error(), tt.msg)):
				t.Fatalf("NewReader: %v, want an error saying %q", err, tt.msg)
			}
		})
	}
}

// FuzzReader reads fuzzed captures: a Reader never panics, every error
// it returns is a *CorruptError, and it reads no record past one.
func FuzzReader(f *testing.F) {
	var b bytes.Buffer
	w, err := NewWriter(&b, &Header{Events: []codegen.Event{{Kind: codegen.EventPrintf}}})
	if err != nil {
		f.Fatal(err)
	}
	w.WriteUint64(Attached, 1)
	w.Write(Event, make([]byte, 8))
	w.Write(Input, []byte("main+4"))
	if err := w.Close(); err != nil {
		f.Fatal(err)
	}
	f.Add(b.Bytes())
	f.Add(b.Bytes()[:b.Len()-5])
	f.Fuzz(func(t *testing.T, file []byte) {
		r, err := NewReader(bytes.NewReader(file))
		for err == nil {
			_, err = r.Next()
		}
		var ce *CorruptError
		if !errors.Is(err, io.EOF) && !errors.As(err, &ce) {
			t.Fatalf("error %v is not a corrupt capture's", err)
		}
		if r != nil {
			if _, again := r.Next(); !errors.Is(again, io.EOF) && !errors.As(again, &ce) {
				t.Fatalf("after %v, Next returned %v", err, again)
			}
		}
	})
}
