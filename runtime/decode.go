package runtime

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"unsafe"

	"github.com/gotrace/gotrace/codegen"
	"github.com/gotrace/gotrace/codegen/layout"
)

// recordHeader is the size of the event id every ring-buffer record starts
// with.
const recordHeader = 8

// splitRecord returns the event a record belongs to and the bytes after
// its id, where the event's fields are laid out.
func splitRecord(events []codegen.Event, raw []byte) (*codegen.Event, []byte, error) {
	if len(raw) < recordHeader {
		return nil, nil, fmt.Errorf("decode record: %d bytes is too short for an event id", len(raw))
	}
	id := binary.LittleEndian.Uint64(raw)
	if id >= uint64(len(events)) {
		return nil, nil, fmt.Errorf("decode record: unknown event id %d", id)
	}
	ev := &events[id]
	data := raw[recordHeader:]
	var c layout.Cursor
	for _, f := range ev.Args {
		size := f.Size
		switch {
		case f.Packed && f.Kind == layout.Buf:
			// Its length word and that many bytes, wherever it starts.
			if c.Field(f, data) == nil {
				return nil, nil, fmt.Errorf("decode record: event %d is %d bytes, too short for its fields", id, len(raw))
			}
			continue
		case f.Packed:
			size = 1 // its NUL, at least
			c.Field(f, data)
		}
		if f.Offset+size > len(data) {
			return nil, nil, fmt.Errorf("decode record: event %d is %d bytes, too short for its fields", id, len(raw))
		}
	}
	return ev, data, nil
}

// u64 reads a little-endian u64 at off.
func u64(b []byte, off int) uint64 { return binary.LittleEndian.Uint64(b[off:]) }

// cString returns the bytes of b up to its first NUL.
func cString(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}

// borrowedCString is cString without the copy: the string shares b's
// memory and is valid only while b is.
func borrowedCString(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// bufBytes returns the data of a buf field: a u64 length followed by up to
// size bytes.
func bufBytes(b []byte, size int) []byte {
	n := u64(b, 0)
	if n > uint64(size) {
		n = uint64(size)
	}
	return b[8 : 8+n]
}
