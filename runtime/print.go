package runtime

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"strconv"
	"strings"
	"time"

	"github.com/gotrace/gotrace/codegen"
	"github.com/gotrace/gotrace/codegen/layout"
	"github.com/gotrace/gotrace/lang"
	"github.com/gotrace/gotrace/runtime/capture"
	"github.com/gotrace/gotrace/runtime/output"
	"github.com/gotrace/gotrace/runtime/proc"
	"github.com/gotrace/gotrace/runtime/symbols"
)

// catBytesMax is how much of a file cat() prints, bpftrace's
// BPFTRACE_CAT_BYTES_MAX default.
const catBytesMax = 10 * 1024

// attaching prints "Attaching N probes...", or with the newer behaviour
// bpftrace 0.24's "Attached N probes" on standard error (text) or JSON
// object.
func (t *tracer) attaching(n int) error {
	t.recordUint64(capture.Attached, uint64(n))
	if err := t.out.AttachedProbes(n, t.prog.Newer); err != nil {
		return err
	}
	if t.prog.Newer && t.opts.Format != "json" && t.opts.Err != nil {
		if _, err := io.WriteString(t.opts.Err, output.AttachedNotice(n)); err != nil {
			return fmt.Errorf("write attached probes: %w", err)
		}
	}
	return t.passOut(true)
}

// notifyAttachedEnv is bpftrace's variable (0.18 and later) that asks for
// a line of its own name on standard output once every probe is
// attached: bpftrace's test engine starts a test's AFTER command then,
// where "Attaching N probes..." comes before attaching.
const notifyAttachedEnv = "__BPFTRACE_NOTIFY_PROBES_ATTACHED"

