// Package tracefs finds the kernel's tracing file system, lists its
// tracepoints and reads their format files: the record layout a tracepoint
// program's context points to. It is the host side of tracepoint probes;
// the language sees tracepoints only through what this package returns.
package tracefs

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// DefaultDir is where current kernels expect tracefs to be mounted.
const DefaultDir = "/sys/kernel/tracing"

// debugfsDir is where older set-ups reach tracefs, inside debugfs.
const debugfsDir = "/sys/kernel/debug/tracing"

// ErrNotMounted is returned by Find when no tracefs is mounted and the
// caller may not mount one.
var ErrNotMounted = errors.New("tracefs is not mounted")

// Find returns the directory of a mounted tracefs. With mount set and no
// tracefs mounted, it mounts one at DefaultDir, which needs CAP_SYS_ADMIN;
// the error then says how to do it by hand. A tracefs that is mounted but
// that this user may not search is said to be so (an error wrapping
// fs.ErrPermission), not reported as missing nor mounted over.
func Find(mount bool) (string, error) {
	var denied error
	for _, dir := range []string{DefaultDir, debugfsDir} {
		ok, err := isTracefs(dir)
		if ok {
			return dir, nil
		}
		if err != nil && denied == nil {
			denied = fmt.Errorf("find tracefs: %s is mounted, but this user may not read it: %w", dir, err)
		}
	}
	if denied != nil {
		return "", denied
	}
	if !mount {
		return "", fmt.Errorf("find tracefs: %w; mount it with: mount -t tracefs nodev %s", ErrNotMounted, DefaultDir)
	}
	if err := unix.Mount("nodev", DefaultDir, "tracefs", 0, ""); err != nil {
		return "", fmt.Errorf("mount tracefs at %s: %w (as root: mount -t tracefs nodev %s)", DefaultDir, err, DefaultDir)
	}
	return DefaultDir, nil
}

// isTracefs reports whether dir holds a mounted tracefs with events. The
// error is set only for a tracefs this user may not search.
func isTracefs(dir string) (bool, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil || st.Type != unix.TRACEFS_MAGIC {
		return false, nil
	}
	_, err := os.Stat(filepath.Join(dir, "events"))
	if errors.Is(err, fs.ErrPermission) {
		return false, err
	}
	return err == nil, nil
}

// Event names one tracepoint: its category (the directory under events/,
// such as "syscalls") and its name ("sys_enter_openat").
type Event struct {
	Category string
	Name     string
}

// String returns the event as "category:name".
func (e Event) String() string { return e.Category + ":" + e.Name }

// Events lists the tracepoints of the tracefs at dir that a program can
// attach to (available_events: ftrace's own events are not there), sorted
// bytewise by "category:name" as bpftrace lists them.
func Events(dir string) ([]Event, error) {
	data, err := os.ReadFile(filepath.Join(dir, "available_events"))
	if err != nil {
		return nil, fmt.Errorf("list tracepoints: %w", err)
	}
	// Each line is the event's "category:name", the key it sorts by: kept
	// beside it, so that sorting the thousands of events a kernel has
	// makes no string (joining the two at each comparison took 40% of
	// the start of a tracepoint trace).
	type keyed struct {
		key string
		ev  Event
	}
	var lines []keyed
	for line := range strings.Lines(string(data)) {
		key := strings.TrimSpace(line)
		cat, name, ok := strings.Cut(key, ":")
		if ok && cat != "" && name != "" {
			lines = append(lines, keyed{key, Event{Category: cat, Name: name}})
		}
	}
	slices.SortFunc(lines, func(a, b keyed) int { return strings.Compare(a.key, b.key) })
	lines = slices.CompactFunc(lines, func(a, b keyed) bool { return a.key == b.key })
	events := make([]Event, len(lines))
	for i, l := range lines {
		events[i] = l.ev
	}
	return events, nil
}

// Field is one field of a tracepoint's record, as its format file gives it.
type Field struct {
	// Name is the field's name, without any array suffix.
	Name string
	// Type is the C type as written, without the name, the array suffix
	// and __data_loc: "const char *", "char", "pid_t", "unsigned long".
	Type string
	// Offset and Size locate the field in the record, in bytes.
	Offset int
	Size   int
	// Signed is the format's signed flag.
	Signed bool
	// ArrayLen is N for a field declared NAME[N] (0 otherwise); a
	// __data_loc array has ArrayLen 0.
	ArrayLen int
	// DataLoc marks a __data_loc field: a u32 holding the offset (low 16
	// bits) and length (high 16 bits) of data stored later in the record.
	DataLoc bool
	// DataLocArray marks a __data_loc field declared as an array of
	// Type (__data_loc char[] name) rather than as one Type
	// (__data_loc cpumask_t cpumask).
	DataLocArray bool
	// Common marks the fields every event starts with (common_pid, ...).
	Common bool
}

