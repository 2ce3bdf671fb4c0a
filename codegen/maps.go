package codegen

import (
	"github.com/cilium/ebpf/asm"

	"github.com/gotrace/gotrace/lang"
)

// bpfAny is BPF_ANY, the map update flag that creates or replaces.
const bpfAny = 0

// userMap is a map of the script as the code generator sees it: its
// layout in the Spec, its key and value types from the checker, and what
// layoutMaps worked out of them.
type userMap struct {
	*Map
	Info *lang.MapInfo
	mapShape
}

// mapOf returns the map named name and its index in Spec.Maps (and in
// the CountersMap counters).
func (f *fn) mapOf(n lang.Node, name string) (userMap, int, error) {
	shape, ok := f.c.maps[name]
	if !ok {
		return userMap{}, 0, f.c.errorf(n, "map %s unknown to the checker", name)
	}
	return userMap{&f.c.spec.Maps[shape.index], shape.info, shape}, shape.index, nil
}

// keyAt is where a map key was built: at base+off, base the scratch
// register or the frame pointer.
type keyAt struct {
	base asm.Register
	off  int
}

// keyPtr sets r to the address of key k.
func (f *fn) keyPtr(r asm.Register, k keyAt) {
	f.emit(asm.Mov.Reg(r, k.base))
	if k.off != 0 {
		f.emit(asm.Add.Imm(r, int32(k.off)))
	}
}

// mapKey builds the key of e in place in a scratch buffer of m.KeySize
// bytes and returns where it is. The key's fields write all their bytes
// (valueAs pads strings and tuples), so only the bytes after them are
// zeroed here. For hist and lhist maps the caller fills the bucket index
// in the last 8 bytes. A key-less map's key, 8 zero bytes (4 for an
// array), is the zero stack slot: no store, and no scratch cache line to
// touch.
func (f *fn) mapKey(e *lang.MapExpr, m userMap) (keyAt, error) {
	bucketed := m.Kind.Bucketed()
	if len(e.Keys) == 0 && len(m.KeyFields) == 0 && !bucketed && (m.KeySize == 8 || m.Array) {
		return keyAt{f.fp, slotZero}, nil
	}
	off := f.alloc(m.KeySize)
	end := m.KeySize
	if bucketed {
		end -= 8
	}
	types := m.keyTypes
	start := 0
	for _, t := range types {
		start += sizeOf(t)
	}
	if end > start {
		f.zero(regScratch, off+start, end-start)
	}
	switch {
	case len(e.Keys) == 0 && len(m.KeyFields) == 0:
	case len(e.Keys) == len(m.KeyFields):
		for i, k := range e.Keys {
			if err := f.valueAs(k, off+m.KeyFields[i].Offset, types[i]); err != nil {
				return keyAt{}, err
			}
		}
	case len(e.Keys) == 1 && m.Info.Key.Kind == lang.KindTuple:
		// @m[$t] with a tuple variable as the whole key.
		if err := f.valueAs(e.Keys[0], off, m.Info.Key); err != nil {
			return keyAt{}, err
		}
	default:
		return keyAt{}, f.c.errorf(e, "map %s used with %d keys, declared with %d", e.Name, len(e.Keys), len(m.KeyFields))
	}
	return keyAt{regScratch, off}, nil
}

// lookup emits bpf_map_lookup_elem(map, key): R0 is the value pointer or
// NULL.
func (f *fn) lookup(name string, key keyAt) {
	f.emit(asm.LoadMapPtr(asm.R1, 0).WithReference(name))
	f.keyPtr(asm.R2, key)
	f.emit(asm.FnMapLookupElem.Call())
}

// lookupInt sets R0 to the u64 at the start of the value for key, or 0
// when there is none.
func (f *fn) lookupInt(name string, key keyAt) {
	found, end := f.label("found"), f.label("lookupend")
	f.lookup(name, key)
	f.emit(asm.JNE.Imm(asm.R0, 0, found), asm.Ja.Label(end))
	f.place(found)
	f.emit(asm.LoadMem(asm.R0, asm.R0, 0, asm.DWord))
	f.place(end)
}

