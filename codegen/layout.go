package codegen

import (
	"github.com/gotrace/gotrace/codegen/layout"
	"github.com/gotrace/gotrace/lang"
)

// Layout lays out values of the given types one after the other, the way
// records, map keys, map values and tuples hold them: every field starts
// at a multiple of 8; integers (of any declared size, already sign- or
// zero-extended) and pointers take 8 bytes; a string takes its buffer
// size rounded up to 8 (Field.Size is the buffer size); a buf takes a u64
// length followed by its data; a tuple nests its own Layout. It returns
// the fields and the total size, a multiple of 8.
func Layout(types ...lang.Type) ([]layout.Field, int) {
	fields := make([]layout.Field, 0, len(types))
	off := 0
	for _, t := range types {
		f := field(t)
		f.Offset = off
		fields = append(fields, f)
		off += sizeOf(t)
	}
	return fields, off
}

// field describes a value of type t at offset 0.
func field(t lang.Type) layout.Field {
	f := layout.Field{Kind: fieldKind(t.Kind), Size: sizeOf(t), Signed: t.Signed}
	switch t.Kind {
	case lang.KindString:
		f.Size = t.Size
	case lang.KindBuf:
		f.Size = 8 + t.Size
	case lang.KindTuple:
		f.Elems, _ = Layout(t.Elems...)
		f.Names = t.Names
	case lang.KindIntArray:
		elem := field(*t.Elem)
		elem.Size = t.Elem.Size
		f.Size, f.Elems = t.Size, []layout.Field{elem}
	case lang.KindStack:
		f.StackFrames, f.StackPerf, f.StackKernel = t.StackFrames, t.StackPerf, t.StackKernel
	}
	if t.Boolean {
		f.Kind = layout.Bool
	}
	if t.Enum != nil {
		f.EnumNames = t.Enum.Names
	}
	if t.Hash {
		f.Kind = layout.Hash
	}
	return f
}

// fieldKind is the layout kind of values of kind k: what user space
// decodes them as. Everything without a kind of its own (struct
// addresses, aggregations read as numbers) is an integer.
func fieldKind(k lang.Kind) layout.Kind {
	if lk, ok := fieldKinds[k]; ok {
		return lk
	}
	return layout.Int
}

var fieldKinds = map[lang.Kind]layout.Kind{
	lang.KindPointer: layout.Pointer, lang.KindString: layout.String, lang.KindBuf: layout.Buf,
	lang.KindTuple: layout.Tuple, lang.KindInet: layout.Inet, lang.KindTimestamp: layout.Timestamp,
	lang.KindUsym: layout.Usym, lang.KindKsym: layout.Ksym, lang.KindErrno: layout.Errno, lang.KindSignal: layout.Signal, lang.KindSyscall: layout.Syscall, lang.KindUsername: layout.Username,
	lang.KindStack: layout.Stack, lang.KindProbe: layout.Probe, lang.KindIntArray: layout.Array,
	lang.KindMacaddr: layout.Macaddr, lang.KindCgroupPath: layout.CgroupPath,
}

// mapKinds are the layout kinds of maps whose values are aggregations;
// a map of any other values is a layout.MapValue map.
var mapKinds = map[lang.Kind]layout.MapKind{
	lang.KindCount: layout.MapCount, lang.KindSum: layout.MapSum, lang.KindMin: layout.MapMin,
	lang.KindMax: layout.MapMax, lang.KindAvg: layout.MapAvg, lang.KindStats: layout.MapStats,
	lang.KindHist: layout.MapHist, lang.KindLhist: layout.MapLhist, lang.KindTseries: layout.MapTseries,
}

// sizeOf is the number of bytes a value of type t takes in the scratch
// area, a record or a map: a multiple of 8.
func sizeOf(t lang.Type) int {
	switch t.Kind {
	case lang.KindString, lang.KindIntArray:
		return align8(t.Size)
	case lang.KindBuf:
		return 8 + align8(t.Size)
	case lang.KindTuple:
		size := 0
		for _, e := range t.Elems {
			size += sizeOf(e)
		}
		return size
	case lang.KindInet:
		return inetSize
	case lang.KindTimestamp:
		return timestampSize
	case lang.KindCgroupPath:
		return cgroupPathSize
	case lang.KindNone, lang.KindVoid:
		return 0
	}
	return 8
}

// inetSize is the size of ntop()'s value: a u64 address family (AF_INET
// or AF_INET6) followed by 16 bytes of address, as bpftrace lays it out.
const inetSize = 24

// timestampSize is the size of strftime()'s value: a u64 index into
// Spec.TimeFormats followed by the u64 bpf_ktime_get_ns time. Each value
// carries its own format, so one variable or map can hold times of
// several formats, as in bpftrace.
const timestampSize = 16

// cgroupPathSize is the size of cgroup_path()'s value: the u64 cgroup id
// followed by a u64 index into Spec.CgroupFilters.
const cgroupPathSize = 16

// isScalar reports whether values of type t are lowered into a register
// (integers, pointers, struct addresses) rather than into memory.
func isScalar(t lang.Type) bool {
	switch t.Kind {
	case lang.KindString, lang.KindBuf, lang.KindTuple, lang.KindInet, lang.KindTimestamp, lang.KindIntArray, lang.KindCgroupPath:
		return false
	}
	return true
}
