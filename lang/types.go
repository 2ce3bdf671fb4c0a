package lang

import (
	"fmt"
	"slices"
	"strings"
)

// Kind is the kind of a Type.
type Kind int

// The type kinds of the language. The aggregation kinds (KindCount ...
// KindTseries) only appear as map values.
const (
	KindNone Kind = iota
	// KindInt is an integer of Size 1, 2, 4 or 8 bytes; Signed says whether
	// it is signed. Literals and builtins are 8-byte integers.
	KindInt
	// KindString is a NUL-terminated string in a buffer of Size bytes
	// (string[64] by default).
	KindString
	// KindBuf is buf(p, n)'s result: Size bytes of data plus a length.
	KindBuf
	// KindTuple has Elems; a record (bpftrace 0.25) has Names too.
	KindTuple
	// KindPointer points to Elem (nil Elem: a pointer to an integer of the
	// size in Size, or void).
	KindPointer
	// KindStruct is a struct defined in the script; Struct names it.
	KindStruct
	KindCount
	KindSum
	KindAvg
	KindMin
	KindMax
	KindStats
	KindHist
	KindLhist
	// KindTseries is tseries()'s time series (bpftrace 0.24).
	KindTseries
	// KindTimestamp is strftime()'s result.
	KindTimestamp
	// KindUsym is usym()'s result.
	KindUsym
	// KindKsym is ksym()'s result: a kernel address that prints as the
	// name of the kernel function that holds it.
	KindKsym
	// KindErrno is strerror()'s result: a u64 errno that prints as the C
	// library's message for it.
	KindErrno
	// KindSignal is signal_name()'s result: a u64 signal number that
	// prints as the C library's description of it.
	KindSignal
	// KindSyscall is syscall_name()'s result: a u64 system call number
	// that prints as the call's name.
	KindSyscall
	// KindUsername is the username builtin: a u64 uid that prints as the
	// user's name.
	KindUsername
	// KindInet is ntop()'s result.
	KindInet
	// KindStack is ustack()'s result, and kstack's (StackKernel).
	KindStack
	// KindVoid is the type of calls that produce no value (printf, exit).
	KindVoid
	// KindArray is a fixed-size array in a script struct (`uint8_t h[32]`):
	// Elem is the element type, Len the element count, Size the whole size
	// in bytes. `char x[N]` fields are strings (String(N)) instead.
	KindArray
	// KindProbe is the probe builtin: the full name of the attach point
	// that fired (usdt:PATH:PROVIDER:NAME), known to user space by the
	// attachment it came from rather than carried as text.
	KindProbe
	// KindIntArray is an array value (bpftrace 0.19's casts to arrays,
	// `(int8[8])12345`, `(uint8[])"ab"`): Len elements of the integer
	// or bool type Elem, packed as in C, Size bytes, held as strings are
	// rather than addressed as KindArray is.
	KindIntArray
	// KindMacaddr is macaddr()'s result: a u64 whose first six bytes in
	// memory are a MAC address, which prints as 00:1C:42:B5:20:09.
	KindMacaddr
	// KindCgroupPath is cgroup_path()'s result: a cgroup id that prints
	// as the paths of the cgroup in the hierarchies its call's filter
	// names.
	KindCgroupPath
)

// Type is the type of an expression, a map key or a map value.
type Type struct {
	Kind   Kind
	Size   int
	Signed bool
	Elems  []Type
	Elem   *Type
	Struct string
	// Len is a KindArray's number of elements.
	Len int
	// Names are a record's field names, one per element of Elems; nil
	// for a tuple.
	Names []string
	// Local marks a pointer that `&` made (bpftrace 0.22), which points
	// to the tracer's own variable or map value, an array field of a
	// tracepoint's record and an array read from a map: kernel memory,
	// whatever the probe, also when a variable holds it. Equal ignores it.
	Local bool
	// StackFrames is a KindStack's frame limit (ustack(N), else
	// DefaultStackFrames) and StackPerf says it prints in perf's format
	// (ustack(perf)). Equal ignores both, as bpftrace's type check does.
	StackFrames int
	StackPerf   bool
	// StackKernel says a KindStack is the kernel's stack (kstack).
	StackKernel bool
	// Boolean marks the bool type (Bool): a one-byte unsigned integer,
	// 0 or 1, that prints as false or true.
	Boolean bool
	// Hash marks hash256()'s buffer (a gotrace extension): 32 bytes that
	// print in reverse order as one hex number, as bitcoin-cli shows a
	// hash stored little-endian.
	Hash bool
	// Enum marks the values of an enum (an enumerator, or a cast to the
	// enum): integers that current bpftrace prints by their enumerator's
	// name. Equal ignores it: they are integers to every operator.
	Enum *Enum
}

// FieldOrder returns, for each field of record to, the index of the field
// of the same name in record from: a record assigned where one with the
// same names in another order is kept (bpftrace 0.25) goes field by
// field. It returns nil when the two are not records of the same names.
func FieldOrder(to, from Type) []int {
	if to.Names == nil || len(to.Names) != len(from.Names) {
		return nil
	}
	order := make([]int, len(to.Names))
	for i, name := range to.Names {
		order[i] = slices.Index(from.Names, name)
		if order[i] < 0 {
			return nil
		}
	}
	return order
}

// DefaultStackFrames is how many frames ustack keeps without a limit.
const DefaultStackFrames = 127

// MaxStackFrames is the most frames a ustack or kstack limit may ask
// for, as bpftrace 0.17 allows; the kernel's own limit
// (kernel.perf_event_max_stack, 127 by default) is checked at load.
const MaxStackFrames = 1024

