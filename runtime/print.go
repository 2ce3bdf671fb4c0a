package runtime

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gotrace/gotrace/codegen"
	"github.com/gotrace/gotrace/lang"
)

// attaching prints "Attaching N probes...".
func (t *tracer) attaching(n int) {
	if t.opts.Format == "json" {
		fmt.Fprintf(t.opts.Out, "{\"type\": \"attached_probes\", \"data\": {\"probes\": %d}}\n", n)
		return
	}
	if n == 1 {
		fmt.Fprintln(t.opts.Out, "Attaching 1 probe...")
		return
	}
	fmt.Fprintf(t.opts.Out, "Attaching %d probes...\n", n)
}

// printLost reports n records the programs could not reserve.
func (t *tracer) printLost(n uint64) {
	if t.opts.Format == "json" {
		fmt.Fprintf(t.opts.Out, "{\"type\": \"lost_events\", \"data\": {\"events\": %d}}\n", n)
		return
	}
	fmt.Fprintf(t.opts.Out, "Lost %d events\n", n)
}

// formatRecord formats the fields of a record with a printf format.
func formatRecord(format string, fields []codegen.Field, data []byte) (string, error) {
	parts, err := lang.ParseFormat(format)
	if err != nil {
		return "", fmt.Errorf("format %q: %w", format, err)
	}
	var b strings.Builder
	arg := 0
	for _, part := range parts {
		v := part.Verb
		if v == nil {
			b.WriteString(part.Literal)
			continue
		}
		if arg >= len(fields) {
			return "", fmt.Errorf("format %q: not enough arguments", format)
		}
		f := fields[arg]
		arg++
		if v.Escaped {
			b.WriteString(v.Text[1:])
			continue
		}
		spec := "%" + v.Flags
		if v.Width >= 0 {
			spec += strconv.Itoa(v.Width)
		}
		if v.Prec >= 0 {
			spec += "." + strconv.Itoa(v.Prec)
		}
		field := data[f.Offset:]
		switch v.Arg() {
		case lang.FormatArgString:
			fmt.Fprintf(&b, spec+"s", cString(field[:f.Size]))
		case lang.FormatArgBuf:
			for _, c := range bufBytes(field, f.Type.Size) {
				if c >= 0x20 && c < 0x7f && v.Buf == 0 {
					b.WriteByte(c)
				} else {
					fmt.Fprintf(&b, "\\x%02x", c)
				}
			}
		default:
			n := u64(field, 0)
			switch v.Conv {
			case 'd':
				fmt.Fprintf(&b, spec+"d", int64(n))
			case 'u':
				fmt.Fprintf(&b, spec+"d", n)
			case 'c':
				b.WriteByte(byte(n))
			case 'p':
				fmt.Fprintf(&b, "0x%x", n)
			default:
				fmt.Fprintf(&b, spec+string(v.Conv), n)
			}
		}
	}
	return b.String(), nil
}

// printf prints a printf record.
func (t *tracer) printf(ev *codegen.Event, data []byte) error {
	s, err := formatRecord(ev.Format, ev.Args, data)
	if err != nil {
		return err
	}
	if t.opts.Format == "json" {
		fmt.Fprintf(t.opts.Out, "{\"type\": \"printf\", \"data\": %s}\n", strconv.Quote(s))
		return nil
	}
	_, err = io.WriteString(t.opts.Out, s)
	return err
}

// printValue prints print(value) for a non-map value.
func (t *tracer) printValue(ev *codegen.Event, data []byte) error {
	if len(ev.Args) == 0 {
		return nil
	}
	fmt.Fprintln(t.opts.Out, formatValue(ev.Args[0].Type, data[ev.Args[0].Offset:]))
	return nil
}

