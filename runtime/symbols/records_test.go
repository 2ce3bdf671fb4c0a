package symbols

import (
	"encoding/binary"
	"fmt"
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/gotrace/gotrace/usdt"
)

// encodeRecord lays out a ring buffer record of type typ with misc flags
// and body, as the kernel writes one.
func encodeRecord(typ uint32, misc uint16, body []byte) []byte {
	b := binary.LittleEndian.AppendUint32(nil, typ)
	b = binary.LittleEndian.AppendUint16(b, misc)
	b = binary.LittleEndian.AppendUint16(b, uint16(recordHeaderSize+len(body)))
	return append(b, body...)
}

// u32s and u64s encode little-endian words.
func u32s(vs ...uint32) []byte {
	var b []byte
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint32(b, v)
	}
	return b
}

func u64s(vs ...uint64) []byte {
	var b []byte
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint64(b, v)
	}
	return b
}

// mmap2Body is the body of an MMAP2 record of /usr/lib/libx.so (NUL
// padded to 8 bytes) mapped executable, then its time.
func mmap2Body() []byte {
	b := u32s(10, 11)
	b = append(b, u64s(0x7f0000001000, 0x2000, 0x1000)...)
	b = append(b, u32s(8, 1)...)
	b = append(b, u64s(4242, 0)...)
	b = append(b, u32s(unix.PROT_READ|unix.PROT_EXEC, unix.MAP_PRIVATE)...)
	b = append(b, "/usr/lib/libx.so\x00\x00\x00\x00\x00\x00\x00\x00"...)
	return append(b, u64s(99)...)
}