// Int returns the integer type of the given size and signedness.
func Int(size int, signed bool) Type { return Type{Kind: KindInt, Size: size, Signed: signed} }

// Int64 is the type of integer literals and most builtins.
var Int64 = Type{Kind: KindInt, Size: 8, Signed: true}

// Bool is the type of true, false and casts to bool (bpftrace 0.24):
// an integer to every operator, printed as true or false.
var Bool = Type{Kind: KindInt, Size: 1, Boolean: true}

// Hash256 is hash256()'s type: a buf of 32 bytes that prints reversed in
// hex.
var Hash256 = Type{Kind: KindBuf, Size: 32, Hash: true}

// Uint64 is the type of unsigned 64-bit builtins such as nsecs.
var Uint64 = Type{Kind: KindInt, Size: 8}

// String returns the string type with a buffer of size bytes.
func String(size int) Type { return Type{Kind: KindString, Size: size} }

// IsAggregation reports whether t is one of the aggregation kinds.
func (t Type) IsAggregation() bool { return t.Kind >= KindCount && t.Kind <= KindTseries }

// IsInt reports whether t is an integer.
func (t Type) IsInt() bool { return t.Kind == KindInt }

// Equal reports whether t and u are the same type.
func (t Type) Equal(u Type) bool {
	if t.Kind != u.Kind || t.Size != u.Size || t.Signed != u.Signed || t.Hash != u.Hash || t.Struct != u.Struct || t.Len != u.Len || len(t.Elems) != len(u.Elems) || t.StackKernel != u.StackKernel || !slices.Equal(t.Names, u.Names) {
		return false
	}
	for i := range t.Elems {
		if !t.Elems[i].Equal(u.Elems[i]) {
			return false
		}
	}
	if (t.Elem == nil) != (u.Elem == nil) {
		return false
	}
	return t.Elem == nil || t.Elem.Equal(*u.Elem)
}

// String formats t the way bpftrace names types in its messages:
// int64, uint32, string[64], buf[16], (int64,string[4]), uint8 *, count ...
func (t Type) String() string {
	switch t.Kind {
	case KindNone:
		return "none"
	case KindInt:
		if t.Boolean {
			return "bool"
		}
		if t.Signed {
			return fmt.Sprintf("int%d", t.Size*8)
		}
		return fmt.Sprintf("uint%d", t.Size*8)
	case KindString:
		return fmt.Sprintf("string[%d]", t.Size)
	case KindBuf:
		return fmt.Sprintf("buffer[%d]", t.Size)
	case KindTuple:
		parts := make([]string, len(t.Elems))
		for i, e := range t.Elems {
			parts[i] = e.String()
			if t.Names != nil {
				parts[i] = t.Names[i] + "=" + parts[i]
			}
		}
		return "(" + strings.Join(parts, ",") + ")"
	case KindPointer:
		if t.Elem == nil {
			return "void *"
		}
		return t.Elem.String() + " *"
	case KindStruct:
		return "struct " + t.Struct
	case KindCount:
		return "count"
	case KindSum:
		return "sum"
	case KindAvg:
		return "avg"
	case KindMin:
		return "min"
	case KindMax:
		return "max"
	case KindStats:
		return "stats"
	case KindHist:
		return "hist"
	case KindLhist:
		return "lhist"
	case KindTseries:
		return "tseries"
	case KindTimestamp:
		return "timestamp"
	case KindUsym:
		return "usym"
	case KindKsym:
		return "ksym"
	case KindUsername:
		return "username"
	case KindErrno:
		return "strerror"
	case KindSignal:
		return "signal_name"
	case KindSyscall:
		return "syscall_name"
	case KindInet:
		return "inet"
	case KindStack:
		if t.StackKernel {
			return "kstack"
		}
		return "ustack"
	case KindVoid:
		return "none"
	case KindProbe:
		return "probe"
	case KindMacaddr:
		return "macaddr"
	case KindCgroupPath:
		return "cgroup_path"
	case KindArray, KindIntArray:
		return fmt.Sprintf("%s[%d]", t.Elem.String(), t.Len)
	}
	return fmt.Sprintf("kind(%d)", int(t.Kind))
}

// commonTypes are the types most expressions have, which internType
// shares rather than copies.
var commonTypes = []Type{
	Int64, Uint64, Int(4, true), Int(4, false), Int(2, true), Int(2, false), Int(1, true), Int(1, false),
	Bool, String(64), {Kind: KindVoid}, {},
}

// internType returns a pointer to a type identical to t: one of
// commonTypes where t is one of them, else a copy of t.
func internType(t Type) *Type {
	for i := range commonTypes {
		if identicalScalar(&commonTypes[i], &t) {
			return &commonTypes[i]
		}
	}
	c := t
	return &c
}

// identicalScalar reports whether a and b are the same type without
// element types, field for field (Equal ignores some fields: the stack
// frame limit, the enum).
func identicalScalar(a, b *Type) bool {
	return a.Elems == nil && b.Elems == nil && a.Elem == nil && b.Elem == nil && a.Names == nil && b.Names == nil && a.Local == b.Local &&
		a.Kind == b.Kind && a.Size == b.Size && a.Signed == b.Signed && a.Struct == b.Struct &&
		a.Len == b.Len && a.StackFrames == b.StackFrames && a.StackPerf == b.StackPerf &&
		a.StackKernel == b.StackKernel && a.Boolean == b.Boolean && a.Hash == b.Hash && a.Enum == b.Enum
}