// Decl returns the field as bpftrace -lv prints it: "const char * filename",
// "char prev_comm[16]", "__data_loc char[] cmd", "__data_loc cpumask_t cpumask".
func (f Field) Decl() string {
	typ := f.Type
	if f.DataLocArray {
		typ += "[]"
	}
	if f.DataLoc {
		typ = "__data_loc " + typ
	}
	decl := typ + " " + f.Name
	if f.ArrayLen > 0 {
		decl += "[" + strconv.Itoa(f.ArrayLen) + "]"
	}
	return decl
}

// Format is a tracepoint's record layout.
type Format struct {
	Event Event
	// ID is the tracepoint's id, which perf_event_open takes.
	ID     uint64
	Fields []Field
}

// ReadFormat reads the format file of one tracepoint.
func ReadFormat(dir string, ev Event) (*Format, error) {
	// A category or name with a path separator would escape events/.
	if strings.ContainsAny(ev.Category+ev.Name, "/\x00") || ev.Category == ".." || ev.Name == ".." {
		return nil, fmt.Errorf("read format of tracepoint %s: invalid name", ev)
	}
	data, err := os.ReadFile(filepath.Join(dir, "events", ev.Category, ev.Name, "format"))
	if err != nil {
		return nil, fmt.Errorf("read format of tracepoint %s: %w", ev, err)
	}
	f, err := ParseFormat(data)
	if err != nil {
		return nil, fmt.Errorf("read format of tracepoint %s: %w", ev, err)
	}
	f.Event = ev
	return f, nil
}

// ParseFormat parses the text of a format file.
func ParseFormat(data []byte) (*Format, error) {
	f := &Format{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	lineNo := 0
	for sc.Scan() {
		lineNo++
		line := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(line, "ID:"):
			id, err := strconv.ParseUint(strings.TrimSpace(line[len("ID:"):]), 10, 64)
			if err != nil {
				return nil, fmt.Errorf("line %d: bad ID: %w", lineNo, err)
			}
			f.ID = id
		case strings.HasPrefix(line, "field:"):
			field, err := parseField(line)
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", lineNo, err)
			}
			f.Fields = append(f.Fields, field)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return f, nil
}

// parseField parses one line such as
//
//	field:char prev_comm[16];	offset:8;	size:16;	signed:0;
func parseField(line string) (Field, error) {
	var field Field
	var haveOffset, haveSize bool
	for part := range strings.SplitSeq(line, ";") {
		key, val, ok := strings.Cut(strings.TrimSpace(part), ":")
		if !ok {
			continue
		}
		switch key {
		case "field":
			if err := field.parseDecl(strings.TrimSpace(val)); err != nil {
				return Field{}, err
			}
		case "offset", "size", "signed":
			n, err := strconv.Atoi(val)
			if err != nil || n < 0 {
				return Field{}, fmt.Errorf("field %q: bad %s %q", field.Name, key, val)
			}
			switch key {
			case "offset":
				field.Offset, haveOffset = n, true
			case "size":
				field.Size, haveSize = n, true
			case "signed":
				field.Signed = n != 0
			}
		}
	}
	if field.Name == "" || !haveOffset || !haveSize {
		return Field{}, fmt.Errorf("malformed field %q", line)
	}
	if field.ArrayLen > 0 && field.Size%field.ArrayLen != 0 {
		return Field{}, fmt.Errorf("field %s: size %d is not a multiple of its %d elements", field.Name, field.Size, field.ArrayLen)
	}
	return field, nil
}

// parseDecl splits a C declaration "TYPE NAME[N]" into the field.
func (f *Field) parseDecl(decl string) error {
	if rest, ok := strings.CutPrefix(decl, "__data_loc "); ok {
		f.DataLoc = true
		decl = rest
	}
	// The name is the last identifier; what stands before it is the type.
	end := len(decl)
	if strings.HasSuffix(decl, "]") {
		open := strings.LastIndexByte(decl, '[')
		if open < 0 {
			return fmt.Errorf("malformed declaration %q", decl)
		}
		if n := decl[open+1 : len(decl)-1]; n != "" {
			v, err := strconv.Atoi(n)
			if err != nil || v <= 0 {
				// An array whose length is a macro the format did not
				// expand: its size field still gives the bytes.
				v = 0
			}
			f.ArrayLen = v
		}
		end = open
	}
	start := end
	for start > 0 && isIdentByte(decl[start-1]) {
		start--
	}
	f.Name = decl[start:end]
	f.Type = strings.TrimSpace(decl[:start])
	if f.DataLoc {
		// __data_loc char[] NAME: the brackets belong to the type.
		typ, array := strings.CutSuffix(f.Type, "[]")
		f.Type, f.DataLocArray = strings.TrimSpace(typ), array
	}
	f.Common = strings.HasPrefix(f.Name, "common_")
	if f.Name == "" || f.Type == "" {
		return fmt.Errorf("malformed declaration %q", decl)
	}
	return nil
}

func isIdentByte(b byte) bool {
	return b == '_' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9'
}
