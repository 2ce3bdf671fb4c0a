package codegen

import (
	"strings"

	"github.com/cilium/ebpf/asm"
	"golang.org/x/sys/unix"

	"github.com/gotrace/gotrace/lang"
)

// joinMaxArgs is how many argv strings join() reads.
const joinMaxArgs = 16

// callStmt lowers a call used as a statement.
func (f *fn) callStmt(call *lang.Call) error {
	switch call.ID {
	case lang.FuncPrintf:
		return f.formatted(call, EventPrintf)
	case lang.FuncSystem:
		return f.formatted(call, EventSystem)
	case lang.FuncCat:
		return f.formatted(call, EventCat)
	case lang.FuncErrorf:
		return f.formatted(call, EventErrorf)
	case lang.FuncWarnf:
		return f.formatted(call, EventWarnf)
	case lang.FuncPrint:
		return f.print(call)
	case lang.FuncClear, lang.FuncZero:
		m, ok := call.Args[0].(*lang.MapExpr)
		assert(ok && len(m.Keys) == 0, call, "clear() or zero() of what is not a map without keys")
		if _, _, err := f.mapOf(m, m.Name); err != nil {
			return err
		}
		kind := EventClear
		if call.ID == lang.FuncZero {
			kind = EventZero
		}
		return f.event(call, Event{Kind: kind, Map: m.Name}, nil, eventsMapName)
	case lang.FuncExit:
		done := f.label("exited")
		f.lookupZeroKey(exitedMapName)
		f.emit(
			asm.JEq.Imm(asm.R0, 0, done),
			storeImm64(asm.R0, 0, 1),
		)
		f.place(done)
		if err := f.event(call, Event{Kind: EventExit}, call.Args, controlMapName); err != nil {
			return err
		}
		f.endProbe()
		return nil
	case lang.FuncTime:
		format := "%H:%M:%S\n"
		if len(call.Args) > 0 {
			lit, ok := call.Args[0].(*lang.StrLit)
			assert(ok, call, "time() of what is not a string literal")
			format = lit.Value
		}
		return f.event(call, Event{Kind: EventTime, Format: format}, nil, eventsMapName)
	case lang.FuncJoin:
		return f.join(call)
	case lang.FuncSignal:
		return f.signal(call)
	case lang.FuncDelete:
		return f.deleteElem(call)
	case lang.FuncStr, lang.FuncBuf, lang.FuncHash256:
		return f.valueInto(call, f.alloc(sizeOf(lang.TypeOf(call))))
	}
	assert(call.ID.Aggregation() == lang.KindNone, call, "an aggregation as a statement")
	return f.c.errorf(call, "function %s: %w", call.Name, ErrUnsupported)
}

// formatted lowers printf, system and cat: a format string literal and
// its arguments.
func (f *fn) formatted(call *lang.Call, kind EventKind) error {
	lit, ok := call.Args[0].(*lang.StrLit)
	assert(ok, call, "a format that is not a string literal")
	assert(call.Format != nil || lit.Value == "", call, "a format the checker did not parse")
	return f.event(call, Event{Kind: kind, Format: lit.Value, Parts: call.Format}, call.Args[1:], eventsMapName)
}

// print lowers print(@m[, top[, div]]) and print(value).
func (f *fn) print(call *lang.Call) error {
	if m, ok := call.Args[0].(*lang.MapExpr); ok && len(m.Keys) == 0 {
		if _, _, err := f.mapOf(m, m.Name); err != nil {
			return err
		}
		ev := Event{Kind: EventPrint, Map: m.Name}
		for i, a := range call.Args[1:] {
			v, ok := lang.ConstInt(a)
			assert(ok, a, "print()'s top or div is not a constant")
			if i == 0 {
				ev.Top = v
			} else {
				ev.Div = v
			}
		}
		return f.event(call, ev, nil, eventsMapName)
	}
	assert(len(call.Args) == 1, call, "print() of a value with more arguments")
	return f.event(call, Event{Kind: EventPrint}, call.Args, eventsMapName)
}

