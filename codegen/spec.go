// Package codegen lowers a checked bpftrace program into eBPF: programs built
// with cilium/ebpf's asm package, map specs, and the tables user space needs
// to decode events and maps. It never touches the kernel: the same program
// and the same targets always give the same Spec.
package codegen

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/cilium/ebpf"

	"github.com/gotrace/gotrace/codegen/layout"
	"github.com/gotrace/gotrace/internal/printf"
	"github.com/gotrace/gotrace/lang"
	"github.com/gotrace/gotrace/usdt"
)

// Spec is everything the runtime needs to load, attach and read a program,
// and to decode and print what it writes: record and map layouts, parsed
// formats and map kinds are in the Spec's own types (package layout and
// package printf), so user space never consults the script.
type Spec struct {
	// Collection holds every program and map. Map keys are the names the
	// tables below use (user maps by their script name, "@x").
	Collection *ebpf.CollectionSpec
	// Attachments says where each program attaches, in script order.
	Attachments []Attachment
	// Events describes every record the programs write to the ring
	// buffers, indexed by the record's leading u64 id.
	Events []Event
	// Maps describes every user map, sorted by name.
	Maps []Map
	// TimeFormats are the formats of the script's strftime() calls, in
	// the order they were compiled; a KindTimestamp value starts with an
	// index into it.
	TimeFormats []string
	// CgroupFilters are the filters of the script's cgroup_path() calls
	// ("" for a call without one), in the order they were compiled; a
	// KindCgroupPath value's second u64 is an index into it.
	CgroupFilters []string
	// EventsMap is the ring buffer for printf-like records, "" when no
	// program writes one; ControlMap the small one for exit and errors.
	// Both are keys of Collection.Maps.
	EventsMap  string
	ControlMap string
	// CountersMap is a one-element array whose value counts, in u64s the
	// programs add to atomically, the records that could not be reserved
	// and, for each element of Maps, the updates that failed, usually
	// because the map held MapKeysMax entries: DecodeCounters reads it.
	CountersMap string
	// Loops says the script has a while or for loop, whose stops at
	// MaxLoopIterations CountersMap counts too.
	Loops bool
	// BufCuts says the script has a buf() of more than 1024 bytes, whose
	// reads cut to its size CountersMap counts too.
	BufCuts bool
	// StartMap is a one-entry u64 array: the runtime stores the start time
	// (bpf_ktime_get_ns clock, CLOCK_MONOTONIC) in it before running BEGIN;
	// the elapsed builtin subtracts it from nsecs.
	StartMap string
	// ExitedMap is a one-entry u64 array: exit() sets it to 1 before it
	// sends its record, and from then on USDT, uprobe and interval
	// programs return at once, so no printf follows exit's record (as in
	// bpftrace, which stops reading). The runtime may set it too, say on
	// Ctrl-C before it runs END. It is "" when the script never calls
	// exit(): then no program checks a flag.
	ExitedMap string
	// LoaderProgram, set with Options.WatchLoader, is the key in
	// Collection.Programs of the program the runtime attaches to the
	// dynamic loader's _dl_debug_state, which the loader calls when it has
	// mapped or unmapped objects: it writes an EventLoad record to the
	// control ring and stops the process with SIGSTOP, for the runtime to
	// attach to the probes of new objects before it sends SIGCONT.
	LoaderProgram string
	// Family, set with Options.Family, names the maps and programs that
	// keep a -c command's family in the kernel; nil without.
	Family *FamilySpec
}

// Attachment is one program and the place it runs.
type Attachment struct {
	// Program is the key in Collection.Programs.
	Program string
	// Probe is the attach point of the script that produced it, as
	// written, for messages; ProbePos is where it is in the script, for
	// positioned errors and to tell attach points apart.
	Probe    string
	ProbePos lang.Span
	Kind     lang.ProbeKind
	// Path is the ELF file for USDT and uprobes.
	Path string
	// USDT: the resolved probe; Sites has one entry per location, each
	// with the cookie the program dispatches on to read its arguments.
	USDT  *usdt.Probe
	Sites []Site
	// Tracepoint: the tracepoint and its record's fields.
	Tracepoint *lang.Tracepoint
	// Uprobe: the symbol, or an address when Symbol is empty. Watchpoint:
	// the address watched.
	Symbol  string
	Address uint64
	// Watchpoint: how many bytes it watches and the accesses it fires on
	// (the kernel's HW_BREAKPOINT_R, _W and _X bits).
	WatchLen    uint64
	WatchAccess uint32
	// Interval and profile: the period (interval:s:1 is one second). BEGIN,
	// END and interval programs are run by the runtime with
	// BPF_PROG_TEST_RUN; profile programs on a CPU clock event per CPU.
	Period time.Duration
	// Profile: samples per second on each CPU (profile:hz:N) instead of a
	// period.
	Frequency uint64
	// Software and hardware: the perf event (PERF_COUNT_SW_* or
	// PERF_COUNT_HW_*) and how many of its events make one hit.
	PerfConfig, Count uint64
	// ProbeName is the text of the probe builtin in this program
	// (usdt:PATH:PROVIDER:NAME, uprobe:PATH:SYMBOL, BEGIN, interval:s:1).
	ProbeName string
}

// Site is one USDT location to attach to.
type Site struct {
	// Offset and SemaphoreOffset are file offsets (link.UprobeOptions'
	// Address and RefCtrOffset).
	Offset          uint64
	SemaphoreOffset uint64
	// Cookie is passed to the kernel and read with bpf_get_attach_cookie.
	Cookie uint64
}

// EventKind says what a ring-buffer record asks user space to do.
type EventKind int