// update emits bpf_map_update_elem(map, key, scratch+voff, ANY) and
// counts a failure (a full map) in CountersMap.
func (f *fn) update(name string, index int, key keyAt, voff int) {
	ok := f.label("updated")
	f.emit(asm.LoadMapPtr(asm.R1, 0).WithReference(name))
	f.keyPtr(asm.R2, key)
	f.scratchPtr(asm.R3, voff)
	f.emit(
		asm.Mov.Imm(asm.R4, bpfAny),
		asm.FnMapUpdateElem.Call(),
		asm.JSGE.Imm(asm.R0, 0, ok),
	)
	f.incrementCounter(fullCounter(index))
	f.place(ok)
}

// mapReadInt lowers a read of an integer map element into R0; a missing
// element reads as 0. A count, sum, min, max or avg reads as it prints,
// merged over the CPUs (bpftrace 0.22).
func (f *fn) mapReadInt(e *lang.MapExpr) error {
	m, _, err := f.mapOf(e, e.Name)
	if err != nil {
		return err
	}
	switch m.Info.Value.Kind {
	case lang.KindStats, lang.KindHist, lang.KindLhist, lang.KindTseries:
		return f.c.errorf(e, "reading %s map %s: %w", m.Info.Value, e.Name, ErrUnsupported)
	}
	// An array the script reads from the map, stored as its bytes
	// (storedType).
	array := f.typeOf(e).Kind == lang.KindArray && m.Info.Value.Kind == lang.KindIntArray
	if !isScalar(m.Info.Value) && !array {
		return f.c.errorf(e, "map %s holds %s, not an integer", e.Name, m.Info.Value)
	}
	koff, err := f.mapKey(e, m)
	if err != nil {
		return err
	}
	if array {
		// An array is held by its address, as a struct's array member
		// is: the element's bytes in the map, or 0 where the map has
		// none, which reads as zeroes (inKernel).
		found := f.label("arrayfound")
		f.lookup(e.Name, koff)
		// The verifier takes no arithmetic on a pointer that may be
		// NULL: checked, it is a pointer on one path and 0 on the other.
		f.emit(asm.JNE.Imm(asm.R0, 0, found), asm.Mov.Imm(asm.R0, 0))
		f.place(found)
		return nil
	}
	if !m.PerCPU {
		f.lookupInt(e.Name, koff)
		return nil
	}
	// The callback that reads each CPU's value finds the key through
	// the scratch register.
	key := koff.off
	if koff.base != regScratch {
		key = f.alloc(m.KeySize)
		f.zero(regScratch, key, m.KeySize)
	}
	shared, pop, err := f.callbackFrame(e)
	if err != nil {
		return err
	}
	defer pop()
	return f.mergeCPUs(e, e.Name, m, shared, key, f.alloc(8))
}

// mapReadValue lowers a read of a string or tuple map element into the
// scratch area at off, as a value of type t (e's own, or the record a
// struct is stored as); a missing element reads as zeroes.
func (f *fn) mapReadValue(e *lang.MapExpr, off int, t lang.Type) error {
	m, _, err := f.mapOf(e, e.Name)
	if err != nil {
		return err
	}
	koff, err := f.mapKey(e, m)
	if err != nil {
		return err
	}
	found, end := f.label("found"), f.label("lookupend")
	f.lookup(e.Name, koff)
	f.emit(asm.JNE.Imm(asm.R0, 0, found))
	f.zero(regScratch, off, sizeOf(t))
	f.emit(asm.Ja.Label(end))
	f.place(found)
	f.emit(asm.Mov.Reg(asm.R7, asm.R0))
	if err := f.convert(regScratch, off, t, asm.R7, 0, m.Info.Value); err != nil {
		return f.c.errorf(e, "%w", err)
	}
	f.place(end)
	return nil
}