// notifyAttached writes that line when the variable is set. Run calls it
// once every probe is attached and before the readers start, so that it
// comes before BEGIN's output, as bpftrace prints it.
func (t *tracer) notifyAttached() {
	if os.Getenv(notifyAttachedEnv) == "" {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.flushOut()
	w := t.opts.Out
	if t.opts.Stdout != nil {
		w = t.opts.Stdout
	}
	if w != nil {
		if _, err := io.WriteString(w, notifyAttachedEnv+"\n"); err != nil {
			t.keepErr(fmt.Errorf("write attached notice: %w", err))
		}
	}
}

// printLost reports n records the programs could not reserve.
func (t *tracer) printLost(n uint64) {
	t.recordUint64(capture.Lost, n)
	if t.capture != nil {
		// Under -w, where nothing else is printed, the user still
		// learns of them.
		t.keepErr(output.NewWriter(t.opts.Err, output.Text).LostEvents(n))
	}
	t.keepErr(t.out.LostEvents(n))
}

// recordArgs decodes the fields of a record. The next call reuses the
// slice it returns, and its strings and bufs are the record's own bytes,
// not copies (no allocation per printf record for them): a caller is done
// with the values before it decodes another record or the ring buffer
// reader reads the next one.
func (t *tracer) recordArgs(fields []layout.Field, data []byte) []output.Value {
	t.args = t.args[:0]
	var c layout.Cursor
	for _, f := range fields {
		b := c.Field(f, data)
		var v output.Value
		switch {
		case f.Packed && f.Kind == layout.String:
			v = output.Str(borrowedCString(b))
		case f.Kind == layout.String:
			v = output.Str(borrowedCString(b[:f.Size]))
		case f.Kind == layout.Buf:
			v = output.Buf(bufBytes(b, f.Size-8))
		default:
			v = t.value(f, b)
		}
		t.args = append(t.args, v)
	}
	return t.args
}

// keyArgs decodes the fields of a map key. bpftrace prints a pointer in
// a key in hex (@[0x40b538]: 1), but as a decimal value elsewhere.
func (t *tracer) keyArgs(fields []layout.Field, data []byte) []output.Value {
	return t.appendKeyArgs(make([]output.Value, 0, len(fields)), fields, data)
}

// appendKeyArgs is keyArgs appending to args.
func (t *tracer) appendKeyArgs(args []output.Value, fields []layout.Field, data []byte) []output.Value {
	for _, f := range fields {
		args = append(args, t.keyValue(f, data[f.Offset:]))
	}
	return args
}

// keyValue decodes one field of a map key that starts at b[0]: pointers
// in hex, stacks indented less than elsewhere.
func (t *tracer) keyValue(f layout.Field, b []byte) output.Value {
	switch f.Kind {
	case layout.Pointer:
		return output.Str(fmt.Sprintf("%#x", u64(b, 0)))
	case layout.Stack:
		return output.Str(t.input(func() string { return t.resolve(f, b, symbols.KeyIndent) }))
	case layout.Tuple:
		v := output.Tuple(t.keyArgs(f.Elems, b)...)
		v.Names = f.Names
		return v
	}
	return t.value(f, b)
}

// value decodes one field that starts at b[0], as package layout documents
// the encodings.
func (t *tracer) value(f layout.Field, b []byte) output.Value {
	if resolvedKind(f.Kind) {
		return output.Str(t.input(func() string { return t.resolve(f, b, symbols.ValueIndent) }))
	}
	switch f.Kind {
	case layout.String:
		return output.Str(cString(b[:f.Size]))
	case layout.Inet:
		return output.Str(output.InetText(b))
	case layout.Buf:
		return output.Buf(clone(bufBytes(b, f.Size-8)))
	case layout.Hash:
		v := output.Buf(clone(bufBytes(b, f.Size-8)))
		v.Hash = true
		return v
	case layout.Tuple:
		elems := make([]output.Value, len(f.Elems))
		for i, ef := range f.Elems {
			elems[i] = t.value(ef, b[ef.Offset:])
		}
		v := output.Tuple(elems...)
		v.Names = f.Names
		return v
	case layout.Array:
		return arrayValue(f, b)
	case layout.Probe:
		i := u64(b, 0)
		if i < uint64(len(t.spec.Attachments)) {
			return output.Str(t.spec.Attachments[i].ProbeName)
		}
		return output.Str(fmt.Sprintf("probe#%d", i))
	case layout.Timestamp:
		return output.Str(t.timestampText(b))
	case layout.Errno:
		return output.Str(output.ErrnoText(int64(u64(b, 0))))
	case layout.Signal:
		return output.Str(output.SignalText(int64(u64(b, 0))))
	case layout.Syscall:
		return output.Str(output.SyscallText(int64(u64(b, 0))))
	case layout.Bool:
		return output.Boolean(u64(b, 0) != 0)
	case layout.Pointer:
		// Current bpftrace prints pointers in hex; 0.17 in decimal.
		return output.Value{Kind: output.ValueInt, Bits: u64(b, 0), Hex: t.prog.Newer}
	}
	v := output.Value{Kind: output.ValueInt, Bits: u64(b, 0), Signed: f.Signed}
	if f.EnumNames != nil {
		v.Enum, v.Name = true, f.EnumNames[int64(v.Bits)]
	}
	return v
}

// arrayValue decodes an array value: Size bytes of little-endian
// integers of the size of its element, Elems[0].
func arrayValue(f layout.Field, b []byte) output.Value {
	elem := f.Elems[0]
	elems := make([]output.Value, 0, f.Size/elem.Size)
	for off := 0; off+elem.Size <= f.Size; off += elem.Size {
		var bits uint64
		for i := elem.Size - 1; i >= 0; i-- {
			bits = bits<<8 | uint64(b[off+i])
		}
		if shift := 64 - 8*elem.Size; elem.Signed {
			bits = uint64(int64(bits<<shift) >> shift)
		}
		v := output.Value{Kind: output.ValueInt, Bits: bits, Signed: elem.Signed}
		if elem.Kind == layout.Bool {
			v = output.Boolean(bits != 0)
		}
		elems = append(elems, v)
	}
	v := output.Tuple(elems...)
	v.Array = true
	return v
}

// timestampText formats a strftime() value: a u64 index into the spec's
// TimeFormats, then the bpf_ktime_get_ns time.
func (t *tracer) timestampText(b []byte) string {
	i := u64(b, 0)
	if i >= uint64(len(t.spec.TimeFormats)) {
		return fmt.Sprintf("strftime#%d", i)
	}
	return output.Strftime(t.spec.TimeFormats[i], t.wallTime(u64(b, 8)))
}

// userName returns the name of user uid, "" for a uid with no name, as
// bpftrace prints username. Names are looked up once per uid.
func (t *tracer) userName(uid uint64) string {
	if name, ok := t.users[uid]; ok {
		return name
	}
	name := ""
	if u, err := user.LookupId(strconv.FormatUint(uid, 10)); err == nil {
		name = u.Username
	}
	if t.users == nil {
		t.users = map[uint64]string{}
	}
	t.users[uid] = name
	return name
}

// wallTime converts a bpf_ktime_get_ns time (CLOCK_MONOTONIC) into wall
// clock time.
func (t *tracer) wallTime(mono uint64) time.Time {
	return t.bootWall.Add(time.Duration(mono))
}

// printf prints a printf record.
func (t *tracer) printf(ev *codegen.Event, data []byte) error {
	return t.out.Printf(ev.Parts, t.recordArgs(ev.Args, data))
}

// diagnostic prints errorf()'s and warnf()'s message as bpftrace does: a
// diagnostic at the call, on standard error (warnings not with
// --no-warnings).
func (t *tracer) diagnostic(ev *codegen.Event, data []byte) error {
	warn := ev.Kind == codegen.EventWarnf
	if warn && t.opts.NoWarnings {
		return nil
	}
	text, err := output.AppendPrintf(nil, ev.Parts, t.recordArgs(ev.Args, data))
	if err != nil {
		return err
	}
	msg := lang.ErrorList{{Span: ev.Pos, Msg: strings.TrimSuffix(string(text), "\n")}}
	if t.opts.Diagnostic != nil {
		t.opts.Diagnostic(warn, msg[0].Msg)
	}
	if warn {
		msg.WriteWarnings(t.opts.Err, t.prog.File, t.prog.Source)
	} else {
		msg.Write(t.opts.Err, t.prog.File, t.prog.Source)
	}
	return nil
}

// printValue prints print(value) for a non-map value.
func (t *tracer) printValue(ev *codegen.Event, data []byte) error {
	if len(ev.Args) != 1 {
		return fmt.Errorf("decode print record: %d values, want 1", len(ev.Args))
	}
	var c layout.Cursor // a large buf is packed
	return t.out.Value(t.value(ev.Args[0], c.Field(ev.Args[0], data)))
}

// outputMap reads a user map and converts it for printing.
func (t *tracer) outputMap(m *codegen.Map) (*output.Map, error) {
	entries, err := t.printedEntries(m)
	if err != nil {
		return nil, err
	}
	om := &output.Map{Name: m.Name, Kind: m.Kind, Lhist: m.Lhist, HistBits: m.HistBits, Tseries: m.Tseries, Newer: t.prog.Newer, KeyStacks: keyStacks(m.KeyFields)}
	resolves := resolvesFields(m.KeyFields) || resolvesFields([]layout.Field{m.Value})
	if t.capture != nil && !resolves {
		// Under -w nothing is printed: the entries are recorded, and
		// decoding them would record nothing more.
		return om, nil
	}
	if len(entries) > 0 && !resolves {
		// Decoded one entry at a time while printing: a map of a million
		// keys is never held decoded. Fields that resolve stay decoded
		// once, in order, as capture and replay record their inputs.
		om.Len = len(entries)
		om.Decode = func(i int, oe *output.Entry) {
			*oe = t.outputEntry(m, entries[i], oe.Key[:0])
		}
		return om, nil
	}
	om.Entries = make([]output.Entry, 0, len(entries))
	// Every key's values come from one allocation.
	keys := make([]output.Value, len(entries)*len(m.KeyFields))
	for _, e := range entries {
		om.Entries = append(om.Entries, t.outputEntry(m, e, keys[:0:len(m.KeyFields)]))
		keys = keys[len(m.KeyFields):]
	}
	return om, nil
}

// keyStacks says which of a map key's fields are stacks, nil when none
// is (output.Map.KeyStacks).
func keyStacks(fields []layout.Field) []bool {
	var stacks []bool
	for i, f := range fields {
		if f.Kind == layout.Stack {
			if stacks == nil {
				stacks = make([]bool, len(fields))
			}
			stacks[i] = true
		}
	}
	return stacks
}

// outputEntry converts entry e of map m for printing, with its key's
// values appended to key.
func (t *tracer) outputEntry(m *codegen.Map, e *mapEntry, key []output.Value) output.Entry {
	oe := output.Entry{Count: e.Count, Total: e.Total, Buckets: e.Buckets, Intervals: e.Intervals}
	if e.Key != nil {
		oe.Key = t.appendKeyArgs(key, m.KeyFields, e.Key)
	}
	switch m.Kind {
	case layout.MapCount:
		oe.Value = output.Uint(e.Count)
	case layout.MapSum, layout.MapMin, layout.MapMax:
		oe.Value = output.Int(e.Total)
	case layout.MapValue:
		oe.Value = t.value(m.Value, e.Value)
	}
	return oe
}

// printMap prints one map for print(@m, top, div).
func (t *tracer) printMap(name string, top, div int64) error {
	m, err := t.userMap(name)
	if err != nil {
		return err
	}
	om, err := t.outputMap(m)
	if err != nil {
		return err
	}
	if len(om.Entries) == 0 && len(m.KeyFields) == 0 && t.prog.Newer {
		t.addZeroEntry(om, m)
	}
	return t.out.Map(om, uint64(max(top, 0)), uint64(max(div, 0)))
}

// addZeroEntry gives om, a map without keys that holds no value yet, the
// zero value of its kind: bpftrace 0.24 prints an unset map of assigned
// values, counts, sums, mins and maxes as zero (@: 0, @: { .a = 0 }).
func (t *tracer) addZeroEntry(om *output.Map, m *codegen.Map) {
	switch m.Kind {
	case layout.MapValue:
		// A value's fields end within Size bytes; 8 more cover the
		// u64 of a kind of Size 0.
		om.Entries = append(om.Entries, output.Entry{Value: t.value(m.Value, make([]byte, m.Value.Size+8))})
	case layout.MapCount:
		om.Entries = append(om.Entries, output.Entry{Value: output.Uint(0)})
	case layout.MapSum, layout.MapMin, layout.MapMax:
		om.Entries = append(om.Entries, output.Entry{Value: output.Int(0)})
	}
}

// outputMaps reads every map for printing. The caller holds t.mu.
func (t *tracer) outputMaps() ([]*output.Map, error) {
	return t.outputMapsWhere(func(*codegen.Map) bool { return true })
}

// outputMapsWhere reads the maps that keep accepts. The caller holds t.mu.
func (t *tracer) outputMapsWhere(keep func(*codegen.Map) bool) ([]*output.Map, error) {
	maps := make([]*output.Map, 0, len(t.spec.Maps))
	for i := range t.spec.Maps {
		if !keep(&t.spec.Maps[i]) {
			continue
		}
		om, err := t.outputMap(&t.spec.Maps[i])
		if err != nil {
			return nil, err
		}
		maps = append(maps, om)
	}
	return maps, nil
}

// printAllMaps prints every map, as on SIGUSR1. The caller holds t.mu.
func (t *tracer) printAllMaps() error {
	maps, err := t.outputMaps()
	if err != nil {
		return err
	}
	return t.out.Maps(maps)
}

// printTime prints time() with its strftime format.
func (t *tracer) printTime(ev *codegen.Event) error {
	now := t.input(func() string { return strconv.FormatInt(time.Now().UnixNano(), 10) })
	ns, err := strconv.ParseInt(now, 10, 64)
	if err != nil {
		return t.replay.Corrupt(fmt.Errorf("time(): %w", err))
	}
	return t.out.Message(output.MessageTime, output.Strftime(ev.Format, time.Unix(0, ns)))
}

// system runs system()'s command (allowed by --unsafe) with the shell and
// prints its standard output. A replay prints the output the command
// gave, and runs nothing.
func (t *tracer) system(ev *codegen.Event, data []byte) error {
	cmd, err := output.AppendPrintf(nil, ev.Parts, t.recordArgs(ev.Args, data))
	if err != nil {
		return err
	}
	out := t.input(func() string {
		c := exec.Command("/bin/sh", "-c", string(cmd))
		var out bytes.Buffer
		c.Stdout = &out
		c.Stderr = t.opts.Err
		t.flushOut() // before the command's own errors
		err := proc.StartUnfavoured(c, t.loop.favoured)
		if err == nil {
			err = c.Wait()
		}
		var exitErr *exec.ExitError
		if err != nil && !errors.As(err, &exitErr) {
			t.keepErr(fmt.Errorf("run system command %q: %w", cmd, err))
		}
		return out.String()
	})
	return t.out.Message(output.MessageSyscall, out)
}

// cat prints the start of the file cat() names. A replay prints what the
// file held then.
func (t *tracer) cat(ev *codegen.Event, data []byte) error {
	name, err := output.AppendPrintf(nil, ev.Parts, t.recordArgs(ev.Args, data))
	if err != nil {
		return err
	}
	var text string
	// Two inputs: why the file could not be read ("" when it was), then
	// its text.
	reason := t.input(func() string {
		var err error
		text, err = readStart(string(name), catBytesMax)
		if err == nil {
			return ""
		}
		// bpftrace's message, with strerror's text.
		return output.Strerror(err)
	})
	if reason != "" {
		t.flushOut()
		fmt.Fprintf(t.opts.Err, "ERROR: failed to open file '%s': %s\n", name, reason)
		return nil
	}
	return t.out.Message(output.MessageCat, t.input(func() string { return text }))
}

// readStart reads up to n bytes from the start of the file at path.
func readStart(path string, n int) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b := make([]byte, n)
	n, _ = f.Read(b)
	return string(b[:n]), nil
}

// join prints join()'s strings separated by its delimiter.
func (t *tracer) join(ev *codegen.Event, data []byte) error {
	var parts []string
	for _, v := range t.recordArgs(ev.Args, data) {
		if v.Kind == output.ValueString && v.Str != "" {
			parts = append(parts, v.Str)
		}
	}
	return t.out.Message(output.MessageJoin, strings.Join(parts, ev.Format)+"\n")
}