// event adds ev to Spec.Events and emits code that writes its record:
// the u64 event index, then args laid out by Layout (Field.Offset counts
// from just after the index), into the ring buffer ring.
// A record that does not fit is counted in CountersMap.
func (f *fn) event(call *lang.Call, ev Event, args []lang.Expr, ring string) error {
	types := make([]lang.Type, len(args))
	for i, a := range args {
		types[i] = lang.TypeOf(a)
		if sizeOf(types[i]) == 0 {
			return f.c.errorf(a, "%s(): argument of type %s: %w", call.Name, types[i], ErrUnsupported)
		}
	}
	fields, size := Layout(types...)
	ev.Args = fields
	ev.Pos = call.Loc
	id := len(f.c.events)
	f.c.events = append(f.c.events, ev)

	rec := f.alloc(8 + size)
	for i, a := range args {
		if err := f.valueAs(a, rec+8+fields[i].Offset, types[i]); err != nil {
			return err
		}
	}
	f.emit(storeImm64(regScratch, rec, int32(id)))
	f.output(ring, rec, 8+size)
	return nil
}

// output emits bpf_ringbuf_output(ring, scratch+off, size, 0), counting
// a failure in CountersMap.
func (f *fn) output(ring string, off, size int) {
	if ring == eventsMapName {
		f.c.writesEvents = true
	}
	ok := f.label("sent")
	f.emit(asm.LoadMapPtr(asm.R1, 0).WithReference(ring))
	f.scratchPtr(asm.R2, off)
	f.emit(
		asm.Mov.Imm(asm.R3, int32(size)),
		asm.Mov.Imm(asm.R4, 0),
		asm.FnRingbufOutput.Call(),
		asm.JEq.Imm(asm.R0, 0, ok),
	)
	f.incrementCounter(lostCounter)
	f.place(ok)
}

// join lowers join(argv[, sep]): up to joinMaxArgs strings read through
// the NULL-terminated pointer array argv; Format is the separator.
func (f *fn) join(call *lang.Call) error {
	sep := " "
	if len(call.Args) == 2 {
		lit, ok := call.Args[1].(*lang.StrLit)
		assert(ok, call, "join()'s separator is not a string literal")
		sep = lit.Value
	}
	st := lang.String(f.c.opts.StrLen)
	types := make([]lang.Type, joinMaxArgs)
	for i := range types {
		types[i] = st
	}
	fields, size := Layout(types...)
	id := len(f.c.events)
	f.c.events = append(f.c.events, Event{Kind: EventJoin, Format: sep, Args: fields, Pos: call.Loc})

	rec := f.alloc(8 + size)
	f.zero(regScratch, rec, 8+size)
	if err := f.intExpr(call.Args[0]); err != nil {
		return err
	}
	slot, err := f.pushSlot(call)
	if err != nil {
		return err
	}
	defer f.popSlot()
	argv := f.alloc(8)
	f.emit(memAt(asm.StoreMem(regScratch, 0, asm.R0, asm.DWord), argv))
	done := f.label("joindone")
	for i := range fields {
		f.emit(
			storeImm64(f.fp, int(slot), 0),
			asm.Mov.Reg(asm.R1, f.fp),
			asm.Add.Imm(asm.R1, int32(slot)),
			asm.Mov.Imm(asm.R2, 8),
			memAt(asm.LoadMem(asm.R3, regScratch, 0, asm.DWord), argv),
			asm.Add.Imm(asm.R3, int32(8*i)),
			asm.FnProbeReadUser.Call(),
			asm.LoadMem(asm.R3, f.fp, slot, asm.DWord),
			asm.JEq.Imm(asm.R3, 0, done),
			asm.Mov.Imm(asm.R2, int32(st.Size)),
		)
		f.scratchPtr(asm.R1, rec+8+fields[i].Offset)
		f.emit(asm.FnProbeReadUserStr.Call())
	}
	f.place(done)
	f.emit(storeImm64(regScratch, rec, int32(id)))
	f.output(eventsMapName, rec, 8+size)
	return nil
}

// signal lowers signal(SIG): bpf_send_signal to the current process, with
// a signal named by a string literal ("SIGUSR1" or "USR1") or a number.
func (f *fn) signal(call *lang.Call) error {
	if lit, ok := call.Args[0].(*lang.StrLit); ok {
		name := lit.Value
		if !strings.HasPrefix(name, "SIG") {
			name = "SIG" + name
		}
		sig := unix.SignalNum(name)
		assert(sig != 0, call, "signal() of an unknown signal")
		f.emit(asm.Mov.Imm(asm.R1, int32(sig)))
	} else {
		if err := f.intExpr(call.Args[0]); err != nil {
			return err
		}
		f.emit(asm.Mov.Reg32(asm.R1, asm.R0))
	}
	f.emit(asm.FnSendSignal.Call())
	return nil
}
