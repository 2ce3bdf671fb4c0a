package attachpoint

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Point is an attach point split into its fields.
//
//	usdt:PATH:PROVIDER:NAME   Target=PATH Provider=PROVIDER Func=NAME
//	usdt:PATH:NAME            Target=PATH Func=NAME
//	uprobe:PATH:SYMBOL        Target=PATH Func=SYMBOL (quotes removed)
//	uprobe:PATH:0x1234        Target=PATH Address=0x1234
//	interval:s:1              Unit="s" Freq=1
//	tracepoint:CAT:NAME       Target=CAT Func=NAME
//	kprobe:FUNC               Func=FUNC
//	watchpoint:0x1000:8:w     Address=0x1000 Len=8 Mode="w"
//
// A positional parameter (usdt:$1:net:inbound_message) is kept as written,
// here Target="$1", and a rate given as one (interval:s:$1) is FreqParam.
type Point struct {
	Kind     Kind
	Target   string
	Provider string
	Func     string
	Unit     string
	Freq     uint64
	// FreqParam is a positional parameter given as the rate, with Freq 0.
	FreqParam string
	// Address is set for uprobe:PATH:0x1234 (an address in PATH); Func is
	// then empty. It is also the address a watchpoint watches.
	Address uint64
	// Len and Mode are a watchpoint's length in bytes (1, 2, 4 or 8) and
	// the accesses it fires on: "w", "rw" (or "wr") or "x".
	Len  uint64
	Mode string
}

// errUnterminated is Split's error for a quote that is not closed.
var errUnterminated = errors.New("unterminated quote")

// Split splits an attach point or a -l pattern at its colons; a
// double-quoted part may hold colons and other characters (C++ names) and
// loses its quotes and the backslashes that escape characters in it.
func Split(raw string) ([]string, error) {
	var parts []string
	var cur strings.Builder
	quoted := false
	for i := 0; i < len(raw); i++ {
		switch c := raw[i]; {
		case c == '"':
			quoted = !quoted
		case c == '\\' && quoted && i+1 < len(raw):
			// Inside quotes a backslash escapes the next character: a
			// USDT probe may be named with quotes ("\"probe1\"").
			i++
			cur.WriteByte(raw[i])
		case c == ':' && !quoted:
			parts = append(parts, cur.String())
			cur.Reset()
		default:
			cur.WriteByte(c)
		}
	}
	if quoted {
		return nil, errUnterminated
	}
	return append(parts, cur.String()), nil
}

// Parse splits the attach point raw of a script into its fields, with
// bpftrace's messages for what is wrong (several at once, as an interval
// with both a bad unit and a bad rate). A probe type that gotrace does not
// know leaves Kind Unknown.
func Parse(raw string) (Point, []error) {
	var p Point
	parts, err := Split(raw)
	if err != nil {
		return p, []error{err}
	}
	kind, ok := LookupKind(parts[0])
	if !ok {
		if name, known := Unattached(parts[0]); known {
			return p, []error{fmt.Errorf("probe type %s is not supported by gotrace", name)}
		}
		return p, []error{fmt.Errorf("Invalid probe type: %s", parts[0])}
	}
	p.Kind = kind
	args := parts[1:]
	var errs []error
	need := func(n int, what string) bool {
		if len(args) != n {
			errs = append(errs, ArgCountError(parts[0], what))
			return false
		}
		return true
	}
	switch kind {
	case Begin, End:
		need(0, "0 arguments")
	case USDT:
		switch len(args) {
		case 2:
			p.Target, p.Func = args[0], args[1]
		case 3:
			p.Target, p.Provider, p.Func = args[0], args[1], args[2]
		default:
			errs = append(errs, ArgCountError(parts[0], "2 or 3 arguments"))
		}
	case Uprobe, Uretprobe:
		if need(2, "2 arguments") {
			p.Target, p.Func = args[0], args[1]
			if hex, ok := strings.CutPrefix(p.Func, "0x"); ok {
				v, err := strconv.ParseUint(hex, 16, 64)
				if err != nil {
					errs = append(errs, fmt.Errorf("invalid address %s", p.Func))
				}
				p.Address, p.Func = v, ""
			}
		}
	case Tracepoint:
		if need(2, "2 arguments") {
			p.Target, p.Func = args[0], args[1]
		}
	case Kprobe, Kretprobe, Kfunc, Kretfunc:
		if need(1, "1 argument") {
			p.Func = args[0]
		}
	case Software, Hardware:
		if len(args) != 1 && len(args) != 2 {
			errs = append(errs, ArgCountError(parts[0], "1 or 2 arguments"))
			break
		}
		p.Func = args[0]
		if _, ok := LookupPerfEvent(kind, p.Func); !ok {
			errs = append(errs, fmt.Errorf("%s is not a %s probe", p.Func, kind))
		}
		if len(args) == 2 {
			if IsPositional(args[1]) {
				p.FreqParam = args[1]
				break
			}
			v, err := ParseFreq(kind, "", args[1])
			if err != nil {
				errs = append(errs, err)
			}
			p.Freq = v
		}
	case Watchpoint:
		if need(3, "3 arguments") {
			errs = parseWatchpoint(&p, args)
		}
	case Interval, Profile:
		if ns, ok := parseDurationArg(args); kind == Interval && len(args) == 1 && ok {
			// bpftrace 0.24: interval:10ms, a duration.
			_, inRange := Period("us", ns/1000)
			switch {
			case ns%1000 != 0 || ns == 0:
				errs = append(errs, fmt.Errorf("interval %s must be a positive whole number of microseconds", args[0]))
			case !inRange:
				errs = append(errs, fmt.Errorf("interval %s is longer than the longest period (%d years)", args[0], longestYears))
			default:
				p.Unit, p.Freq = "us", ns/1000
			}
			return p, errs
		}
		if !need(2, "2 arguments") {
			return p, errs
		}
		p.Unit = args[0]
		switch p.Unit {
		case "s", "ms", "us", "hz":
		default:
			errs = append(errs, fmt.Errorf("%s is not an accepted unit of time", p.Unit))
		}
		if IsPositional(args[1]) {
			p.FreqParam = args[1]
			return p, errs
		}
		v, err := ParseFreq(kind, p.Unit, args[1])
		if err != nil {
			errs = append(errs, err)
		}
		p.Freq = v
	}
	return p, errs
}

