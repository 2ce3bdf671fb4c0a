package runtime

import (
	"fmt"

	"github.com/cilium/ebpf"

	"github.com/gotrace/gotrace/codegen"
	"github.com/gotrace/gotrace/lang"
)

// handle acts on one ring-buffer record. The caller holds t.mu.
func (t *tracer) handle(raw []byte) error {
	ev, data, err := splitRecord(t.spec.Events, raw)
	if err != nil {
		return err
	}
	switch ev.Kind {
	case codegen.EventPrintf:
		return t.printf(ev, data)
	case codegen.EventPrint:
		if ev.Map == "" {
			return t.printValue(ev, data)
		}
		return t.printMap(ev.Map, ev.Top, ev.Div)
	case codegen.EventClear, codegen.EventZero:
		m, em, err := t.userMap(ev.Map)
		if err != nil {
			return err
		}
		return clearMap(m, em, ev.Kind == codegen.EventZero)
	case codegen.EventExit:
		t.requestExit()
		return nil
	case codegen.EventTime:
		return t.printTime(ev)
	case codegen.EventSystem:
		return t.system(ev, data)
	case codegen.EventCat:
		return t.cat(ev, data)
	case codegen.EventJoin:
		return t.join(ev, data)
	case codegen.EventLoad:
		return t.loadedObjects()
	}
	return fmt.Errorf("decode record: unknown event kind %d", ev.Kind)
}

// userMap finds a user map's layout and its kernel map.
func (t *tracer) userMap(name string) (*codegen.Map, *ebpf.Map, error) {
	for i := range t.spec.Maps {
		if t.spec.Maps[i].Name == name {
			em := t.coll.Maps[name]
			if em == nil {
				return nil, nil, fmt.Errorf("map %s is missing from the collection", name)
			}
			return &t.spec.Maps[i], em, nil
		}
	}
	return nil, nil, fmt.Errorf("map %s is not in the program", name)
}

// reportLost prints "Lost N events" for the records the programs could not
// reserve since the last report. The caller holds t.mu.
func (t *tracer) reportLost() {
	m := t.coll.Maps[t.spec.LostMap]
	if m == nil {
		return
	}
	var perCPU []uint64
	if err := m.Lookup(uint32(0), &perCPU); err != nil {
		return
	}
	var total uint64
	for _, n := range perCPU {
		total += n
	}
	if total > t.lost {
		t.printLost(total - t.lost)
		t.lost = total
	}
}

// reportFull warns about maps that refused updates because they were
// full. The caller holds t.mu.
func (t *tracer) reportFull() {
	m := t.coll.Maps[t.spec.FullMap]
	if m == nil || t.opts.NoWarnings {
		return
	}
	for i := range t.spec.Maps {
		var perCPU []uint64
		if err := m.Lookup(uint32(i), &perCPU); err != nil {
			continue
		}
		var total uint64
		for _, n := range perCPU {
			total += n
		}
		if total > 0 {
			fmt.Fprintf(t.opts.Err, "WARNING: map %s was full: %d updates were dropped (BPFTRACE_MAP_KEYS_MAX is %d)\n", t.spec.Maps[i].Name, total, t.mapKeysMax())
		}
	}
}

func (t *tracer) mapKeysMax() int {
	if t.opts.MapKeysMax > 0 {
		return t.opts.MapKeysMax
	}
	return lang.DefaultMapKeysMax
}
