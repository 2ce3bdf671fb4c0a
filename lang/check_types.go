package lang

// This file holds the checker's operations on types: merging the types
// of two stores, and naming types in bpftrace's messages.

import (
	"fmt"
	"slices"
	"strings"
)

// mergeTypes returns the type that holds values of both a (the type
// already recorded) and b: strings and buffers grow to the larger size,
// integers keep a's type, tuples merge element by element. ok is false
// when no such type exists.
func mergeTypes(a, b Type) (Type, bool) {
	if a.Kind != b.Kind {
		return a, false
	}
	switch a.Kind {
	case KindInt:
		return a, true
	case KindString, KindBuf:
		if b.Size > a.Size {
			a.Size = b.Size
		}
		return a, true
	case KindTuple:
		if order := FieldOrder(a, b); order != nil && !slices.Equal(a.Names, b.Names) {
			// The same record in another order: b's fields in a's.
			elems := make([]Type, len(order))
			for i, j := range order {
				elems[i] = b.Elems[j]
			}
			b.Elems, b.Names = elems, a.Names
		}
		if len(a.Elems) != len(b.Elems) || !slices.Equal(a.Names, b.Names) {
			return a, false
		}
		elems := make([]Type, len(a.Elems))
		for i := range a.Elems {
			m, ok := mergeTypes(a.Elems[i], b.Elems[i])
			if !ok {
				return a, false
			}
			elems[i] = m
		}
		a.Elems = elems
		return a, true
	case KindPointer, KindStruct, KindArray, KindIntArray:
		return a, a.Equal(b)
	case KindStack:
		return a, a.StackKernel == b.StackKernel
	}
	return a, true
}

// isIntLike reports whether t is an integer or a pointer: what conditions
// and integer arguments accept.
func isIntLike(t Type) bool { return t.Kind == KindInt || t.Kind == KindPointer }

// condName names a condition's type in bpftrace's "Invalid condition"
// messages.
func condName(t Type) string {
	if t.Kind == KindPointer {
		return "pointer"
	}
	return formatTypeName(t)
}

// resolve fills in the sizes of script structs in t.
func (c *checker) resolve(t Type) Type {
	switch t.Kind {
	case KindStruct:
		if def := c.structDef(t.Struct); def != nil {
			t.Size = def.Size
		}
	case KindPointer, KindArray:
		if t.Elem != nil {
			elem := c.resolve(*t.Elem)
			t.Elem = &elem
		}
	}
	return t
}

// typeName names t as bpftrace 0.17 does in its messages ("unsigned
// int8 *", "buffer[9]").
func typeName(t Type) string {
	switch t.Kind {
	case KindInt:
		if t.Signed {
			return fmt.Sprintf("int%d", t.Size*8)
		}
		return fmt.Sprintf("unsigned int%d", t.Size*8)
	case KindBuf:
		return fmt.Sprintf("buffer[%d]", t.Size+1)
	case KindPointer:
		if t.Elem == nil {
			return "void *"
		}
		return typeName(*t.Elem) + " *"
	case KindArray:
		if t.Elem != nil {
			return fmt.Sprintf("%s[%d]", typeName(*t.Elem), t.Len)
		}
	case KindTuple:
		parts := make([]string, len(t.Elems))
		for i, e := range t.Elems {
			parts[i] = typeName(e)
			if t.Names != nil {
				parts[i] = t.Names[i] + "=" + parts[i]
			}
		}
		return "(" + strings.Join(parts, ",") + ")"
	}
	return t.String()
}
