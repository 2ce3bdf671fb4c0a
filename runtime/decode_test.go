package runtime

import (
	"encoding/binary"
	"strings"
	"testing"

	"github.com/gotrace/gotrace/codegen"
	"github.com/gotrace/gotrace/codegen/layout"
	"github.com/gotrace/gotrace/lang"
)

func TestSplitRecord(t *testing.T) {
	fields, size := codegen.Layout(lang.Int64, lang.String(16))
	events := []codegen.Event{{Kind: codegen.EventExit}, {Kind: codegen.EventPrintf, Format: "%d %s\n", Args: fields}}
	rec := make([]byte, 8+size)
	binary.LittleEndian.PutUint64(rec, 1)
	binary.LittleEndian.PutUint64(rec[8:], 42)
	copy(rec[16:], "abc")
	ev, data, err := splitRecord(events, rec)
	if err != nil {
		t.Fatal(err)
	}
	if ev != &events[1] || u64(data, 0) != 42 || cString(data[8:24]) != "abc" {
		t.Errorf("splitRecord gave event %+v and data %q", ev, data)
	}
	for _, tc := range []struct {
		rec  []byte
		want string
	}{
		{rec[:4], "too short for an event id"},
		{rec[:20], "too short for its fields"},
		{binary.LittleEndian.AppendUint64(nil, 7), "unknown event id 7"},
	} {
		if _, _, err := splitRecord(events, tc.rec); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("record of %d bytes: error %v, want %q", len(tc.rec), err, tc.want)
		}
	}
}

// TestSplitRecordPackedBuf checks a record with a packed buf: it may end
// with the buf's data, and no sooner.
func TestSplitRecordPackedBuf(t *testing.T) {
	fields := []layout.Field{
		{Kind: layout.Int, Offset: 0, Size: 8},
		{Kind: layout.Buf, Offset: 8, Size: 8 + 4096, Packed: true},
	}
	events := []codegen.Event{{Kind: codegen.EventPrintf, Format: "%d %r\n", Args: fields}}
	rec := binary.LittleEndian.AppendUint64(nil, 0)
	rec = binary.LittleEndian.AppendUint64(rec, 42)
	rec = binary.LittleEndian.AppendUint64(rec, 3)
	rec = append(rec, "abc"...)
	if _, _, err := splitRecord(events, rec); err != nil {
		t.Fatal(err)
	}
	for _, short := range [][]byte{rec[:len(rec)-1], rec[:20]} {
		if _, _, err := splitRecord(events, short); err == nil || !strings.Contains(err.Error(), "too short for its fields") {
			t.Errorf("record of %d bytes: error %v", len(short), err)
		}
	}
}

func TestBufBytes(t *testing.T) {
	b := binary.LittleEndian.AppendUint64(nil, 3)
	b = append(b, 'x', 0, 'y', 'z')
	if got := string(bufBytes(b, 4)); got != "x\x00y" {
		t.Errorf("bufBytes = %q, want the 3 bytes of the length", got)
	}
	huge := binary.LittleEndian.AppendUint64(nil, 1<<40)
	huge = append(huge, "abcd"...)
	if got := string(bufBytes(huge, 4)); got != "abcd" {
		t.Errorf("bufBytes with a length past the buffer = %q, want it clamped to 4 bytes", got)
	}
}
