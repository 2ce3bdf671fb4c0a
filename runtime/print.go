package runtime

import (
	"bytes"
	"cmp"
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
	"github.com/gotrace/gotrace/internal/settings"
	"github.com/gotrace/gotrace/lang"
	"github.com/gotrace/gotrace/runtime/capture"
	"github.com/gotrace/gotrace/runtime/output"
	"github.com/gotrace/gotrace/runtime/proc"
	"github.com/gotrace/gotrace/runtime/symbols"
)

// attaching prints "Attaching N probes...", or with the newer behaviour
// bpftrace 0.24's "Attached N probes" on standard error (text) or JSON
// object.
func (pr *printer) attaching(n int) error {
	pr.recordUint64(capture.Attached, uint64(n))
	if err := pr.out.AttachedProbes(n, pr.prog.Newer); err != nil {
		return err
	}
	if pr.prog.Newer && pr.opts.Format != "json" && pr.opts.Err != nil {
		if _, err := io.WriteString(pr.opts.Err, output.AttachedNotice(n)); err != nil {
			return fmt.Errorf("write attached probes: %w", err)
		}
	}
	return pr.passOut(true)
}

// notifyAttachedEnv is bpftrace's variable (0.18 and later) that asks for
// a line of its own name on standard output once every probe is
// attached: bpftrace's test engine starts a test's AFTER command then,
// where "Attaching N probes..." comes before attaching.
const notifyAttachedEnv = "__BPFTRACE_NOTIFY_PROBES_ATTACHED"

// notifyAttached writes that line when the variable is set. Run calls it
// once every probe is attached and before the readers start, so that it
// comes before BEGIN's output, as bpftrace prints it.
func (pr *printer) notifyAttached() {
	if os.Getenv(notifyAttachedEnv) == "" {
		return
	}
	pr.mu.Lock()
	defer pr.mu.Unlock()
	pr.flushOut()
	w := pr.opts.Out
	if pr.opts.Stdout != nil {
		w = pr.opts.Stdout
	}
	if w != nil {
		if _, err := io.WriteString(w, notifyAttachedEnv+"\n"); err != nil {
			pr.keepErr(fmt.Errorf("write attached notice: %w", err))
		}
	}
}

// printLost reports n records the programs could not reserve.
func (pr *printer) printLost(n uint64) {
	pr.recordUint64(capture.Lost, n)
	if pr.capture != nil {
		// Under -w, where nothing else is printed, the user still
		// learns of them.
		pr.keepErr(output.NewWriter(pr.opts.Err, output.Text).LostEvents(n))
	}
	pr.keepErr(pr.out.LostEvents(n))
}

// recordArgs decodes the fields of a record. The next call reuses the
// slice it returns, and its strings and bufs are the record's own bytes,
// not copies (no allocation per printf record for them): a caller is done
// with the values before it decodes another record or the ring buffer
// reader reads the next one.
func (pr *printer) recordArgs(fields []layout.Field, data []byte) []output.Value {
	pr.args = pr.args[:0]
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
			v = pr.value(f, b)
		}
		pr.args = append(pr.args, v)
	}
	return pr.args
}

// keyArgs decodes the fields of a map key. bpftrace prints a pointer in
// a key in hex (@[0x40b538]: 1), but as a decimal value elsewhere.
func (pr *printer) keyArgs(fields []layout.Field, data []byte) []output.Value {
	return pr.appendKeyArgs(make([]output.Value, 0, len(fields)), fields, data)
}

// appendKeyArgs is keyArgs appending to args.
func (pr *printer) appendKeyArgs(args []output.Value, fields []layout.Field, data []byte) []output.Value {
	for _, f := range fields {
		args = append(args, pr.keyValue(f, data[f.Offset:]))
	}
	return args
}