// assignMap lowers `@m[k] op= v` for plain (non-aggregation) maps.
func (f *fn) assignMap(s *lang.AssignStmt, e *lang.MapExpr) error {
	m, index, err := f.mapOf(e, e.Name)
	if err != nil {
		return err
	}
	vt := m.Info.Value
	if vt.IsAggregation() {
		return f.c.errorf(s, "map %s holds %s: assign it with %s()", e.Name, vt, vt)
	}
	voff := f.alloc(m.ValueSize)
	if s.Op == "=" {
		if err := f.mapValueAs(s.RHS, voff, vt); err != nil {
			return err
		}
		koff, err := f.mapKey(e, m)
		if err != nil {
			return err
		}
		f.update(e.Name, index, koff, voff)
		return nil
	}
	if !isScalar(vt) {
		return f.c.errorf(s, "operator %s on %s: %w", s.Op, vt, ErrUnsupported)
	}
	koff, err := f.mapKey(e, m)
	if err != nil {
		return err
	}
	f.lookupInt(e.Name, koff)
	if err := f.applyRHS(s, vt); err != nil {
		return err
	}
	f.emit(memAt(asm.StoreMem(regScratch, 0, asm.R0, asm.DWord), voff))
	f.update(e.Name, index, koff, voff)
	return nil
}

// mapValueAs lowers e into the scratch area at off as a value of map
// value type vt. An integer narrower than 64 bits keeps its own bits but
// is extended by the map's signedness, as bpftrace stores it: (uint8)255
// into an int8 map is -1, (int8)-1 into a uint8 map 255.
func (f *fn) mapValueAs(e lang.Expr, off int, vt lang.Type) error {
	t := f.typeOf(e)
	if vt.Kind != lang.KindInt || t.Kind != lang.KindInt || t.Size >= 8 || t.Signed == vt.Signed {
		return f.valueAs(e, off, vt)
	}
	if err := f.intExpr(e); err != nil {
		return err
	}
	f.emit(extend(asm.R0, t.Size, vt.Signed)...)
	f.emit(memAt(asm.StoreMem(regScratch, 0, asm.R0, asm.DWord), off))
	return nil
}

// mapIncDec lowers @m[k]++ and friends; R0 is the old value (postfix)
// or the new one (prefix).
func (f *fn) mapIncDec(e *lang.IncDec, x *lang.MapExpr, delta int32) error {
	m, index, err := f.mapOf(x, x.Name)
	if err != nil {
		return err
	}
	if !isScalar(m.Info.Value) || m.Info.Value.IsAggregation() {
		return f.c.errorf(e, "%s on map %s of %s", e.Op, x.Name, m.Info.Value)
	}
	koff, err := f.mapKey(x, m)
	if err != nil {
		return err
	}
	voff := f.alloc(8)
	found, done := f.label("incfound"), f.label("incdone")
	f.lookup(x.Name, koff)
	f.emit(
		asm.JNE.Imm(asm.R0, 0, found),
		asm.Mov.Imm(asm.R0, delta),
		memAt(asm.StoreMem(regScratch, 0, asm.R0, asm.DWord), voff),
	)
	f.update(x.Name, index, koff, voff)
	f.emit(
		memAt(asm.LoadMem(asm.R0, regScratch, 0, asm.DWord), voff),
		asm.Ja.Label(done),
	)
	// A key that is there changes in place: an update would build a new
	// element and free the old one, a second hash operation per hit. Like
	// the update, the add is not atomic, as in bpftrace.
	f.place(found)
	f.emit(
		asm.Mov.Reg(asm.R1, asm.R0),
		asm.LoadMem(asm.R0, asm.R1, 0, asm.DWord),
		asm.Add.Imm(asm.R0, delta),
		asm.StoreMem(asm.R1, 0, asm.R0, asm.DWord),
	)
	f.place(done)
	if e.Post {
		f.emit(asm.Add.Imm(asm.R0, -delta))
	}
	return nil
}

