package codegen

import (
	"time"

	"github.com/cilium/ebpf/asm"

	"github.com/gotrace/gotrace/codegen/layout"
	"github.com/gotrace/gotrace/internal/signals"
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
		return f.valueInto(call, f.alloc(sizeOf(f.typeOf(call))))
	}
	assert(call.ID.Aggregation() == lang.KindNone, call, "an aggregation as a statement")
	return f.c.errorf(call, "function %s: %w", call.Name, ErrUnsupported)
}

// formatted lowers printf, system and cat: a format string literal and
// its arguments.
func (f *fn) formatted(call *lang.Call, kind EventKind) error {
	lit, ok := call.Args[0].(*lang.StrLit)
	assert(ok, call, "a format that is not a string literal")
	parts := f.c.info.Format(call)
	assert(parts != nil || lit.Value == "", call, "a format the checker did not parse")
	return f.packedEvent(call, Event{Kind: kind, Format: lit.Value, Parts: parts}, call.Args[1:])
}

// print lowers print(@m[, top[, div]]) and print(value).
func (f *fn) print(call *lang.Call) error {
	if m, ok := call.Args[0].(*lang.MapExpr); ok && len(m.Keys) == 0 {
		if _, _, err := f.mapOf(m, m.Name); err != nil {
			return err
		}
		ev := Event{Kind: EventPrint, Map: m.Name}
		for i, a := range call.Args[1:] {
			v, ok := f.c.info.ConstInt(a)
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
	t := f.typeOf(call.Args[0])
	switch {
	case t.Kind == lang.KindStruct || t.Kind == lang.KindArray:
		return f.printStored(call, call.Args[0], t)
	case t.Kind == lang.KindBuf && packs(t):
		// A whole message takes its length in the ring, not 4 MB.
		return f.packedEvent(call, Event{Kind: EventPrint}, call.Args)
	}
	return f.event(call, Event{Kind: EventPrint}, call.Args, eventsMapName)
}

// printStored lowers print() of a struct or an array, e of type t, which
// the code holds as an address: the value a map would store of it
// (compiler.storedType), a struct printed as bpftrace prints one,
// { .a = 1, .b = x }, an array as [1,2].
func (f *fn) printStored(call *lang.Call, e lang.Expr, t lang.Type) error {
	rec, err := f.c.storedType(t)
	if err != nil {
		return f.c.errorf(e, "print() of %w", err)
	}
	return f.eventOf(call, Event{Kind: EventPrint}, []lang.Type{rec}, eventsMapName, func(off int, _ []layout.Field) error {
		return f.valueAs(e, off, rec)
	})
}

// structInto writes the members of struct value e, of type t, into the
// record of type rec (compiler.storedType) at scratch offset off, each read as
// the script's e.member would read it.
func (f *fn) structInto(e lang.Expr, t, rec lang.Type, off int) error {
	fields, _ := Layout(rec.Elems...)
	for i, m := range f.structDef(t.Struct).Fields {
		member := f.c.info.MemberOf(e, m.Name, m.Type)
		if err := f.valueAs(member, off+fields[i].Offset, rec.Elems[i]); err != nil {
			return err
		}
	}
	return nil
}

// arrayInto writes the bytes of e, an array (a struct's member, a
// tracepoint's field), into the scratch area at off as the integer array
// t (compiler.storedType), read from where e lies, the padding after it
// zeroed.
func (f *fn) arrayInto(e lang.Expr, t lang.Type, off int) error {
	f.zero(regScratch, off, sizeOf(t))
	return f.readAt(e, off, t.Size)
}

// event adds ev to Spec.Events and emits code that writes its record:
// the u64 event index, then args laid out by Layout (Field.Offset counts
// from just after the index), into the ring buffer ring.
// A record that does not fit is counted in CountersMap.
func (f *fn) event(call *lang.Call, ev Event, args []lang.Expr, ring string) error {
	types, err := f.eventTypes(call, args)
	if err != nil {
		return err
	}
	return f.eventOf(call, ev, types, ring, func(off int, fields []layout.Field) error {
		for i, a := range args {
			if err := f.valueAs(a, off+fields[i].Offset, types[i]); err != nil {
				return err
			}
		}
		return nil
	})
}

// eventOf adds ev, whose arguments have types, to Spec.Events and emits
// code that writes its record: the u64 event index, then the arguments,
// which write puts at scratch offset off as fields lays them out.
func (f *fn) eventOf(call *lang.Call, ev Event, types []lang.Type, ring string, write func(off int, fields []layout.Field) error) error {
	fields, size := Layout(types...)
	id := f.addEvent(call, ev, fields)
	rec := f.alloc(8 + size)
	if err := write(rec+8, fields); err != nil {
		return err
	}
	f.emit(storeImm64(regScratch, rec, int32(id)))
	f.output(ring, rec, asm.Mov.Imm(asm.R3, int32(8+size)))
	return nil
}

// eventTypes returns the types of an event's arguments, refusing those
// that have no size.
func (f *fn) eventTypes(call *lang.Call, args []lang.Expr) ([]lang.Type, error) {
	types := make([]lang.Type, len(args))
	for i, a := range args {
		types[i] = f.typeOf(a)
		if sizeOf(types[i]) == 0 {
			return nil, f.c.errorf(a, "%s(): argument of type %s: %w", call.Name, types[i], ErrUnsupported)
		}
	}
	return types, nil
}

// addEvent adds ev, with its record's fields, to Spec.Events and returns
// its index.
func (f *fn) addEvent(call *lang.Call, ev Event, fields []layout.Field) int {
	ev.Args = fields
	ev.Pos = call.Loc
	f.c.events = append(f.c.events, ev)
	return len(f.c.events) - 1
}

// packedEvent is event for printf, system, cat, errorf and warnf, whose
// records are sent at the length of their strings rather than of their
// buffers: the other arguments come first, laid out by Layout, then the
// strings one after the other, each up to and with its NUL, and the bufs
// of more than packedBufMin bytes at their length (see layout.Field's
// Packed). A burst of lines with short strings then takes a fraction of
// the ring buffer, and of the reader's copying, and a 100-byte message in
// a buf of 4 MB takes 108 bytes.
func (f *fn) packedEvent(call *lang.Call, ev Event, args []lang.Expr) error {
	types, err := f.eventTypes(call, args)
	if err != nil {
		return err
	}
	var fixed []lang.Type
	for _, t := range types {
		if !packs(t) {
			fixed = append(fixed, t)
		}
	}
	if len(fixed) == len(types) {
		return f.event(call, ev, args, eventsMapName)
	}
	fixedFields, fixedSize := Layout(fixed...)
	fields := make([]layout.Field, len(types))
	most := make([]int, len(types)) // the bytes each string or buf can take
	strings, bufs := 0, false
	for i, t := range types {
		switch {
		case !packs(t):
			fields[i], fixedFields = fixedFields[0], fixedFields[1:]
			continue
		case t.Kind == lang.KindBuf:
			fields[i] = field(t)
			most[i], bufs = fields[i].Size, true
		default:
			fields[i] = layout.Field{Kind: layout.String, Size: t.Size}
			most[i] = f.packedStringSize(args[i], t)
		}
		fields[i].Offset, fields[i].Packed = fixedSize, true
		strings += most[i]
	}
	id := f.addEvent(call, ev, fields)
	rec := f.alloc(8 + fixedSize + strings)
	if bufs {
		// The area is large: the scratch map's value, which is
		// initialized memory and takes the unaligned length words.
		f.unalignedScratch = true
	} else {
		// A string is written at an offset known only at run time, which
		// the verifier allows in memory that is already initialized.
		f.zero(regScratch, rec+8+fixedSize, strings)
	}
	end, err := f.pushSlot(call)
	if err != nil {
		return err
	}
	defer f.popSlot()
	f.emit(
		asm.Mov.Imm(asm.R0, int32(8+fixedSize)),
		asm.StoreMem(f.fp, end, asm.R0, asm.DWord),
	)
	for i, a := range args {
		if !fields[i].Packed {
			if err := f.valueAs(a, rec+8+fields[i].Offset, types[i]); err != nil {
				return err
			}
			continue
		}
		if types[i].Kind == lang.KindBuf {
			err = f.packBuf(a, types[i], rec, end)
		} else {
			err = f.packString(a, types[i], rec, end, most[i])
		}
		if err != nil {
			return err
		}
	}
	f.emit(storeImm64(regScratch, rec, int32(id)))
	f.output(eventsMapName, rec, asm.LoadMem(asm.R3, f.fp, end, asm.DWord))
	return nil
}

// packs reports whether packedEvent packs values of type t: strings
// whose buffer is larger than a comm's, bufs of more than packedBufMin
// bytes. A literal or comm costs less at its place than the helper call
// that packs it.
func packs(t lang.Type) bool {
	return t.Kind == lang.KindString && t.Size > 16 || largeBuf(t)
}

// largeBuf reports whether t is a buf of more than 1024 bytes, beyond
// bpftrace 0.17's sizes: packed in records, and its reads that are cut to
// its size counted (Counters.BufCut). The bufs of bpftrace's sizes keep
// their place, their records their bytes and their cuts their silence.
func largeBuf(t lang.Type) bool {
	return t.Kind == lang.KindBuf && t.Size > 1024
}

// packBuf writes the buf e of type t into the record at rec, at the offset
// kept in the stack slot end, as its u64 length and that many bytes, and
// moves end past them. buf(p, n) reads straight there, with no zeroing of
// the capacity; another buf is made in scratch and copied. It clobbers
// R0-R5.
func (f *fn) packBuf(e lang.Expr, t lang.Type, rec int, end int16) error {
	call, direct := e.(*lang.Call)
	direct = direct && call.ID == lang.FuncBuf && len(call.Args) == 2 && f.typeOf(call.Args[0]).Kind != lang.KindString
	src, read := 0, asm.FnProbeReadKernel
	var ptr int16
	if direct {
		if err := f.intExpr(call.Args[0]); err != nil {
			return err
		}
		var err error
		if ptr, err = f.pushSlot(call); err != nil {
			return err
		}
		defer f.popSlot()
		f.emit(asm.StoreMem(f.fp, ptr, asm.R0, asm.DWord))
		if err := f.intExpr(call.Args[1]); err != nil {
			return err
		}
		read = asm.FnProbeReadUser
	} else {
		src = f.alloc(sizeOf(t))
		if err := f.valueAs(e, src, t); err != nil {
			return err
		}
		f.emit(memAt(asm.LoadMem(asm.R0, regScratch, 0, asm.DWord), src))
	}
	// A length loaded from the made buf is capped already, but the
	// verifier needs to see its bound.
	f.capBufLen(t, direct)
	// R1 = the record's end, where the length goes; end moves past the
	// data; R2 = the length, R1 its data's address.
	f.scratchPtr(asm.R1, rec)
	f.emit(
		asm.LoadMem(asm.R5, f.fp, end, asm.DWord),
		asm.Add.Reg(asm.R1, asm.R5),
		asm.StoreMem(asm.R1, 0, asm.R0, asm.DWord),
		asm.Add.Imm(asm.R5, 8),
		asm.Add.Reg(asm.R5, asm.R0),
		asm.StoreMem(f.fp, end, asm.R5, asm.DWord),
		asm.Add.Imm(asm.R1, 8),
		asm.Mov.Reg(asm.R2, asm.R0),
	)
	if direct {
		f.emit(asm.LoadMem(asm.R3, f.fp, ptr, asm.DWord))
	} else {
		f.scratchPtr(asm.R3, src+8)
	}
	f.emit(read.Call())
	return nil
}

// packedStringSize is how many bytes packString can write for the string
// e of type t: a str() reads its NUL-terminated string into at most the
// buffer, another string is copied with one more byte for a NUL.
func (f *fn) packedStringSize(e lang.Expr, t lang.Type) int {
	if f.isStrRead(e) {
		return t.Size
	}
	return t.Size + 1
}

// isStrRead reports whether e is a str() call that reads memory (str(p),
// str(p, n), str(s, n)), which packString lowers straight into the record.
func (f *fn) isStrRead(e lang.Expr) bool {
	call, ok := e.(*lang.Call)
	return ok && call.ID == lang.FuncStr && (len(call.Args) == 2 || f.typeOf(call.Args[0]).Kind != lang.KindString)
}

// packString writes the string e of type t into the record at rec, at the
// offset kept in the stack slot end, and moves end past its NUL. most is
// packedStringSize's bound. It clobbers R0-R5; the address is made in
// R1 and R5, as the read's source and size are in R2 and R3 already.
func (f *fn) packString(e lang.Expr, t lang.Type, rec int, end int16, most int) error {
	dst := func() {
		f.scratchPtr(asm.R1, rec)
		f.emit(
			asm.LoadMem(asm.R5, f.fp, end, asm.DWord),
			asm.Add.Reg(asm.R1, asm.R5),
		)
	}
	if f.isStrRead(e) {
		if err := f.readStr(e.(*lang.Call), dst); err != nil {
			return err
		}
	} else {
		tmp := f.alloc(sizeOf(t))
		if err := f.valueAs(e, tmp, t); err != nil {
			return err
		}
		dst()
		f.scratchPtr(asm.R3, tmp)
		f.emit(
			asm.Mov.Imm(asm.R2, int32(most)),
			asm.FnProbeReadKernelStr.Call(),
		)
	}
	// The helpers return the bytes written with the NUL, or an error
	// after zeroing the buffer: then the string is empty, its NUL the
	// zero already there.
	read, bounded := f.label("strread"), f.label("strbound")
	f.emit(
		asm.JSGT.Imm(asm.R0, 0, read),
		asm.Mov.Imm(asm.R0, 1),
	)
	f.place(read)
	f.emit(
		asm.JLE.Imm(asm.R0, int32(most), bounded),
		asm.Mov.Imm(asm.R0, int32(most)),
	)
	f.place(bounded)
	f.emit(
		asm.LoadMem(asm.R1, f.fp, end, asm.DWord),
		asm.Add.Reg(asm.R0, asm.R1),
		asm.StoreMem(f.fp, end, asm.R0, asm.DWord),
	)
	return nil
}

// EventsWakeGap is the least time between two records of the events ring
// that may wake its reader; the records between them are written with
// BPF_RB_NO_WAKEUP. The reader, once it has read records, looks at the
// ring again after a nap longer than this (runtime's readerNap), so no
// record waits for the next one to wake it.
const EventsWakeGap = time.Millisecond

// The flags of bpf_ringbuf_output: bpfRBNoWakeup writes a record without
// waking the reader.
const bpfRBNoWakeup = 1

// output emits bpf_ringbuf_output(ring, scratch+off, size, flags), with
// size set in R3 by setSize, counting a failure in CountersMap.
//
// A record of the events ring wakes its reader only when EventsWakeGap
// has passed since the last one that could (the time kept in wakeMapName);
// the others are written with BPF_RB_NO_WAKEUP. With flags 0 the kernel
// wakes the reader for every record that finds it caught up, and a reader
// that keeps up with a burst is caught up after almost every record: each
// such record cost the traced thread an irq_work and, with the reader at
// a higher weight than the traced thread, often a preemption (the burst's
// traced thread ran 9.2-13.6 µs of CPU a hit instead of 6.5-7.2, and was
// switched out 90,000-300,000 times in 500,000 hits instead of 6,000-
// 30,000). The first record after a gap still wakes the reader at once.
// The control ring's records (exit, ...) are rare and always may wake it.
func (f *fn) output(ring string, off int, setSize asm.Instruction) {
	if ring == eventsMapName {
		f.c.writesEvents = true
		f.wakeFlags()
	} else {
		f.emit(asm.Mov.Imm(asm.R4, 0))
	}
	ok := f.label("sent")
	f.emit(asm.LoadMapPtr(asm.R1, 0).WithReference(ring))
	f.scratchPtr(asm.R2, off)
	f.emit(
		setSize,
		asm.FnRingbufOutput.Call(),
		asm.JEq.Imm(asm.R0, 0, ok),
	)
	f.incrementCounter(lostCounter)
	f.place(ok)
}

// wakeFlags sets R4 to the flags of an events record: 0 (wake the reader
// if it has caught up) when EventsWakeGap has passed since the last
// record given 0, which it stores, and BPF_RB_NO_WAKEUP otherwise. It
// clobbers R0-R5.
func (f *fn) wakeFlags() {
	quiet := f.label("quiet")
	f.emit(
		asm.FnKtimeGetNs.Call(),
		asm.LoadMapValue(asm.R1, 0, 0).WithReference(wakeMapName),
		asm.LoadMem(asm.R2, asm.R1, 0, asm.DWord),
		asm.Mov.Reg(asm.R3, asm.R0),
		asm.Sub.Reg(asm.R3, asm.R2),
		asm.Mov.Imm(asm.R4, bpfRBNoWakeup),
		asm.JLT.Imm(asm.R3, int32(EventsWakeGap.Nanoseconds()), quiet),
		asm.StoreMem(asm.R1, 0, asm.R0, asm.DWord),
		asm.Mov.Imm(asm.R4, 0),
	)
	f.place(quiet)
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
	f.output(eventsMapName, rec, asm.Mov.Imm(asm.R3, int32(8+size)))
	return nil
}

// signal lowers signal(SIG): bpf_send_signal to the current process, with
// a signal named by a string literal ("SIGUSR1" or "USR1") or a number.
func (f *fn) signal(call *lang.Call) error {
	if lit, ok := call.Args[0].(*lang.StrLit); ok {
		sig := signals.Number(lit.Value)
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
