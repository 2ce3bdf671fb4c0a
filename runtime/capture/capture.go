// Package capture reads and writes gotrace's capture files (gotrace -w):
// the records a trace's programs wrote, as raw bytes, with what is needed
// to print them later (gotrace replay). docs/capture.md describes the
// format; this package is its one implementation.
package capture

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"sync"

	"github.com/gotrace/gotrace/codegen"
)

// Magic starts every capture file.
const Magic = "GOTRACE\x00"

// Version is the version of the format this package writes and reads.
// A change to the header or to a record's payload that an older reader
// would misread takes a new version.
const Version = 1

// maxHeader and maxRecord bound the lengths a reader believes, so that a
// corrupt length cannot make it allocate without bound.
const (
	maxHeader = 64 << 20
	maxRecord = 256 << 20
)

// recordPrefix is the size of a record's kind, length and checksum.
const recordPrefix = 1 + 4 + 4

// crcTable is CRC-32C's, which CPUs compute in hardware. It is made at
// the first capture read or written, not at every start of gotrace.
var crcTable = sync.OnceValue(func() *crc32.Table { return crc32.MakeTable(crc32.Castagnoli) })

// Header is what a reader needs to decode the records: the parts of the
// codegen.Spec that say how records and maps are laid out and printed, and
// the script, for the positions of errorf() and warnf().
type Header struct {
	// File and Source are the script's name and text.
	File   string
	Source string
	// Newer is the script's newer-bpftrace mode (pointers in hex).
	Newer bool
	// Events, Maps and TimeFormats are the Spec's.
	Events      []codegen.Event
	Maps        []codegen.Map
	TimeFormats []string
	// Probes are the probe builtin's text of each Spec.Attachments entry,
	// in order.
	Probes []string
}

// Kind says what a record holds.
type Kind uint8

// The record kinds. docs/capture.md gives each one's payload.
const (
	// Event is a ring-buffer record as the programs wrote it.
	Event Kind = iota + 1
	// Input is text printing the record before it read from the world: a
	// symbol, a stack, a user name, the time, a command's output.
	Input
	// Entries is a map's entries as read to print it (EncodeEntries).
	Entries
	// Attached is "Attaching N probes...": a u64 N.
	Attached
	// Lost is "Lost N events": a u64 N.
	Lost
	// Clock is the wall-clock time of the bpf_ktime_get_ns clock's zero,
	// in Unix nanoseconds (an i64), for strftime().
	Clock
	// PrintMaps is every map printed at once (SIGUSR1); Entries records
	// follow, one per map.
	PrintMaps
	// ExitMaps is the maps printed at the end of the trace; Entries
	// records follow, one per map.
	ExitMaps
	// End closes a complete capture: a file without it was cut short.
	End
	kindLimit
)

var kindNames = [...]string{Event: "event", Input: "input", Entries: "entries", Attached: "attached",
	Lost: "lost", Clock: "clock", PrintMaps: "print-maps", ExitMaps: "exit-maps", End: "end"}

// String names the kind as docs/capture.md does.
func (k Kind) String() string {
	if k > 0 && k < kindLimit {
		return kindNames[k]
	}
	return fmt.Sprintf("kind-%d", uint8(k))
}

// Writer writes a capture. It buffers: Flush writes what it holds. It is
// not safe for concurrent use.
type Writer struct {
	w      *bufio.Writer
	prefix [recordPrefix]byte
	// Records and Bytes count what was written, for a summary.
	Records, Bytes int64
}

// writeBuffer is how much a Writer holds before it writes: records of a
// burst cost one write per MiB.
const writeBuffer = 1 << 20

// readBuffer is how much a Reader reads at once; larger records are read
// past it.
const readBuffer = 64 << 10

// NewWriter writes the magic, the version and h to w and returns a Writer
// for the records.
func NewWriter(w io.Writer, h *Header) (*Writer, error) {
	js, err := json.Marshal(h)
	if err != nil {
		return nil, fmt.Errorf("encode capture header: %w", err)
	}
	cw := &Writer{w: bufio.NewWriterSize(w, writeBuffer)}
	var b []byte
	b = append(b, Magic...)
	b = binary.LittleEndian.AppendUint32(b, Version)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(js)))
	b = binary.LittleEndian.AppendUint32(b, crc32.Checksum(js, crcTable()))
	b = append(b, js...)
	if _, err := cw.w.Write(b); err != nil {
		return nil, fmt.Errorf("write capture header: %w", err)
	}
	cw.Bytes = int64(len(b))
	return cw, nil
}