// parseWatchpoint reads the ADDR:LEN:MODE fields of a watchpoint into p,
// with bpftrace 0.17's messages for a bad length and mode (both are
// reported), and its checks that the kernel would otherwise refuse at
// attach time with EINVAL: the address aligned to the length, and an
// execute watchpoint as long as an instruction address (8 bytes).
func parseWatchpoint(p *Point, args []string) []error {
	if strings.Contains(args[0], "+") {
		// bpftrace's FUNC+argN form sets the watchpoint from a uprobe on
		// FUNC at the address its argument holds.
		return []error{fmt.Errorf("watchpoints on a function's argument (%s) are not supported by gotrace: give the address to watch", args[0])}
	}
	addr, ok := ParseNumber(args[0])
	if !ok {
		return []error{fmt.Errorf("invalid address %s", args[0])}
	}
	length, ok := ParseNumber(args[1])
	if !ok {
		return []error{fmt.Errorf("invalid watchpoint length %s", args[1])}
	}
	p.Address, p.Len, p.Mode = addr, length, args[2]
	var errs []error
	lengthOK := length == 1 || length == 2 || length == 4 || length == 8
	if !lengthOK {
		errs = append(errs, errors.New("watchpoint length must be one of (1,2,4,8)"))
	}
	switch {
	case strings.Trim(p.Mode, "rwx") != "" || p.Mode == "":
		errs = append(errs, errors.New("watchpoint mode must be combination of (r,w,x)"))
	case strings.Count(p.Mode, "r") > 1 || strings.Count(p.Mode, "w") > 1 || strings.Count(p.Mode, "x") > 1:
		errs = append(errs, errors.New("watchpoint modes may not be duplicated"))
	case p.Mode != "w" && p.Mode != "rw" && p.Mode != "wr" && p.Mode != "x":
		// The hardware watches writes, reads and writes, or execution.
		errs = append(errs, fmt.Errorf("invalid watchpoint mode: %s", p.Mode))
	case lengthOK && p.Mode == "x" && length != 8:
		errs = append(errs, fmt.Errorf("an execute watchpoint (x) watches 8 bytes, not %d", length))
	case lengthOK && addr%length != 0:
		errs = append(errs, fmt.Errorf("watchpoint address %#x is not a multiple of its length %d", addr, length))
	}
	return errs
}

// WatchAccess returns the kernel's HW_BREAKPOINT_* bits of a watchpoint
// mode that Parse accepted: r is 1, w 2 and x 4.
func WatchAccess(mode string) uint32 {
	var bits uint32
	for _, c := range mode {
		switch c {
		case 'r':
			bits |= 1
		case 'w':
			bits |= 2
		case 'x':
			bits |= 4
		}
	}
	return bits
}

// parseDurationArg parses the one argument of args as a duration.
func parseDurationArg(args []string) (uint64, bool) {
	if len(args) != 1 {
		return 0, false
	}
	return ParseDuration(args[0])
}

// ArgCountError is bpftrace's message for a probe type, as written
// (usdt or U), given the wrong number of fields; want is the number it
// takes ("2 or 3 arguments").
func ArgCountError(typ, want string) error {
	return fmt.Errorf("%s probe type requires %s", typ, want)
}

