package runtime

import (
	"fmt"

	"github.com/cilium/ebpf"

	"github.com/gotrace/gotrace/codegen"
	"github.com/gotrace/gotrace/internal/settings"
	"github.com/gotrace/gotrace/lang"
	"github.com/gotrace/gotrace/runtime/capture"
)

// handle acts on one ring-buffer record. The caller holds pr.mu.
func (pr *printer) handle(raw []byte) error {
	ev, data, err := splitRecord(pr.spec.Events, raw)
	if err != nil {
		return err
	}
	if pr.capture != nil {
		pr.record(capture.Event, raw)
		if ev.Kind == codegen.EventPrintf {
			// Nothing is printed: only what a replay cannot read from
			// the record is recorded.
			if resolvesFields(ev.Args) {
				pr.recordArgs(ev.Args, data)
			}
			return nil
		}
	}
	switch ev.Kind {
	case codegen.EventPrintf:
		return pr.printf(ev, data)
	case codegen.EventPrint:
		if ev.Map == "" {
			return pr.printValue(ev, data)
		}
		return pr.printMap(ev.Map, ev.Top, ev.Div)
	case codegen.EventClear, codegen.EventZero:
		if pr.replay != nil {
			return nil
		}
		m, err := pr.userMap(ev.Map)
		if err != nil {
			return err
		}
		em, err := pr.kernelMap(m)
		if err != nil {
			return err
		}
		return clearMap(m, em, ev.Kind == codegen.EventZero)
	case codegen.EventExit:
		if len(ev.Args) == 1 && pr.exitStatus == 0 {
			pr.exitStatus = ExitStatus(pr.value(ev.Args[0], data[ev.Args[0].Offset:]).Bits)
		}
		pr.loop.requestExit()
		return nil
	case codegen.EventTime:
		return pr.printTime(ev)
	case codegen.EventSystem:
		return pr.system(ev, data)
	case codegen.EventCat:
		return pr.cat(ev, data)
	case codegen.EventErrorf, codegen.EventWarnf:
		return pr.diagnostic(ev, data)
	case codegen.EventJoin:
		return pr.join(ev, data)
	case codegen.EventLoad:
		if pr.replay != nil {
			return nil
		}
		return pr.loaded()
	}
	return fmt.Errorf("decode record: unknown event kind %d", ev.Kind)
}

// userMap finds a user map's layout.
func (pr *printer) userMap(name string) (*codegen.Map, error) {
	for i := range pr.spec.Maps {
		if pr.spec.Maps[i].Name == name {
			return &pr.spec.Maps[i], nil
		}
	}
	return nil, fmt.Errorf("map %s is not in the program", name)
}

// kernelMap finds a user map's kernel map.
func (pr *printer) kernelMap(m *codegen.Map) (*ebpf.Map, error) {
	em := pr.coll.Maps[m.Name]
	if em == nil {
		return nil, fmt.Errorf("map %s is missing from the collection", m.Name)
	}
	return em, nil
}

// counters reads the programs' counters of lost records and failed map
// updates.
func (pr *printer) counters() (codegen.Counters, bool) {
	m := pr.coll.Maps[pr.spec.CountersMap]
	if m == nil {
		return codegen.Counters{}, false
	}
	var value []byte
	if err := m.Lookup(uint32(0), &value); err != nil {
		return codegen.Counters{}, false
	}
	c, err := pr.spec.DecodeCounters(value)
	return c, err == nil
}

// reportLost prints "Lost N events" for the records the programs could not
// reserve since the last report. The caller holds pr.mu.
func (pr *printer) reportLost() {
	c, ok := pr.counters()
	if ok && c.Lost > pr.lost {
		pr.printLost(c.Lost - pr.lost)
		pr.lost = c.Lost
	}
}

// reportFull warns about maps that refused updates because they were
// full, and about loops stopped at their iteration limit. The
// caller holds pr.mu.
func (pr *printer) reportFull() {
	if pr.opts.NoWarnings {
		return
	}
	c, ok := pr.counters()
	if !ok {
		return
	}
	for i, total := range c.Full {
		name := pr.spec.Maps[i].Name
		switch {
		case total == 0:
		// Current bpftrace's words first ("Map full; can't update
		// element", at each update), then the count and the limit.
		case lang.MapDeclOf(pr.prog, name) != nil:
			fmt.Fprintf(pr.opts.Err, "WARNING: Map full; can't update element: map %s dropped %d updates (it is declared with %d keys)\n", name, total, lang.MapDeclOf(pr.prog, name).Entries)
		default:
			fmt.Fprintf(pr.opts.Err, "WARNING: Map full; can't update element: map %s dropped %d updates (BPFTRACE_MAP_KEYS_MAX is %d)\n", name, total, pr.mapKeysMax())
		}
	}
	if c.LoopCapped > 0 {
		fmt.Fprintf(pr.opts.Err, "WARNING: a loop reached its limit of %d iterations and was stopped (%d times)\n", codegen.MaxLoopIterations, c.LoopCapped)
	}
	if c.BufCut > 0 {
		fmt.Fprintf(pr.opts.Err, "WARNING: buf() was asked for more bytes than it holds and was cut to its size (%d times; max_buflen sets it, up to %d bytes)\n", c.BufCut, settings.MaxStrLen)
	}
}

func (pr *printer) mapKeysMax() int {
	if pr.opts.MapKeysMax > 0 {
		return pr.opts.MapKeysMax
	}
	return settings.DefaultMapKeysMax
}