// formatValue formats a single decoded value.
func formatValue(typ lang.Type, b []byte) string {
	switch typ.Kind {
	case lang.KindString:
		return cString(b[:typ.Size])
	case lang.KindInt:
		if typ.Signed {
			return strconv.FormatInt(int64(u64(b, 0)), 10)
		}
		return strconv.FormatUint(u64(b, 0), 10)
	case lang.KindTuple:
		fields, _ := codegen.Layout(typ.Elems...)
		parts := make([]string, len(fields))
		for i, f := range fields {
			parts[i] = formatValue(f.Type, b[f.Offset:])
		}
		return "(" + strings.Join(parts, ", ") + ")"
	}
	return fmt.Sprintf("%#x", u64(b, 0))
}

// printMap prints one map for print(@m, top, div).
func (t *tracer) printMap(name string, top, div int64) error {
	m, em, err := t.userMap(name)
	if err != nil {
		return err
	}
	entries, err := readMap(m, em)
	if err != nil {
		return err
	}
	return t.writeMap(printedMap{m: m, entries: entries}, top, div)
}

// printMaps prints the maps at the end of the trace.
func (t *tracer) printMaps(all []printedMap) error {
	if len(all) > 0 {
		fmt.Fprintln(t.opts.Out)
	}
	for _, pm := range all {
		if len(pm.entries) == 0 {
			continue
		}
		fmt.Fprintln(t.opts.Out)
		if err := t.writeMap(pm, 0, 1); err != nil {
			return err
		}
	}
	return nil
}

// writeMap prints the entries of one map, sorted by value.
func (t *tracer) writeMap(pm printedMap, top, div int64) error {
	if div <= 0 {
		div = 1
	}
	entries := append([]*mapEntry(nil), pm.entries...)
	sort.SliceStable(entries, func(i, j int) bool { return entries[i].Total < entries[j].Total })
	if top > 0 && int64(len(entries)) > top {
		entries = entries[int64(len(entries))-top:]
	}
	for _, e := range entries {
		key := ""
		if e.Key != nil {
			var parts []string
			for _, f := range pm.m.KeyFields {
				parts = append(parts, formatValue(f.Type, e.Key[f.Offset:]))
			}
			key = "[" + strings.Join(parts, ", ") + "]"
		}
		val := ""
		switch pm.m.Info.Value.Kind {
		case lang.KindCount, lang.KindSum, lang.KindMin, lang.KindMax:
			val = strconv.FormatInt(e.Total/div, 10)
		case lang.KindAvg:
			if e.Count > 0 {
				val = strconv.FormatInt(e.Total/int64(e.Count)/div, 10)
			}
		default:
			val = formatValue(pm.m.Info.Value, e.Value)
		}
		fmt.Fprintf(t.opts.Out, "%s%s: %s\n", pm.m.Name, key, val)
	}
	return nil
}

// printTime prints time() with its strftime-like format.
func (t *tracer) printTime(ev *codegen.Event) error {
	fmt.Fprint(t.opts.Out, time.Now().Format("15:04:05\n"))
	return nil
}

// system runs system()'s command with --unsafe.
func (t *tracer) system(ev *codegen.Event, data []byte) error {
	cmd, err := formatRecord(ev.Format, ev.Args, data)
	if err != nil {
		return err
	}
	out, _ := exec.Command("/bin/sh", "-c", cmd).Output()
	_, err = t.opts.Out.Write(out)
	return err
}

// cat prints the file cat() names.
func (t *tracer) cat(ev *codegen.Event, data []byte) error {
	name, err := formatRecord(ev.Format, ev.Args, data)
	if err != nil {
		return err
	}
	b, err := os.ReadFile(name)
	if err != nil {
		fmt.Fprintf(t.opts.Err, "ERROR: failed to open file '%s': %v\n", name, err)
		return nil
	}
	_, err = t.opts.Out.Write(b)
	return err
}

// join prints join()'s strings separated by its delimiter.
func (t *tracer) join(ev *codegen.Event, data []byte) error {
	var parts []string
	for _, f := range ev.Args {
		parts = append(parts, cString(data[f.Offset:f.Offset+f.Size]))
	}
	fmt.Fprintln(t.opts.Out, strings.Join(parts, ev.Format))
	return nil
}
