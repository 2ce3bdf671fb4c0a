package codegen

import (
	"testing"

	"github.com/cilium/ebpf"

	"github.com/gotrace/gotrace/lang"
)

// TestStackMaps checks that every frame limit of ustack gets its own
// stack trace map, sized by the limit, and that the loaded programs pass
// the verifier.
func TestStackMaps(t *testing.T) {
	spec := compileSource(t, `BEGIN { @a[ustack] = count(); @b[ustack(perf, 3)] = count(); $s = ustack(3); printf("%s\n", ustack(5)); }`)
	want := map[int]bool{lang.DefaultStackFrames: true, 3: true, 5: true}
	for frames := range want {
		m := spec.Collection.Maps[StackMap(frames)]
		if m == nil {
			t.Errorf("no map %s", StackMap(frames))
			continue
		}
		if m.Type != ebpf.StackTrace || m.KeySize != 4 || m.ValueSize != uint32(8*frames) {
			t.Errorf("map %s: type %v, key %d, value %d bytes; want a stack trace map of %d frames", StackMap(frames), m.Type, m.KeySize, m.ValueSize, frames)
		}
	}
	n := 0
	for _, m := range spec.Collection.Maps {
		if m.Type == ebpf.StackTrace {
			n++
		}
	}
	if n != len(want) {
		t.Errorf("%d stack maps, want %d", n, len(want))
	}
	load(t, spec)
}
