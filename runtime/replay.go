package runtime

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/gotrace/gotrace/codegen"
	"github.com/gotrace/gotrace/codegen/layout"
	"github.com/gotrace/gotrace/lang"
	"github.com/gotrace/gotrace/runtime/capture"
	"github.com/gotrace/gotrace/runtime/output"
	"github.com/gotrace/gotrace/runtime/symbols"
)

// A capture (-w) holds the records as the programs wrote them and, after
// each, what printing it read from the running system besides the record:
// a map's entries, a symbol, the time. A replay feeds both to the same
// handlers the live trace runs, so that a capture prints as the live
// trace would have; only the output goes somewhere else: nowhere under -w,
// Out in a replay.

// captureHeader is what a replay of spec's records needs.
func captureHeader(p *lang.Program, spec *codegen.Spec) *capture.Header {
	h := &capture.Header{File: p.File, Source: p.Source, Newer: p.Newer,
		Events: spec.Events, Maps: spec.Maps, TimeFormats: spec.TimeFormats}
	for _, a := range spec.Attachments {
		h.Probes = append(h.Probes, a.ProbeName)
	}
	return h
}

// startCapture writes the capture's header.
func (pr *printer) startCapture() error {
	if pr.opts.Capture == nil {
		return nil
	}
	var err error
	pr.capture, err = capture.NewWriter(pr.opts.Capture, captureHeader(pr.prog, pr.spec))
	return err
}

// record writes a record to the capture under -w; otherwise it does
// nothing. The caller holds pr.mu, or is the only goroutine left.
func (pr *printer) record(k capture.Kind, payload []byte) {
	if pr.capture == nil {
		return
	}
	if err := pr.capture.Write(k, payload); err != nil {
		pr.keepErr(err)
		pr.loop.requestExit()
	}
}

// recordUint64 records a record whose payload is v.
func (pr *printer) recordUint64(k capture.Kind, v uint64) {
	if pr.capture != nil {
		pr.record(k, binary.LittleEndian.AppendUint64(nil, v))
	}
}

// replayed returns the payload of the next record of a replay, which must
// be of kind k: the input that the handler asking for it read in the live
// trace. An error is kept in pr.replayErr, which ends the replay.
func (pr *printer) replayed(k capture.Kind) []byte {
	if pr.replayErr != nil {
		return nil
	}
	rec, err := pr.replay.Next()
	switch {
	case errors.Is(err, io.EOF):
		pr.replayErr = pr.replay.Unexpected(capture.End, k)
	case err != nil:
		pr.replayErr = err
	case rec.Kind != k:
		pr.replayErr = pr.replay.Unexpected(rec.Kind, k)
	default:
		return rec.Data
	}
	return nil
}

// input returns what resolve reads from the running system: live, the
// result of resolve, also recorded under -w; in a replay, what was
// recorded.
func (pr *printer) input(resolve func() string) string {
	if pr.replay != nil {
		return string(pr.replayed(capture.Input))
	}
	s := resolve()
	pr.record(capture.Input, []byte(s))
	return s
}

// resolvedKind reports whether a field of kind k prints as something read
// from the running system (resolve), which a capture records.
func resolvedKind(k layout.Kind) bool {
	return k == layout.Usym || k == layout.Ksym || k == layout.Stack || k == layout.Username || k == layout.CgroupPath
}

// resolvesFields reports whether decoding fields resolves one of them.
func resolvesFields(fields []layout.Field) bool {
	for _, f := range fields {
		if resolvedKind(f.Kind) || resolvesFields(f.Elems) {
			return true
		}
	}
	return false
}

// resolve names what a field of a resolved kind holds: a symbol, a stack
// (indented by indent), a user name, a cgroup's paths.
func (pr *printer) resolve(f layout.Field, b []byte, indent string) string {
	switch f.Kind {
	case layout.Usym:
		return pr.syms.Name(u64(b, 0))
	case layout.Ksym:
		return symbols.KsymText(u64(b, 0))
	case layout.Stack:
		return pr.stackText(u64(b, 0), f, indent)
	case layout.CgroupPath:
		filter := ""
		if i := u64(b, 8); i < uint64(len(pr.spec.CgroupFilters)) {
			filter = pr.spec.CgroupFilters[i]
		}
		return pr.cgroups.text(u64(b, 0), filter)
	}
	return pr.userName(u64(b, 0))
}

