package runtime

import (
	"fmt"

	"github.com/cilium/ebpf"

	"github.com/gotrace/gotrace/codegen"
	"github.com/gotrace/gotrace/internal/settings"
	"github.com/gotrace/gotrace/lang"
	"github.com/gotrace/gotrace/runtime/capture"
)

// handle acts on one ring-buffer record. The caller holds t.mu.
func (t *tracer) handle(raw []byte) error {
	ev, data, err := splitRecord(t.spec.Events, raw)
	if err != nil {
		return err
	}
	if t.capture != nil {
		t.record(capture.Event, raw)
		if ev.Kind == codegen.EventPrintf {
			// Nothing is printed: only what a replay cannot read from
			// the record is recorded.
			if resolvesFields(ev.Args) {
				t.recordArgs(ev.Args, data)
			}
			return nil
		}
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
		if t.replay != nil {
			return nil
		}
		m, err := t.userMap(ev.Map)
		if err != nil {
			return err
		}
		em, err := t.kernelMap(m)
		if err != nil {
			return err
		}
		return clearMap(m, em, ev.Kind == codegen.EventZero)
	case codegen.EventExit:
		if len(ev.Args) == 1 && t.exitStatus == 0 {
			t.exitStatus = ExitStatus(t.value(ev.Args[0], data[ev.Args[0].Offset:]).Bits)
		}
		t.loop.requestExit()
		return nil
	case codegen.EventTime:
		return t.printTime(ev)
	case codegen.EventSystem:
		return t.system(ev, data)
	case codegen.EventCat:
		return t.cat(ev, data)
	case codegen.EventErrorf, codegen.EventWarnf:
		return t.diagnostic(ev, data)
	case codegen.EventJoin:
		return t.join(ev, data)
	case codegen.EventLoad:
		if t.replay != nil {
			return nil
		}
		return t.loadedObjects()
	}
	return fmt.Errorf("decode record: unknown event kind %d", ev.Kind)
}

// userMap finds a user map's layout.
func (t *tracer) userMap(name string) (*codegen.Map, error) {
	for i := range t.spec.Maps {
		if t.spec.Maps[i].Name == name {
			return &t.spec.Maps[i], nil
		}
	}
	return nil, fmt.Errorf("map %s is not in the program", name)
}

// kernelMap finds a user map's kernel map.
func (t *tracer) kernelMap(m *codegen.Map) (*ebpf.Map, error) {
	em := t.coll.Maps[m.Name]
	if em == nil {
		return nil, fmt.Errorf("map %s is missing from the collection", m.Name)
	}
	return em, nil
}

// counters reads the programs' counters of lost records and failed map
// updates.
func (t *tracer) counters() (codegen.Counters, bool) {
	m := t.coll.Maps[t.spec.CountersMap]
	if m == nil {
		return codegen.Counters{}, false
	}
	var value []byte
	if err := m.Lookup(uint32(0), &value); err != nil {
		return codegen.Counters{}, false
	}
	c, err := t.spec.DecodeCounters(value)
	return c, err == nil
}

// reportLost prints "Lost N events" for the records the programs could not
// reserve since the last report. The caller holds t.mu.
func (t *tracer) reportLost() {
	c, ok := t.counters()
	if ok && c.Lost > t.lost {
		t.printLost(c.Lost - t.lost)
		t.lost = c.Lost
	}
}

// reportFull warns about maps that refused updates because they were
// full, and about loops stopped at their iteration limit. The
// caller holds t.mu.
func (t *tracer) reportFull() {
	if t.opts.NoWarnings {
		return
	}
	c, ok := t.counters()
	if !ok {
		return
	}
	for i, total := range c.Full {
		name := t.spec.Maps[i].Name
		switch {
		case total == 0:
		case lang.MapDeclOf(t.prog, name) != nil:
			fmt.Fprintf(t.opts.Err, "WARNING: map %s was full: %d updates were dropped (it is declared with %d keys)\n", name, total, lang.MapDeclOf(t.prog, name).Entries)
		default:
			fmt.Fprintf(t.opts.Err, "WARNING: map %s was full: %d updates were dropped (BPFTRACE_MAP_KEYS_MAX is %d)\n", name, total, t.mapKeysMax())
		}
	}
	if c.LoopCapped > 0 {
		fmt.Fprintf(t.opts.Err, "WARNING: a loop reached its limit of %d iterations and was stopped (%d times)\n", codegen.MaxLoopIterations, c.LoopCapped)
	}
	if c.BufCut > 0 {
		fmt.Fprintf(t.opts.Err, "WARNING: buf() was asked for more bytes than it holds and was cut to its size (%d times; max_buflen sets it, up to %d bytes)\n", c.BufCut, settings.MaxStrLen)
	}
}

func (t *tracer) mapKeysMax() int {
	if t.opts.MapKeysMax > 0 {
		return t.opts.MapKeysMax
	}
	return settings.DefaultMapKeysMax
}
