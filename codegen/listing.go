package codegen

import (
	"fmt"
	"io"
	"maps"
	"slices"
)

// WriteListing prints the maps of the spec in name order, then each
// attachment's program: its instructions with the script position and
// text each statement's code starts with. It is what gotrace -d codegen
// prints, and what the golden tests compare.
func (s *Spec) WriteListing(w io.Writer) {
	for _, name := range slices.Sorted(maps.Keys(s.Collection.Maps)) {
		m := s.Collection.Maps[name]
		fmt.Fprintf(w, "map %s: %s %s key %d value %d max %d\n", name, m.Name, m.Type, m.KeySize, m.ValueSize, m.MaxEntries)
	}
	for _, a := range s.Attachments {
		ps := s.Collection.Programs[a.Program]
		fmt.Fprintf(w, "\nprogram %s (%s, %s) sites %v:\n%v", a.Program, ps.Type, a.ProbeName, a.Sites, ps.Instructions)
	}
}