// printedEntries reads the entries of map m to print them: from the
// kernel, recorded under -w, or from the capture in a replay.
func (pr *printer) printedEntries(m *codegen.Map) ([]*mapEntry, error) {
	if pr.replay != nil {
		data := pr.replayed(capture.Entries)
		if pr.replayErr != nil {
			return nil, pr.replayErr
		}
		// The inputs that decoding the keys reads reuse the reader's
		// buffer.
		entries, err := decodeEntries(m, bytes.Clone(data))
		if err != nil {
			pr.replayErr = pr.replay.Corrupt(err)
			return nil, pr.replayErr
		}
		return entries, nil
	}
	entries, err := pr.kernelEntries(m)
	if err == nil && pr.capture != nil {
		pr.record(capture.Entries, encodeEntries(entries))
	}
	return entries, err
}

// kernelEntries reads the entries of map m from the kernel.
func (pr *printer) kernelEntries(m *codegen.Map) ([]*mapEntry, error) {
	em, err := pr.kernelMap(m)
	if err != nil {
		return nil, err
	}
	return readMap(m, em)
}

// encodeEntries lays entries out as an Entries record: a u32 count, then
// for each entry its key and its value (each a u32 length plus one, 0 for
// none, then the bytes), its u64 count, its i64 total, its buckets (a
// u32 number, then a u64 each) and its tseries intervals (a u32 number,
// then a u64 epoch and a u64 value each), little-endian.
func encodeEntries(entries []*mapEntry) []byte {
	b := binary.LittleEndian.AppendUint32(nil, uint32(len(entries)))
	bytesField := func(v []byte) {
		if v == nil {
			b = binary.LittleEndian.AppendUint32(b, 0)
			return
		}
		b = binary.LittleEndian.AppendUint32(b, uint32(len(v))+1)
		b = append(b, v...)
	}
	for _, e := range entries {
		bytesField(e.Key)
		bytesField(e.Value)
		b = binary.LittleEndian.AppendUint64(b, e.Count)
		b = binary.LittleEndian.AppendUint64(b, uint64(e.Total))
		b = binary.LittleEndian.AppendUint32(b, uint32(len(e.Buckets)))
		for _, n := range e.Buckets {
			b = binary.LittleEndian.AppendUint64(b, n)
		}
		b = binary.LittleEndian.AppendUint32(b, uint32(len(e.Intervals)))
		for _, iv := range e.Intervals {
			b = binary.LittleEndian.AppendUint64(b, iv.Epoch)
			b = binary.LittleEndian.AppendUint64(b, iv.Value.Bits)
		}
	}
	return b
}

// decodeEntries reads an Entries record of map m, checking that each key
// and value holds the fields m lays out in them.
func decodeEntries(m *codegen.Map, b []byte) ([]*mapEntry, error) {
	short := fmt.Errorf("decode entries of %s: cut short", m.Name)
	u32 := func() (int, bool) {
		if len(b) < 4 {
			return 0, false
		}
		v := binary.LittleEndian.Uint32(b)
		b = b[4:]
		return int(v), true
	}
	bytesField := func(least int) ([]byte, error) {
		n, ok := u32()
		switch {
		case !ok:
			return nil, short
		case n == 0:
			if least > 0 {
				return nil, fmt.Errorf("decode entries of %s: no bytes where %d are laid out", m.Name, least)
			}
			return nil, nil
		case n-1 > len(b):
			return nil, short
		case n-1 < least:
			return nil, fmt.Errorf("decode entries of %s: %d bytes where %d are laid out", m.Name, n-1, least)
		}
		v := b[: n-1 : n-1]
		b = b[n-1:]
		return v, nil
	}
	keyLeast, valueLeast := fieldsEnd(m.KeyFields), 0
	if m.Kind == layout.MapValue {
		valueLeast = fieldsEnd([]layout.Field{m.Value})
	}
	n, ok := u32()
	if !ok {
		return nil, short
	}
	var entries []*mapEntry
	for range n {
		var e mapEntry
		var err error
		if e.Key, err = bytesField(keyLeast); err != nil {
			return nil, err
		}
		if e.Value, err = bytesField(valueLeast); err != nil {
			return nil, err
		}
		if len(b) < 20 {
			return nil, short
		}
		e.Count, e.Total = binary.LittleEndian.Uint64(b), int64(binary.LittleEndian.Uint64(b[8:]))
		b = b[16:]
		buckets, _ := u32()
		if buckets > maxBuckets || buckets*8 > len(b) {
			return nil, short
		}
		for range buckets {
			e.Buckets = append(e.Buckets, binary.LittleEndian.Uint64(b))
			b = b[8:]
		}
		intervals, ok := u32()
		if !ok || intervals*16 > len(b) {
			return nil, short
		}
		for range intervals {
			e.Intervals = append(e.Intervals, output.Interval{Epoch: binary.LittleEndian.Uint64(b), Value: intervalValue(m.Tseries, binary.LittleEndian.Uint64(b[8:]))})
			b = b[16:]
		}
		entries = append(entries, &e)
	}
	if len(b) != 0 {
		return nil, fmt.Errorf("decode entries of %s: %d bytes after the last entry", m.Name, len(b))
	}
	return entries, nil
}