func TestParseRecord(t *testing.T) {
	for _, tt := range []struct {
		name   string
		record []byte
		want   perfRecord
		err    string
	}{
		{"mmap2", encodeRecord(unix.PERF_RECORD_MMAP2, 0, mmap2Body()), perfRecord{kind: recordMmap, pid: 10, tid: 11, time: 99,
			mapping: Mapping{Start: 0x7f0000001000, End: 0x7f0000003000, Offset: 0x1000, Path: "/usr/lib/libx.so", Dev: unix.Mkdev(8, 1), Ino: 4242},
			prot:    unix.PROT_READ | unix.PROT_EXEC}, ""},
		{"mmap2 with a build id", encodeRecord(unix.PERF_RECORD_MMAP2, unix.PERF_RECORD_MISC_MMAP_BUILD_ID, mmap2Body()), perfRecord{kind: recordMmap, pid: 10, tid: 11, time: 99,
			mapping: Mapping{Start: 0x7f0000001000, End: 0x7f0000003000, Offset: 0x1000, Path: "/usr/lib/libx.so"},
			prot:    unix.PROT_READ | unix.PROT_EXEC}, ""},
		{"mmap2 cut short", encodeRecord(unix.PERF_RECORD_MMAP2, 0, mmap2Body()[:40]), perfRecord{}, "needs"},
		{"exec", encodeRecord(unix.PERF_RECORD_COMM, unix.PERF_RECORD_MISC_COMM_EXEC, append(append(u32s(5, 5), "sh\x00\x00\x00\x00\x00\x00"...), u64s(7)...)),
			perfRecord{kind: recordExec, pid: 5, tid: 5, time: 7}, ""},
		{"rename", encodeRecord(unix.PERF_RECORD_COMM, 0, append(append(u32s(5, 6), "worker\x00\x00"...), u64s(7)...)), perfRecord{kind: recordOther}, ""},
		{"fork", encodeRecord(unix.PERF_RECORD_FORK, 0, append(u32s(20, 10, 20, 10), u64s(3, 3)...)), perfRecord{kind: recordFork, pid: 20, ppid: 10, tid: 20, time: 3}, ""},
		{"exit", encodeRecord(unix.PERF_RECORD_EXIT, 0, append(u32s(20, 10, 21, 10), u64s(4, 4)...)), perfRecord{kind: recordExit, pid: 20, ppid: 10, tid: 21, time: 4}, ""},
		{"lost", encodeRecord(unix.PERF_RECORD_LOST, 0, u64s(1, 17)), perfRecord{kind: recordLost, lost: 17}, ""},
		{"other", encodeRecord(unix.PERF_RECORD_SAMPLE, 0, u64s(1)), perfRecord{kind: recordOther}, ""},
		{"short header", []byte{1, 2, 3}, perfRecord{}, "shorter than a header"},
		{"size past the end", encodeRecord(unix.PERF_RECORD_LOST, 0, u64s(1, 17))[:12], perfRecord{}, "says 24 bytes, 12 there"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseRecord(tt.record)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want one saying %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

// FuzzParseRecord checks that no input makes the record parser panic or
// read past the record, and that a parsed mapping is well formed.
func FuzzParseRecord(f *testing.F) {
	f.Add(encodeRecord(unix.PERF_RECORD_MMAP2, 0, mmap2Body()))
	f.Add(encodeRecord(unix.PERF_RECORD_FORK, 0, append(u32s(20, 10, 20, 10), u64s(3, 3)...)))
	f.Add(encodeRecord(unix.PERF_RECORD_COMM, unix.PERF_RECORD_MISC_COMM_EXEC, append(u32s(5, 5), u64s(7, 7)...)))
	f.Fuzz(func(t *testing.T, b []byte) {
		rec, err := parseRecord(b)
		if err != nil {
			return
		}
		if rec.kind == recordMmap && strings.IndexByte(rec.mapping.Path, 0) >= 0 {
			t.Errorf("path %q holds a NUL", rec.mapping.Path)
		}
	})
}

func TestParseCPUList(t *testing.T) {
	for _, tt := range []struct {
		text string
		want string
		err  bool
	}{
		{"0\n", "[0]", false},
		{"0-3,6", "[0 1 2 3 6]", false},
		{"", "", true},
		{"3-1", "", true},
		{"x", "", true},
	} {
		got, err := parseCPUList(tt.text)
		if (err != nil) != tt.err {
			t.Errorf("parseCPUList(%q) error %v, want error %v", tt.text, err, tt.err)
			continue
		}
		if err == nil && fmt.Sprint(got) != tt.want {
			t.Errorf("parseCPUList(%q) = %v, want %s", tt.text, got, tt.want)
		}
	}
}

// TestRingRead reads records from a ring whose second record wraps around
// its end, as the kernel leaves them, and checks the tail is advanced past
// all of them.
func TestRingRead(t *testing.T) {
	fork := encodeRecord(unix.PERF_RECORD_FORK, 0, append(u32s(20, 10, 20, 10), u64s(3, 3)...))
	exec := encodeRecord(unix.PERF_RECORD_COMM, unix.PERF_RECORD_MISC_COMM_EXEC, append(append(u32s(20, 20), "sh\x00\x00\x00\x00\x00\x00"...), u64s(5)...))
	const size = 128
	r := &ring{meta: &unix.PerfEventMmapPage{}, data: make([]byte, size)}
	// The fork record ends 8 bytes before the end; the exec record's
	// header fits there and its body wraps to the start.
	start := uint64(size - 8 - len(fork))
	stream := append(append([]byte{}, fork...), exec...)
	for i, b := range stream {
		r.data[(start+uint64(i))%size] = b
	}
	r.meta.Data_tail, r.meta.Data_head = start, start+uint64(len(stream))
	bad := 0
	recs := r.read(nil, &bad)
	want := []perfRecord{{kind: recordFork, pid: 20, ppid: 10, tid: 20, time: 3}, {kind: recordExec, pid: 20, tid: 20, time: 5}}
	if fmt.Sprint(recs) != fmt.Sprint(want) || bad != 0 {
		t.Errorf("read %+v (%d bad), want %+v", recs, bad, want)
	}
	if r.meta.Data_tail != r.meta.Data_head {
		t.Errorf("tail %d, want the head %d", r.meta.Data_tail, r.meta.Data_head)
	}
}

// TestApplyRecords checks what the records make of processes' mappings:
// a mapping replaces what it overlaps, an exec starts afresh, a fork
// inherits its parent's, and a process from before tracking keeps its
// /proc start state under the records.
func TestApplyRecords(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	mmap := func(pid int, start, end uint64) perfRecord {
		return perfRecord{kind: recordMmap, pid: pid, tid: pid, prot: unix.PROT_EXEC, mapping: Mapping{Start: start, End: end, Path: exe}}
	}
	starts := func(ms Mappings) string {
		var b strings.Builder
		for _, m := range ms {
			fmt.Fprintf(&b, "%#x-%#x ", m.Start, m.End)
		}
		return strings.TrimSpace(b.String())
	}
	s := New(0, nil, &usdt.Files{})
	s.tracked[1] = &trackedProcess{maps: Mappings{{Start: 0x100, End: 0x200, Path: exe}}}
	for _, rec := range []perfRecord{
		mmap(1, 0x1000, 0x2000),
		mmap(1, 0x1800, 0x3000),
		{kind: recordFork, pid: 2, ppid: 1, tid: 2},
		{kind: recordFork, pid: 1, ppid: 1, tid: 7},
		{kind: recordExec, pid: 2, tid: 2},
		mmap(2, 0x5000, 0x6000),
		{kind: recordFork, pid: 3, ppid: 9, tid: 3},
	} {
		s.apply(rec)
	}
	for _, tt := range []struct {
		pid  int
		want string
		ok   bool
	}{
		{1, "0x100-0x200 0x1800-0x3000", true},
		{2, "0x5000-0x6000", true},
		{3, "", false},
	} {
		ms, ok := s.trackedMappings(tt.pid, nil)
		if got := starts(ms); got != tt.want || ok != tt.ok {
			t.Errorf("process %d: mappings %q (%v), want %q (%v)", tt.pid, got, ok, tt.want, tt.ok)
		}
	}
	if s.procs.threads[7] != 1 {
		t.Errorf("thread 7 belongs to %d, want 1", s.procs.threads[7])
	}
}
