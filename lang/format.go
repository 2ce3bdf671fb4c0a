package lang

import (
	"fmt"

	"github.com/gotrace/gotrace/internal/printf"
)

// The checker parses printf formats with package printf and matches each
// verb against its argument's type here.

// formatAccepts reports whether a value of type t can be formatted by v.
// Integers and pointers go to the integer conversions; strings and the
// values that print as strings (usym, ntop, ustack, strftime, probe) go to
// %s, as do enum values (only newer scripts type them so); buf() goes to
// %r.
func formatAccepts(v *printf.Verb, t Type) bool {
	switch v.Arg() {
	case printf.ArgInt:
		return t.Kind == KindInt || t.Kind == KindPointer
	case printf.ArgString:
		return printsAsString(t) || t.Enum != nil
	}
	return t.Kind == KindBuf
}

// printsAsString reports whether values of type t print as text.
func printsAsString(t Type) bool {
	switch t.Kind {
	case KindString, KindUsym, KindKsym, KindUsername, KindErrno, KindSignal, KindSyscall, KindInet, KindStack, KindTimestamp, KindProbe, KindMacaddr, KindCgroupPath:
		return true
	}
	return false
}

// formatMismatch returns bpftrace's message for an argument of type t that v does
// not accept, such as "%d specifier expects a value of type integer (string
// supplied)", or "" when v accepts t. Callers prefix the function name
// ("printf: ").
func formatMismatch(v *printf.Verb, t Type) string {
	if formatAccepts(v, t) {
		return ""
	}
	return fmt.Sprintf("%s specifier expects a value of type %s (%s supplied)", v.Spec(), v.Arg(), formatTypeName(t))
}

// formatTypeName names t the way bpftrace 0.17 names a type's category in
// printf messages.
func formatTypeName(t Type) string {
	if printsAsString(t) {
		return "string"
	}
	switch t.Kind {
	case KindInt, KindPointer:
		return "integer"
	case KindBuf:
		return "buffer"
	case KindTuple:
		return "tuple"
	case KindStruct:
		return "record"
	case KindNone, KindVoid:
		return "none"
	}
	return t.String()
}