// The record kinds.
const (
	// EventPrintf: format Format with Args.
	EventPrintf EventKind = iota + 1
	// EventPrint: print map Map (print(@m, Top, Div)), or print the value
	// in Args[0] when Map is empty.
	EventPrint
	// EventClear and EventZero: clear or zero map Map.
	EventClear
	EventZero
	// EventExit: stop tracing, run END, print maps; Args[0], when there
	// is one, is exit(code)'s code.
	EventExit
	// EventTime: print the time with strftime-like Format (time()).
	EventTime
	// EventSystem: run Format formatted with Args as a shell command
	// (--unsafe).
	EventSystem
	// EventCat: print the file named by Format formatted with Args.
	EventCat
	// EventErrorf and EventWarnf: print Parts formatted with Args as a
	// run-time error or warning at Pos (errorf(), warnf()).
	EventErrorf
	EventWarnf
	// EventJoin: print the argv strings in Args joined by Format.
	EventJoin
	// EventLoad: the dynamic loader of the -c command has changed its list
	// of objects, and stopped the process (see Spec.LoaderProgram).
	EventLoad
)

// Event describes one kind of ring-buffer record. Every record starts with
// a u64 holding the index of its Event in Spec.Events.
type Event struct {
	Kind EventKind
	// Format is the format string of printf, system and cat as written,
	// time()'s strftime format, or join()'s separator.
	Format string
	// Parts is Format as the checker parsed it, for printf, system and
	// cat.
	Parts []printf.Part
	// Args are the record's fields after the id, as Layout lays them out.
	Args []layout.Field
	// Map, Top and Div belong to print, clear and zero.
	Map string
	Top int64
	Div int64
	// Pos is the call in the script, for runtime errors.
	Pos lang.Span
}

// Map describes one user map and how its key and value are laid out.
type Map struct {
	// Name is the script name ("@x") and the key in Collection.Maps.
	Name string
	// Kind is the map's aggregation, or MapValue for a map of assigned
	// values.
	Kind layout.MapKind
	// Lhist holds lhist()'s bounds when Kind is MapLhist.
	Lhist layout.Lhist
	// HistBits is hist(v, bits)'s bits when Kind is MapHist.
	HistBits int
	// Tseries holds tseries()'s arguments when Kind is MapTseries.
	Tseries layout.Tseries
	// Value lays out the value of a MapValue map.
	Value layout.Field
	// KeyFields lay out the key (one per tuple element; none for a map
	// without keys). Hist, lhist and tseries maps append a u64 bucket index after
	// them, at offset KeySize-8. A map without keys and without buckets
	// has a single all-zero u64 key (KeySize 8).
	KeyFields []layout.Field
	KeySize   int
	// ValueSize is the size of one CPU's value. PerCPU maps are merged in
	// user space.
	ValueSize int
	PerCPU    bool
	// Array is set for a per-CPU array, whose 4-byte key is an index and
	// whose elements cannot be deleted: clear() zeroes them. A key-less
	// count() is one element. A key-less hist or lhist has an element per
	// bucket, indexed by bucket, and a last one that is non-zero while the
	// map holds a histogram: zero() keeps it, clear() zeroes it, so that
	// they print as bpftrace's hashed histograms do.
	Array bool
}

// The layout of CountersMap's value: the records lost, then one counter of
// failed updates per element of Spec.Maps.
const lostCounter = 0

// fullCounter is the offset of the failed-update counter of Spec.Maps[i];
// fullCounter(len(Maps)) is where the loop counter follows them.
func fullCounter(i int) int { return 8 * (1 + i) }

// loopCounter is the offset of the count of loops stopped at
// MaxLoopIterations, after the per-map counters; the value holds it only
// when the script has a loop (Spec.Loops), so that the others
// keep their layout.
func (s *Spec) loopCounter() int { return fullCounter(len(s.Maps)) }

// bufCutCounter is the offset of the count of buf() reads cut to the
// buf's size, after the loop counter; the value holds it only when the
// script has a buf of more than 1024 bytes (Spec.BufCuts).
func (s *Spec) bufCutCounter() int {
	if s.Loops {
		return s.loopCounter() + 8
	}
	return s.loopCounter()
}

// countersSize is the size of CountersMap's value.
func (s *Spec) countersSize() int {
	if s.BufCuts {
		return s.bufCutCounter() + 8
	}
	return s.bufCutCounter()
}

// Counters are the counts CountersMap holds.
type Counters struct {
	// Lost counts the records that could not be reserved in a ring buffer.
	Lost uint64
	// Full counts, for each element of Spec.Maps, the updates that failed.
	Full []uint64
	// LoopCapped counts the while and for loops stopped at MaxLoopIterations.
	LoopCapped uint64
	// BufCut counts the reads of a buf() of more than 1024 bytes that
	// were longer than the buf and cut to its size.
	BufCut uint64
}

// DecodeCounters decodes CountersMap's value, read as bytes.
func (s *Spec) DecodeCounters(value []byte) (Counters, error) {
	if len(value) != s.countersSize() {
		return Counters{}, fmt.Errorf("decode counters: %d bytes, want %d", len(value), s.countersSize())
	}
	c := Counters{Lost: binary.NativeEndian.Uint64(value[lostCounter:]), Full: make([]uint64, len(s.Maps))}
	for i := range c.Full {
		c.Full[i] = binary.NativeEndian.Uint64(value[fullCounter(i):])
	}
	if s.Loops {
		c.LoopCapped = binary.NativeEndian.Uint64(value[s.loopCounter():])
	}
	if s.BufCuts {
		c.BufCut = binary.NativeEndian.Uint64(value[s.bufCutCounter():])
	}
	return c, nil
}