// Write appends one record of kind k.
func (w *Writer) Write(k Kind, payload []byte) error {
	putPrefix(w.prefix[:], k, payload)
	w.w.Write(w.prefix[:])
	if _, err := w.w.Write(payload); err != nil {
		return fmt.Errorf("write capture: %w", err)
	}
	w.Records++
	w.Bytes += int64(recordPrefix + len(payload))
	return nil
}

// putPrefix fills prefix (recordPrefix bytes) for a record of kind k:
// the kind, the payload's length and the checksum of both.
func putPrefix(prefix []byte, k Kind, payload []byte) {
	prefix[0] = byte(k)
	binary.LittleEndian.PutUint32(prefix[1:], uint32(len(payload)))
	binary.LittleEndian.PutUint32(prefix[5:], crc32.Update(crc32.Update(0, crcTable(), prefix[:1]), crcTable(), payload))
}

// AppendRecord appends to b one record of kind k as a Writer writes it,
// for a writer that puts records of its own among a capture's (the spool
// of --nats).
func AppendRecord(b []byte, k Kind, payload []byte) []byte {
	var prefix [recordPrefix]byte
	putPrefix(prefix[:], k, payload)
	return append(append(b, prefix[:]...), payload...)
}

// headerPrefix is the size of the magic, the version, the header's length
// and its checksum.
const headerPrefix = 8 + 4 + 4 + 4

// HeaderLen returns the length of the header (magic to header data) that
// starts b, and false when b is too short to say.
func HeaderLen(b []byte) (int, bool) {
	if len(b) < headerPrefix {
		return 0, false
	}
	return headerPrefix + int(binary.LittleEndian.Uint32(b[12:])), true
}

// RecordLen returns the kind and the length (prefix and payload) of the
// record that starts b, and false when b is too short to say: a reader of
// the bytes a Writer writes can cut them into records without checking
// them.
func RecordLen(b []byte) (Kind, int, bool) {
	if len(b) < recordPrefix {
		return 0, 0, false
	}
	return Kind(b[0]), recordPrefix + int(binary.LittleEndian.Uint32(b[1:])), true
}

// WriteUint64 appends a record whose payload is v.
func (w *Writer) WriteUint64(k Kind, v uint64) error {
	return w.Write(k, binary.LittleEndian.AppendUint64(nil, v))
}

// Flush writes the records the Writer holds.
func (w *Writer) Flush() error {
	if err := w.w.Flush(); err != nil {
		return fmt.Errorf("write capture: %w", err)
	}
	return nil
}

// Close writes the End record and flushes. It does not close the file.
func (w *Writer) Close() error {
	if err := w.Write(End, nil); err != nil {
		return err
	}
	return w.Flush()
}

// Record is one record read back. Data is valid until the next call to
// Next.
type Record struct {
	Kind Kind
	Data []byte
}

// Uint64 is the payload of an Attached or Lost record.
func (r Record) Uint64() (uint64, error) {
	if len(r.Data) != 8 {
		return 0, fmt.Errorf("%s record of %d bytes, want 8", r.Kind, len(r.Data))
	}
	return binary.LittleEndian.Uint64(r.Data), nil
}

// CorruptError is a capture that cannot be read on from Offset: cut short,
// or bytes that are not what was written. What came before it is good.
type CorruptError struct {
	// Offset is where the damage starts, in bytes from the file's start;
	// Record counts the good records before it.
	Offset int64
	Record int
	Msg    string
}

// Error says where the damage is and what it is.
func (e *CorruptError) Error() string {
	return fmt.Sprintf("corrupt capture at byte %d (after %d records): %s", e.Offset, e.Record, e.Msg)
}

// truncated is the message of a capture that ends without its End
// record.
const truncated = "the capture is cut short: it ends without its end record"

// Reader reads a capture's records in order.
type Reader struct {
	r   *bufio.Reader
	off int64
	n   int
	buf []byte
	// Header is the capture's header.
	Header Header
	ended  bool
	// err is the damage Next met: it is where the reading stops.
	err error
}