// IsPositional reports whether s is a positional parameter ($1, $2 ...).
func IsPositional(s string) bool {
	if len(s) < 2 || s[0] != '$' {
		return false
	}
	for _, ch := range s[1:] {
		if ch < '0' || ch > '9' {
			return false
		}
	}
	return true
}

// ParseFreq parses the rate or count s of an attach point of the given
// kind: the N of interval:UNIT:N and profile:UNIT:N, whose period in
// unit must be one gotrace can wait (Period), or a software or hardware
// probe's count (unit "").
func ParseFreq(kind Kind, unit, s string) (uint64, error) {
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s probe needs a number, not %q", kind, s)
	}
	if kind == Profile && v == 0 {
		return 0, errors.New("profile frequency should be a positive integer")
	}
	if kind != Interval && kind != Profile || unit == "" || kind == Profile && unit == "hz" {
		// A count, or a profile's sampling frequency, which the kernel
		// bounds (perf_event_max_sample_rate) and checks itself.
		return v, nil
	}
	if v == 0 {
		return 0, fmt.Errorf("%s period should be a positive integer", kind)
	}
	if _, ok := Period(unit, v); !ok {
		if unit == "hz" {
			return 0, fmt.Errorf("%s rate of %d hz is above %d hz, once a nanosecond", kind, v, time.Second)
		}
		return 0, fmt.Errorf("%s period of %d %s is longer than the longest period (%d years)", kind, v, unit, longestYears)
	}
	return v, nil
}

// longestYears is the longest period, time.Duration's, in whole years,
// for messages.
var longestYears = int(time.Duration(math.MaxInt64).Hours() / 24 / 365.25)

// Period returns the period of N in unit (s, ms, us, or hz: N times a
// second), and false for a unit not of time, N of 0, or a period that is
// not a whole number of nanoseconds from 1 to the longest time.Duration.
func Period(unit string, n uint64) (time.Duration, bool) {
	var per uint64
	switch unit {
	case "s":
		per = uint64(time.Second)
	case "ms":
		per = uint64(time.Millisecond)
	case "us":
		per = uint64(time.Microsecond)
	case "hz":
		if n == 0 || n > uint64(time.Second) {
			return 0, false
		}
		return time.Second / time.Duration(n), true
	default:
		return 0, false
	}
	if n == 0 || n > math.MaxInt64/per {
		return 0, false
	}
	return time.Duration(n * per), true
}

// ParseNumber parses a decimal or 0x-prefixed hexadecimal number, as
// bpftrace reads the address or offset of a uprobe.
func ParseNumber(s string) (uint64, bool) {
	base := 10
	if h, ok := strings.CutPrefix(s, "0x"); ok {
		s, base = h, 16
	}
	n, err := strconv.ParseUint(s, base, 64)
	return n, err == nil
}

// Func is the function field of a uprobe, parsed: a function name, a
// function and an offset (main+2, main+0x10), or a decimal address (8802,
// the form bpftrace's probe builtin prints; the parser reads hexadecimal
// ones, 0x2262, into Point.Address and leaves the field empty).
type Func struct {
	// Field is the field as written.
	Field string
	// Name is the function, or the whole field when it has no offset.
	Name string
	// Offset is the offset after the function; HasOffset says that the
	// field gave one (main+0 has Offset 0 and HasOffset set).
	Offset    uint64
	HasOffset bool
	// Address is the decimal address; IsAddress says that the field is one.
	Address   uint64
	IsAddress bool
}

// ParseFunc parses the function field of a uprobe: the one place where a
// field is split into function and offset, for attach points (lang.Resolve
// parses each once, after substituting parameters) and for -l patterns
// alike. A field given as FUNC+OFFSET (main+2, main+0x10) is split at its
// last +; any other field is the name.
func ParseFunc(field string) Func {
	f := Func{Field: field, Name: field}
	if n, err := strconv.ParseUint(field, 10, 64); err == nil {
		f.Address, f.IsAddress = n, true
	}
	if i := strings.LastIndexByte(field, '+'); i > 0 {
		if off, ok := ParseNumber(field[i+1:]); ok {
			f.Name, f.Offset, f.HasOffset = field[:i], off, true
		}
	}
	return f
}

// AtAddress reports whether the field places a uprobe at an address rather
// than at functions: empty (the parser's hexadecimal address), a decimal
// address or FUNC+OFFSET.
func (f Func) AtAddress() bool { return f.Name == "" || f.HasOffset || f.IsAddress }

// Suffix is the "+OFFSET" text of a field with a non-zero offset, as the
// field gives it (+2, +0x10), or "".
func (f Func) Suffix() string {
	if f.Offset == 0 {
		return ""
	}
	return f.Field[len(f.Name):]
}