// keyValue decodes one field of a map key that starts at b[0]: pointers
// in hex, stacks indented less than elsewhere.
func (pr *printer) keyValue(f layout.Field, b []byte) output.Value {
	switch f.Kind {
	case layout.Pointer:
		return output.Str(fmt.Sprintf("%#x", u64(b, 0)))
	case layout.Stack:
		return output.Str(pr.input(func() string { return pr.resolve(f, b, symbols.KeyIndent) }))
	case layout.Tuple:
		v := output.Tuple(pr.keyArgs(f.Elems, b)...)
		v.Names = f.Names
		return v
	}
	return pr.value(f, b)
}

// value decodes one field that starts at b[0], as package layout documents
// the encodings.
func (pr *printer) value(f layout.Field, b []byte) output.Value {
	if resolvedKind(f.Kind) {
		return output.Str(pr.input(func() string { return pr.resolve(f, b, symbols.ValueIndent) }))
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
			elems[i] = pr.value(ef, b[ef.Offset:])
		}
		v := output.Tuple(elems...)
		v.Names = f.Names
		return v
	case layout.Array:
		return arrayValue(f, b)
	case layout.Probe:
		i := u64(b, 0)
		if i < uint64(len(pr.spec.Attachments)) {
			return output.Str(pr.spec.Attachments[i].ProbeName)
		}
		return output.Str(fmt.Sprintf("probe#%d", i))
	case layout.Timestamp:
		return output.Str(pr.timestampText(b))
	case layout.Errno:
		return output.Str(output.ErrnoText(int64(u64(b, 0))))
	case layout.Signal:
		return output.Str(output.SignalText(int64(u64(b, 0))))
	case layout.Syscall:
		return output.Str(output.SyscallText(int64(u64(b, 0))))
	case layout.Macaddr:
		return output.Str(output.MacaddrText(b[:6]))
	case layout.Bool:
		return output.Boolean(u64(b, 0) != 0)
	case layout.Pointer:
		// Current bpftrace prints pointers in hex; 0.17 in decimal.
		return output.Value{Kind: output.ValueInt, Bits: u64(b, 0), Hex: pr.prog.Newer}
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
func (pr *printer) timestampText(b []byte) string {
	i := u64(b, 0)
	if i >= uint64(len(pr.spec.TimeFormats)) {
		return fmt.Sprintf("strftime#%d", i)
	}
	return output.Strftime(pr.spec.TimeFormats[i], pr.wallTime(u64(b, 8)))
}

// userName returns the name of user uid, "" for a uid with no name, as
// bpftrace prints username. Names are looked up once per uid.
func (pr *printer) userName(uid uint64) string {
	if name, ok := pr.users[uid]; ok {
		return name
	}
	name := ""
	if u, err := user.LookupId(strconv.FormatUint(uid, 10)); err == nil {
		name = u.Username
	}
	if pr.users == nil {
		pr.users = map[uint64]string{}
	}
	pr.users[uid] = name
	return name
}

// wallTime converts a bpf_ktime_get_ns time (CLOCK_MONOTONIC) into wall
// clock time.
func (pr *printer) wallTime(mono uint64) time.Time {
	return pr.bootWall.Add(time.Duration(mono))
}

// printf prints a printf record.
func (pr *printer) printf(ev *codegen.Event, data []byte) error {
	return pr.out.Printf(ev.Parts, pr.recordArgs(ev.Args, data))
}

// diagnostic prints errorf()'s and warnf()'s message as bpftrace does: a
// diagnostic at the call, on standard error (warnings not with
// --no-warnings).
func (pr *printer) diagnostic(ev *codegen.Event, data []byte) error {
	warn := ev.Kind == codegen.EventWarnf
	if warn && pr.opts.NoWarnings {
		return nil
	}
	text, err := output.AppendPrintf(nil, ev.Parts, pr.recordArgs(ev.Args, data))
	if err != nil {
		return err
	}
	msg := lang.ErrorList{{Span: ev.Pos, Msg: strings.TrimSuffix(string(text), "\n")}}
	if pr.opts.Diagnostic != nil {
		pr.opts.Diagnostic(warn, msg[0].Msg)
	}
	if warn {
		msg.WriteWarnings(pr.opts.Err, pr.prog.File, pr.prog.Source)
	} else {
		msg.Write(pr.opts.Err, pr.prog.File, pr.prog.Source)
	}
	return nil
}

// printValue prints print(value) for a non-map value.
func (pr *printer) printValue(ev *codegen.Event, data []byte) error {
	if len(ev.Args) != 1 {
		return fmt.Errorf("decode print record: %d values, want 1", len(ev.Args))
	}
	var c layout.Cursor // a large buf is packed
	return pr.out.Value(pr.value(ev.Args[0], c.Field(ev.Args[0], data)))
}

// outputMap reads a user map and converts it for printing.
func (pr *printer) outputMap(m *codegen.Map) (*output.Map, error) {
	entries, err := pr.printedEntries(m)
	if err != nil {
		return nil, err
	}
	om := &output.Map{Name: m.Name, Kind: m.Kind, Lhist: m.Lhist, HistBits: m.HistBits, Tseries: m.Tseries, Newer: pr.prog.Newer, KeyStacks: keyStacks(m.KeyFields)}
	resolves := resolvesFields(m.KeyFields) || resolvesFields([]layout.Field{m.Value})
	if pr.capture != nil && !resolves {
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
			*oe = pr.outputEntry(m, entries[i], oe.Key[:0])
		}
		return om, nil
	}
	om.Entries = make([]output.Entry, 0, len(entries))
	// Every key's values come from one allocation.
	keys := make([]output.Value, len(entries)*len(m.KeyFields))
	for _, e := range entries {
		om.Entries = append(om.Entries, pr.outputEntry(m, e, keys[:0:len(m.KeyFields)]))
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
func (pr *printer) outputEntry(m *codegen.Map, e *mapEntry, key []output.Value) output.Entry {
	oe := output.Entry{Count: e.Count, Total: e.Total, Buckets: e.Buckets, Intervals: e.Intervals}
	if e.Key != nil {
		oe.Key = pr.appendKeyArgs(key, m.KeyFields, e.Key)
	}
	switch m.Kind {
	case layout.MapCount:
		oe.Value = output.Uint(e.Count)
	case layout.MapSum, layout.MapMin, layout.MapMax:
		oe.Value = output.Int(e.Total)
	case layout.MapValue:
		oe.Value = pr.value(m.Value, e.Value)
	}
	return oe
}

// printMap prints one map for print(@m, top, div).
func (pr *printer) printMap(name string, top, div int64) error {
	m, err := pr.userMap(name)
	if err != nil {
		return err
	}
	om, err := pr.outputMap(m)
	if err != nil {
		return err
	}
	if len(om.Entries) == 0 && len(m.KeyFields) == 0 && pr.prog.Newer {
		pr.addZeroEntry(om, m)
	}
	return pr.out.Map(om, uint64(max(top, 0)), uint64(max(div, 0)))
}

// addZeroEntry gives om, a map without keys that holds no value yet, the
// zero value of its kind: bpftrace 0.24 prints an unset map of assigned
// values, counts, sums, mins and maxes as zero (@: 0, @: { .a = 0 }).
func (pr *printer) addZeroEntry(om *output.Map, m *codegen.Map) {
	switch m.Kind {
	case layout.MapValue:
		// A value's fields end within Size bytes; 8 more cover the
		// u64 of a kind of Size 0.
		om.Entries = append(om.Entries, output.Entry{Value: pr.value(m.Value, make([]byte, m.Value.Size+8))})
	case layout.MapCount:
		om.Entries = append(om.Entries, output.Entry{Value: output.Uint(0)})
	case layout.MapSum, layout.MapMin, layout.MapMax:
		om.Entries = append(om.Entries, output.Entry{Value: output.Int(0)})
	}
}

// outputMaps reads every map for printing. The caller holds pr.mu.
func (pr *printer) outputMaps() ([]*output.Map, error) {
	return pr.outputMapsWhere(func(*codegen.Map) bool { return true })
}

// outputMapsWhere reads the maps that keep accepts. The caller holds pr.mu.
func (pr *printer) outputMapsWhere(keep func(*codegen.Map) bool) ([]*output.Map, error) {
	maps := make([]*output.Map, 0, len(pr.spec.Maps))
	for i := range pr.spec.Maps {
		if !keep(&pr.spec.Maps[i]) {
			continue
		}
		om, err := pr.outputMap(&pr.spec.Maps[i])
		if err != nil {
			return nil, err
		}
		maps = append(maps, om)
	}
	return maps, nil
}

// printAllMaps prints every map, as on SIGUSR1. The caller holds pr.mu.
func (pr *printer) printAllMaps() error {
	maps, err := pr.outputMaps()
	if err != nil {
		return err
	}
	return pr.out.Maps(maps)
}

// printTime prints time() with its strftime format.
func (pr *printer) printTime(ev *codegen.Event) error {
	now := pr.input(func() string { return strconv.FormatInt(time.Now().UnixNano(), 10) })
	ns, err := strconv.ParseInt(now, 10, 64)
	if err != nil {
		return pr.replay.Corrupt(fmt.Errorf("time(): %w", err))
	}
	return pr.out.Message(output.MessageTime, output.Strftime(ev.Format, time.Unix(0, ns)))
}

// system runs system()'s command (allowed by --unsafe) with the shell and
// prints its standard output. A replay prints the output the command
// gave, and runs nothing.
func (pr *printer) system(ev *codegen.Event, data []byte) error {
	cmd, err := output.AppendPrintf(nil, ev.Parts, pr.recordArgs(ev.Args, data))
	if err != nil {
		return err
	}
	out := pr.input(func() string {
		c := exec.Command("/bin/sh", "-c", string(cmd))
		var out bytes.Buffer
		c.Stdout = &out
		c.Stderr = pr.opts.Err
		pr.flushOut() // before the command's own errors
		err := proc.StartUnfavoured(c, pr.loop.favoured)
		if err == nil {
			err = c.Wait()
		}
		var exitErr *exec.ExitError
		if err != nil && !errors.As(err, &exitErr) {
			pr.keepErr(fmt.Errorf("run system command %q: %w", cmd, err))
		}
		return out.String()
	})
	return pr.out.Message(output.MessageSyscall, out)
}

// cat prints the start of the file cat() names. A replay prints what the
// file held then.
func (pr *printer) cat(ev *codegen.Event, data []byte) error {
	name, err := output.AppendPrintf(nil, ev.Parts, pr.recordArgs(ev.Args, data))
	if err != nil {
		return err
	}
	var text string
	// Two inputs: why the file could not be read ("" when it was), then
	// its text.
	reason := pr.input(func() string {
		var err error
		text, err = readStart(string(name), cmp.Or(pr.opts.CatBytesMax, settings.DefaultCatBytesMax))
		if err == nil {
			return ""
		}
		// bpftrace's message, with strerror's text.
		return output.Strerror(err)
	})
	if reason != "" {
		pr.flushOut()
		fmt.Fprintf(pr.opts.Err, "ERROR: failed to open file '%s': %s\n", name, reason)
		return nil
	}
	return pr.out.Message(output.MessageCat, pr.input(func() string { return text }))
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
func (pr *printer) join(ev *codegen.Event, data []byte) error {
	var parts []string
	for _, v := range pr.recordArgs(ev.Args, data) {
		if v.Kind == output.ValueString && v.Str != "" {
			parts = append(parts, v.Str)
		}
	}
	return pr.out.Message(output.MessageJoin, strings.Join(parts, ev.Format)+"\n")
}