// NewReader reads and checks the magic, the version and the header.
func NewReader(r io.Reader) (*Reader, error) {
	cr := &Reader{r: bufio.NewReaderSize(r, readBuffer)}
	var fixed [len(Magic) + 12]byte
	n, err := io.ReadFull(cr.r, fixed[:])
	if n == 0 {
		// What -w leaves when the trace failed before it started.
		return nil, cr.corrupt("the file is empty")
	}
	if !bytes.HasPrefix(fixed[:n], []byte(Magic)) && !bytes.HasPrefix([]byte(Magic), fixed[:n]) {
		return nil, cr.corrupt("not a gotrace capture: the file does not start with %q", Magic)
	}
	if err != nil {
		return nil, cr.corrupt("the header is cut short after %d bytes", n)
	}
	if v := binary.LittleEndian.Uint32(fixed[len(Magic):]); v != Version {
		return nil, cr.corrupt("capture format version %d: this gotrace reads version %d", v, Version)
	}
	size := binary.LittleEndian.Uint32(fixed[len(Magic)+4:])
	sum := binary.LittleEndian.Uint32(fixed[len(Magic)+8:])
	if size > maxHeader {
		return nil, cr.corrupt("a header of %d bytes (at most %d)", size, maxHeader)
	}
	cr.off = int64(len(fixed))
	js, err := cr.read(int(size))
	if err != nil {
		return nil, cr.corrupt("the header is cut short")
	}
	if crc32.Checksum(js, crcTable()) != sum {
		return nil, cr.corrupt("the header's checksum does not match")
	}
	if err := json.Unmarshal(js, &cr.Header); err != nil {
		return nil, cr.corrupt("decode header: %v", err)
	}
	if err := checkHeader(&cr.Header); err != nil {
		return nil, cr.corrupt("%v", err)
	}
	cr.off += int64(size)
	return cr, nil
}

// read reads n bytes into the Reader's buffer, growing it only as the data
// arrives: a corrupt length costs no more memory than the file has.
func (r *Reader) read(n int) ([]byte, error) {
	if n <= cap(r.buf) || n <= writeBuffer {
		if cap(r.buf) < n {
			r.buf = make([]byte, n)
		}
		r.buf = r.buf[:n]
		_, err := io.ReadFull(r.r, r.buf)
		return r.buf, err
	}
	var b bytes.Buffer
	if _, err := io.CopyN(&b, r.r, int64(n)); err != nil {
		return nil, err
	}
	r.buf = b.Bytes()
	return r.buf, nil
}

func (r *Reader) corrupt(format string, args ...any) *CorruptError {
	return &CorruptError{Offset: r.off, Record: r.n, Msg: fmt.Sprintf(format, args...)}
}

// Next returns the next record. After the End record it returns io.EOF;
// a capture that stops before it, or whose bytes are damaged, gives a
// *CorruptError, then the same error at every call.
func (r *Reader) Next() (Record, error) {
	if r.err != nil {
		return Record{}, r.err
	}
	rec, err := r.next()
	if err != nil && !errors.Is(err, io.EOF) {
		r.err = err
	}
	return rec, err
}

// next is Next before the damage.
func (r *Reader) next() (Record, error) {
	if r.ended {
		return Record{}, io.EOF
	}
	var prefix [recordPrefix]byte
	n, err := io.ReadFull(r.r, prefix[:])
	if n == 0 && errors.Is(err, io.EOF) {
		return Record{}, &CorruptError{Offset: r.off, Record: r.n, Msg: truncated}
	}
	if err != nil {
		return Record{}, r.corrupt("a record's header is cut short after %d of %d bytes", n, recordPrefix)
	}
	k := Kind(prefix[0])
	size := binary.LittleEndian.Uint32(prefix[1:])
	if k == 0 || k >= kindLimit {
		return Record{}, r.corrupt("unknown record kind %d", prefix[0])
	}
	if size > maxRecord {
		return Record{}, r.corrupt("%s record: %d bytes long (at most %d)", k, size, maxRecord)
	}
	data, err := r.read(int(size))
	if err != nil {
		return Record{}, r.corrupt("%s record: cut short (it is %d bytes long)", k, size)
	}
	if crc32.Update(crc32.Update(0, crcTable(), prefix[:1]), crcTable(), data) != binary.LittleEndian.Uint32(prefix[5:]) {
		return Record{}, r.corrupt("%s record: its checksum does not match", k)
	}
	r.off += int64(recordPrefix) + int64(size)
	r.n++
	if k == End {
		r.ended = true
		return Record{}, io.EOF
	}
	return Record{Kind: k, Data: data}, nil
}

// Unexpected is the error of a found record where the reader's user
// needed one of kind want: the records are not those a trace writes.
func (r *Reader) Unexpected(found, want Kind) error {
	return r.corrupt("%s record where an %s record was due", found, want)
}

// Corrupt is the error of a record whose payload err cannot decode.
func (r *Reader) Corrupt(err error) error {
	return r.corrupt("%v", err)
}