// fieldsEnd is where the last of fields ends.
func fieldsEnd(fields []layout.Field) int {
	end := 0
	for _, f := range fields {
		end = max(end, f.Offset+f.Size)
	}
	return end
}

// Replay prints a capture read from r as the trace that wrote it printed,
// to opts.Out in opts.Format; errorf() and warnf() go to opts.Err. It
// returns what that trace's Run returned for its records (a runtime error,
// an ExitStatus) or, for a capture cut short or damaged, a
// *capture.CorruptError once everything before the damage is printed.
func Replay(r io.Reader, opts Options) error {
	format, err := output.ParseFormat(opts.Format)
	if err != nil {
		return err
	}
	if opts.Err == nil {
		opts.Err = io.Discard
	}
	rd, err := capture.NewReader(r)
	if err != nil {
		return err
	}
	h := &rd.Header
	spec := &codegen.Spec{Events: h.Events, Maps: h.Maps, TimeFormats: h.TimeFormats}
	for _, probe := range h.Probes {
		spec.Attachments = append(spec.Attachments, codegen.Attachment{ProbeName: probe})
	}
	pr := &printer{
		opts:   opts,
		prog:   &lang.Program{File: h.File, Source: h.Source, Newer: h.Newer},
		spec:   spec,
		loop:   newEventLoop(),
		out:    newOutput(opts.Out, format, opts, h.Newer),
		replay: rd,
	}
	err = pr.replayRecords()
	if ferr := pr.out.Flush(); err == nil {
		err = ferr
	}
	switch {
	case err != nil:
		return err
	case pr.runErr == nil && pr.exitStatus != 0:
		return pr.exitStatus
	}
	return pr.runErr
}

// replayRecords hands every record of pr.replay to what handled it in the
// live trace. It stops at the first record it cannot read.
func (pr *printer) replayRecords() error {
	for {
		rec, err := pr.replay.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		switch rec.Kind {
		case capture.Event:
			// The inputs that handling it reads reuse the reader's
			// buffer.
			pr.keepErr(pr.handle(bytes.Clone(rec.Data)))
		case capture.Attached, capture.Lost:
			n, err := rec.Uint64()
			if err != nil {
				return pr.replay.Corrupt(err)
			}
			if rec.Kind == capture.Lost {
				pr.printLost(n)
			} else {
				pr.keepErr(pr.attaching(int(n)))
			}
		case capture.Clock:
			n, err := rec.Uint64()
			if err != nil {
				return pr.replay.Corrupt(err)
			}
			pr.bootWall = time.Unix(0, int64(n))
		case capture.PrintMaps:
			pr.keepErr(pr.printAllMaps())
		case capture.ExitMaps:
			pr.keepErr(pr.printExitMaps())
		default:
			return pr.replay.Unexpected(rec.Kind, capture.Event)
		}
		if pr.replayErr != nil {
			return pr.replayErr
		}
	}
}
