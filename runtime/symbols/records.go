package symbols

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"golang.org/x/sys/unix"
)

// The records the mapping tracker reads from a dummy perf event's ring
// buffer (see Track), as perf_event_open(2) lays them out. Each starts
// with a header {type u32, misc u16, size u16}; the tracker asks for
// sample_id_all with PERF_SAMPLE_TIME only, so every record but FORK and
// EXIT (whose body has its own time) ends in the u64 time it happened.
const (
	recordHeaderSize = 8
	// recordTimeSize is the sample_id trailer: the time alone.
	recordTimeSize = 8
)

// recordKind tells the records the tracker keeps apart.
type recordKind int

const (
	// recordOther is a record the tracker has no use for (it is skipped).
	recordOther recordKind = iota
	recordMmap
	recordExec
	recordFork
	recordExit
	recordLost
)

// perfRecord is one parsed ring buffer record: the fields of the kinds the
// tracker keeps.
type perfRecord struct {
	kind     recordKind
	pid, tid int
	// ppid is the parent's process id of a FORK record: a new process
	// when it differs from pid, a new thread otherwise.
	ppid int
	// time orders records read from different CPUs' rings.
	time uint64
	// mapping is an MMAP2 record's file mapping; prot its protection.
	mapping Mapping
	prot    uint32
	// lost counts the records the kernel dropped (a LOST record).
	lost uint64
}

// parseRecord parses the record at the start of b (one whole record, as
// long as its header's size says); a record of a kind the tracker does not
// keep parses as recordOther. It never reads past b.
func parseRecord(b []byte) (perfRecord, error) {
	if len(b) < recordHeaderSize {
		return perfRecord{}, fmt.Errorf("parse perf record: %d bytes, shorter than a header", len(b))
	}
	le := binary.LittleEndian
	typ, misc, size := le.Uint32(b), le.Uint16(b[4:]), int(le.Uint16(b[6:]))
	if size < recordHeaderSize || size > len(b) {
		return perfRecord{}, fmt.Errorf("parse perf record: type %d says %d bytes, %d there", typ, size, len(b))
	}
	body := b[recordHeaderSize:size]
	need := func(n int) error {
		if len(body) < n {
			return fmt.Errorf("parse perf record: type %d has %d bytes, needs %d", typ, len(body), n)
		}
		return nil
	}
	trailerTime := func() uint64 { return le.Uint64(body[len(body)-recordTimeSize:]) }
	switch typ {
	case unix.PERF_RECORD_MMAP2:
		// pid, tid u32; addr, len, pgoff u64; then maj, min u32, ino,
		// ino_generation u64 (or a build id, with the misc flag);
		// prot, flags u32; filename, NUL-padded to 8 bytes; time.
		const fixed = 8 + 24 + 24 + 8
		if err := need(fixed + recordTimeSize); err != nil {
			return perfRecord{}, err
		}
		r := perfRecord{kind: recordMmap, pid: int(le.Uint32(body)), tid: int(le.Uint32(body[4:])), time: trailerTime()}
		start, length, pgoff := le.Uint64(body[8:]), le.Uint64(body[16:]), le.Uint64(body[24:])
		r.mapping = Mapping{Start: start, End: start + length, Offset: pgoff}
		if misc&unix.PERF_RECORD_MISC_MMAP_BUILD_ID == 0 {
			r.mapping.Dev = unix.Mkdev(le.Uint32(body[32:]), le.Uint32(body[36:]))
			r.mapping.Ino = le.Uint64(body[40:])
		}
		r.prot = le.Uint32(body[56:])
		name := body[fixed : len(body)-recordTimeSize]
		if i := bytes.IndexByte(name, 0); i >= 0 {
			name = name[:i]
		}
		r.mapping.Path = string(name)
		return r, nil
	case unix.PERF_RECORD_COMM:
		// pid, tid u32; comm, NUL-padded; time. Only an exec's matters:
		// it replaces the process's mappings.
		if err := need(8 + recordTimeSize); err != nil {
			return perfRecord{}, err
		}
		if misc&unix.PERF_RECORD_MISC_COMM_EXEC == 0 {
			return perfRecord{kind: recordOther}, nil
		}
		return perfRecord{kind: recordExec, pid: int(le.Uint32(body)), tid: int(le.Uint32(body[4:])), time: trailerTime()}, nil
	case unix.PERF_RECORD_FORK, unix.PERF_RECORD_EXIT:
		// pid, ppid, tid, ptid u32; time u64 (then the trailer).
		if err := need(24); err != nil {
			return perfRecord{}, err
		}
		kind := recordFork
		if typ == unix.PERF_RECORD_EXIT {
			kind = recordExit
		}
		return perfRecord{kind: kind, pid: int(le.Uint32(body)), ppid: int(le.Uint32(body[4:])), tid: int(le.Uint32(body[8:])), time: le.Uint64(body[16:])}, nil
	case unix.PERF_RECORD_LOST:
		// id, lost u64.
		if err := need(16); err != nil {
			return perfRecord{}, err
		}
		return perfRecord{kind: recordLost, lost: le.Uint64(body[8:])}, nil
	}
	return perfRecord{kind: recordOther}, nil
}
