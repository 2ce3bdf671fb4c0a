package natspub

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/gotrace/gotrace/runtime/capture"
	"github.com/gotrace/gotrace/runtime/stream"
)

// testCapture is a capture of six groups: two events with an input each,
// a print of every map with two entries records, a third event, the
// exit maps, and the end.
func testCapture(t *testing.T) []byte {
	t.Helper()
	var b bytes.Buffer
	w, err := capture.NewWriter(&b, &capture.Header{File: "t.bt", Source: "BEGIN {}"})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []struct {
		kind    capture.Kind
		payload string
	}{
		{capture.Attached, "\x01\x00\x00\x00\x00\x00\x00\x00"},
		{capture.Event, "event one......."}, {capture.Input, "input one"},
		{capture.Event, "event two......."}, {capture.Input, "input two"},
		{capture.PrintMaps, ""}, {capture.Entries, "entries a"}, {capture.Entries, "entries b"},
		{capture.Event, "event three....."},
		{capture.ExitMaps, ""},
	} {
		if err := w.Write(r.kind, []byte(r.payload)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// spoolOnly returns a Trace that spools into dir and sends nothing, for
// the tests of what it keeps.
func spoolOnly(t *testing.T, max int64) *Trace {
	t.Helper()
	f, err := os.Create(filepath.Join(t.TempDir(), "spool.cap"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	cfg := &stream.Config{SpoolMax: max, Err: io.Discard}
	tr := &Trace{cfg: cfg, pub: &publisher{cfg: cfg}, file: f, path: f.Name()}
	tr.cond = sync.NewCond(&tr.mu)
	return tr
}

// kinds reads the kinds of a capture's records before its end, which the
// reader checks is there.
func kinds(t *testing.T, b []byte) []capture.Kind {
	t.Helper()
	rd, err := capture.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	var ks []capture.Kind
	for {
		rec, err := rd.Next()
		if errors.Is(err, io.EOF) {
			return ks
		}
		if err != nil {
			t.Fatal(err)
		}
		ks = append(ks, rec.Kind)
	}
}

// TestSpool: the capture written in pieces of any size is spooled as it
// is when it fits; past the bound whole groups (a record and its inputs
// or entries) are dropped and a Lost record with their number takes
// their place before the end.
func TestSpool(t *testing.T) {
	in := testCapture(t)
	for _, tc := range []struct {
		name    string
		max     int64
		dropped uint64
		want    []capture.Kind
	}{
		{"fits", 1 << 20, 0, []capture.Kind{capture.Attached, capture.Event, capture.Input, capture.Event, capture.Input,
			capture.PrintMaps, capture.Entries, capture.Entries, capture.Event, capture.ExitMaps}},
		// Attached (17 bytes) and the first event with its input (25
		// and 18) fit in 60; the rest does not.
		{"full", 60, 4, []capture.Kind{capture.Attached, capture.Event, capture.Input, capture.Lost}},
		{"nothing", 1, 6, []capture.Kind{capture.Lost}},
	} {
		for _, piece := range []int{1, 7, len(in)} {
			tr := spoolOnly(t, tc.max)
			for b := in; len(b) > 0; b = b[min(piece, len(b)):] {
				if _, err := tr.Write(b[:min(piece, len(b))]); err != nil {
					t.Fatal(err)
				}
			}
			got, err := os.ReadFile(tr.path)
			if err != nil {
				t.Fatal(err)
			}
			if ks := kinds(t, got); !slices.Equal(ks, tc.want) || tr.Dropped() != tc.dropped {
				t.Errorf("%s, pieces of %d: spooled %v, dropped %d; want %v, %d", tc.name, piece, ks, tr.Dropped(), tc.want, tc.dropped)
			}
			if tc.dropped == 0 && !bytes.Equal(got, in) {
				t.Errorf("%s, pieces of %d: the spool is not the capture", tc.name, piece)
			}
		}
	}
}