// deleteElem lowers delete(@m[k]) and delete(@m, k...), the element
// the checker found (Info.MapElement).
func (f *fn) deleteElem(call *lang.Call) error {
	e := f.mapElement(call)
	m, _, err := f.mapOf(e, e.Name)
	if err != nil {
		return err
	}
	bucketed := m.Kind.Bucketed()
	if bucketed && m.Array {
		return f.c.errorf(call, "delete() on key-less %s map %s: %w (clear() empties it)", m.Info.Value, e.Name, ErrUnsupported)
	}
	if m.Array {
		// A key-less count() is a per-CPU array, whose elements stay:
		// user space zeroes it on every CPU, and bpftrace 0.17 prints
		// the deleted count as 0 too.
		if err := f.event(call, Event{Kind: EventZero, Map: e.Name}, nil, eventsMapName); err != nil {
			return err
		}
		f.emit(asm.Mov.Imm(asm.R0, 0))
		return nil
	}
	key, err := f.mapKey(e, m)
	if err != nil {
		return err
	}
	if bucketed {
		f.deleteBuckets(e.Name, key, m)
		return nil
	}
	f.emit(asm.LoadMapPtr(asm.R1, 0).WithReference(e.Name))
	f.keyPtr(asm.R2, key)
	f.emit(asm.FnMapDeleteElem.Call())
	return nil
}

// deleted lowers delete() as a value: 1 when the element was there and
// is gone, 0 when there was none.
func (f *fn) deleted(call *lang.Call) error {
	e := f.mapElement(call)
	if m, _, err := f.mapOf(e, e.Name); err == nil && m.Kind.Bucketed() {
		return f.c.errorf(call, "the result of delete() on %s map %s: %w", m.Info.Value, e.Name, ErrUnsupported)
	}
	if err := f.deleteElem(call); err != nil {
		return err
	}
	f.isZero(asm.R0)
	return nil
}

// hasKey lowers has_key(@m, k...): 1 when the element exists, else 0.
func (f *fn) hasKey(call *lang.Call) error {
	e := f.mapElement(call)
	m, _, err := f.mapOf(e, e.Name)
	if err != nil {
		return err
	}
	key, err := f.mapKey(e, m)
	if err != nil {
		return err
	}
	f.lookup(e.Name, key)
	f.isZero(asm.R0)
	f.emit(asm.Xor.Imm(asm.R0, 1))
	return nil
}

// mapElement is the map element delete() or has_key() call names, as
// the checker found it: the argument of delete(@m[k]), or what it made
// of the map and keys of delete(@m, k...) and has_key(@m, k...).
func (f *fn) mapElement(call *lang.Call) *lang.MapExpr {
	e := f.c.info.MapElement(call)
	assert(e != nil, call, call.Name+"() without the map element the checker found")
	return e
}

// isZero sets r to 1 when it is 0 and to 0 otherwise.
func (f *fn) isZero(r asm.Register) {
	yes, end := f.label("zero"), f.label("zeroend")
	f.emit(asm.JEq.Imm(r, 0, yes), asm.Mov.Imm(r, 0), asm.Ja.Label(end))
	f.place(yes)
	f.emit(asm.Mov.Imm(r, 1))
	f.place(end)
}

// deleteBuckets deletes one key of a hashed hist or lhist map: an element
// per bucket, the bucket index being the key's last u64. The loop is
// bounded by the bucket count (at most 66 for hist; lhist's count is
// checked when it is declared).
func (f *fn) deleteBuckets(name string, key keyAt, m userMap) {
	bucket := key.off + m.KeySize - 8
	loop := f.label("delbucket")
	f.emit(storeImm64(key.base, bucket, 0))
	f.place(loop)
	f.emit(asm.LoadMapPtr(asm.R1, 0).WithReference(name))
	f.keyPtr(asm.R2, key)
	f.emit(
		asm.FnMapDeleteElem.Call(),
		memAt(asm.LoadMem(asm.R1, key.base, 0, asm.DWord), bucket),
		asm.Add.Imm(asm.R1, 1),
		memAt(asm.StoreMem(key.base, 0, asm.R1, asm.DWord), bucket),
		asm.JLT.Imm(asm.R1, int32(m.buckets), loop),
	)
}
