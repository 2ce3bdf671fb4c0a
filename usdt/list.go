package usdt

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gotrace/gotrace/lang/attachpoint"
)

// ListOptions selects the probes that List prints.
type ListOptions struct {
	// Pattern is a probe pattern as given to `-l`: "usdt:PATH:NAME",
	// "usdt:PATH:PROVIDER:NAME", "uprobe:PATH:FUNCTION" or
	// "uretprobe:PATH:FUNCTION", where every field may hold the globs `*`
	// and `?` and a field may be double-quoted. A wildcard probe type
	// stands for uprobe and usdt, as in bpftrace. With a PID, "usdt:NAME"
	// and "uprobe:FUNCTION" are accepted too: PATH selects among the
	// process's objects for usdt, and is the process's executable for
	// uprobes. An empty Pattern with a PID lists all the probes of the
	// process, as "*" does: its executable's functions and the usdt
	// probes of every object it maps.
	Pattern string
	// PID, when not 0, lists the probes of the executable and the shared
	// objects that this process has mapped.
	PID int
	// Verbose (`-lv`) follows each usdt probe's line with its locations
	// (address, file offset, semaphore) and each location's arguments
	// (index, bpftrace type, operand), indented. bpftrace 0.17 prints
	// nothing more for usdt probes with -lv, so these lines are additive:
	// the probe lines are the same as without Verbose. Uprobe lines are
	// followed by what UprobeParams gives, indented.
	Verbose bool
	// UprobeParams, when set, gives the parameters of a function of the
	// ELF file path as "TYPE NAME" lines (runtime/debuginfo reads them
	// from its DWARF), listed under its uprobe with Verbose, as bpftrace
	// 0.17 lists them.
	UprobeParams func(path, function string) []string
}

// List writes the probes that match opts to w the way bpftrace 0.17's
// `-l` does: one line "usdt:PATH:PROVIDER:NAME" per usdt probe and
// "uprobe:PATH:FUNCTION" per function, sorted byte by byte, each once.
// PATH is the path as given (a bare name found through $PATH is shown with
// its directory, a library name such as libc as the file found); with a
// PID a usdt probe's PATH is the object's path under /proc/PID/root. A
// pattern that cannot be parsed, a missing or unreadable file and a
// process that does not exist are errors, returned before anything is
// written.
func List(w io.Writer, opts ListOptions) error {
	err := list(w, opts)
	var pe *PatternError
	if errors.As(err, &pe) && pe.Pattern == "" {
		pe.Pattern = opts.Pattern
	}
	if err != nil {
		return fmt.Errorf("list probes: %w", err)
	}
	return nil
}

func list(w io.Writer, opts ListOptions) error {
	usdtPat, uprobes, err := parsePattern(opts.Pattern, opts.PID != 0)
	if err != nil {
		return err
	}
	// A file the pattern names is opened once: checked as a target,
	// then read, for its functions and its probes alike.
	var files Files
	defer files.Close()
	var lines []string
	params := map[string][]string{}
	for _, up := range uprobes {
		l, err := uprobeLines(up, opts.PID, &files)
		if err != nil {
			return err
		}
		for _, ul := range l {
			lines = append(lines, ul.text)
			if opts.Verbose && opts.UprobeParams != nil {
				params[ul.text] = opts.UprobeParams(ul.path, ul.function)
			}
		}
	}
	var probes map[string]*Probe
	if usdtPat != nil {
		if probes, err = usdtProbes(*usdtPat, opts.PID, opts.Verbose, &files); err != nil {
			return err
		}
		for line := range probes {
			lines = append(lines, line)
		}
	}
	slices.Sort(lines)
	lines = slices.Compact(lines)

	bw := bufio.NewWriter(w)
	for _, line := range lines {
		bw.WriteString(line)
		bw.WriteByte('\n')
		if p := probes[line]; p != nil && opts.Verbose {
			writeDetails(bw, p)
		}
		for _, param := range params[line] {
			bw.WriteString("    " + param + "\n")
		}
	}
	return bw.Flush()
}

// usdtProbes returns the usdt probes that pat names by their lines; their
// locations' arguments are parsed only for verbose, which prints them.
func usdtProbes(pat attachpoint.Point, pid int, verbose bool, files *Files) (map[string]*Probe, error) {
	var targets []target
	var err error
	if pid != 0 {
		targets, err = processTargets(pid, pat.Target)
	} else {
		targets, err = targetFiles("usdt", pat.Target, nil, files)
	}
	if err != nil {
		return nil, err
	}
	probes := make(map[string]*Probe)
	for _, t := range targets {
		src, done := t.files(files)
		read := src.ProbeNames
		if verbose {
			read = src.Probes
		}
		found, err := read(t.open)
		done()
		if err != nil {
			if t.optional {
				continue
			}
			return nil, err
		}
		for i := range found {
			p := &found[i]
			if !attachpoint.Glob.Match(pat.Provider, p.Provider) || !attachpoint.Glob.Match(pat.Func, p.Name) {
				continue
			}
			line := "usdt:" + t.display + ":" + p.Provider + ":" + p.Name
			if probes[line] == nil {
				probes[line] = p
			}
		}
	}
	return probes, nil
}

// writeDetails writes the `-lv` lines of p: each location with its
// addresses, then its arguments with their bpftrace types and operands.
func writeDetails(w *bufio.Writer, p *Probe) {
	for _, loc := range p.Locations {
		fmt.Fprintf(w, "    location %#x (offset %#x)", loc.PC, loc.Offset)
		if loc.Semaphore != 0 {
			fmt.Fprintf(w, ", semaphore %#x (offset %#x)", loc.Semaphore, loc.SemaphoreOffset)
		}
		w.WriteByte('\n')
		for i, a := range loc.Args {
			typ := "uint"
			sign := ""
			if a.Signed {
				typ = "int"
				sign = "-"
			}
			fmt.Fprintf(w, "        arg%d: %s%d %s%d@%s\n", i, typ, a.Size*8, sign, a.Size, a.Operand)
		}
		if loc.ArgsErr != nil {
			fmt.Fprintf(w, "        error: %v\n", loc.ArgsErr)
		}
	}
}

// PatternError is a problem with a -l pattern itself or with the file it
// names; bpftrace reports these as a diagnostic under the pattern.
type PatternError struct {
	Pattern string
	Msg     string
}

// Error returns the message with the pattern it is about.
func (e *PatternError) Error() string {
	return fmt.Sprintf("pattern %q: %s", e.Pattern, e.Msg)
}

// parsePattern parses a `-l` pattern (attachpoint.ParsePattern) into the
// usdt pattern (nil when the pattern names no usdt probes) and the uprobe
// patterns it stands for. An empty pattern with a PID is "*".
func parsePattern(s string, withPID bool) (*attachpoint.Point, []attachpoint.Point, error) {
	if s == "" {
		if !withPID {
			return nil, nil, errors.New("no probe pattern and no process to list")
		}
		s = "*"
	}
	points, err := attachpoint.ParsePattern(s, withPID)
	if err != nil {
		return nil, nil, &PatternError{s, err.Error()}
	}
	var usdtPat *attachpoint.Point
	var uprobes []attachpoint.Point
	for i, p := range points {
		if p.Kind == attachpoint.USDT {
			usdtPat = &points[i]
		} else {
			uprobes = append(uprobes, p)
		}
	}
	return usdtPat, uprobes, nil
}

// target is one file to read probes from.
type target struct {
	// display is the path printed in the probe's line.
	display string
	// open is the path to read the file by.
	open string
	// optional targets came from a wildcard: one that cannot be read is
	// skipped instead of failing the listing.
	optional bool
}

// files returns what t is read through, and what to call once it is
// read: the listing's files, which keep a file the pattern names open
// from its check as a target to its reading, or for a target a wildcard
// matched (a directory may hold thousands, not all kept open) a Files of
// its own, closed by done.
func (t target) files(listing *Files) (files *Files, done func()) {
	if !t.optional {
		return listing, func() {}
	}
	own := &Files{}
	return own, func() { own.Close() }
}

// processTargets finds the objects of process pid that a path pattern
// names: a glob is matched against both the path the process sees and the
// /proc/PID/root path, a plain absolute path must equal one of them and a
// bare name the file name.
func processTargets(pid int, path string) ([]target, error) {
	objs, err := MappedObjects(pid)
	if err != nil {
		return nil, err
	}
	wildcard := strings.ContainsAny(path, "*?")
	plain := path
	if !wildcard && strings.Contains(path, "/") {
		if abs, err := filepath.Abs(path); err == nil {
			plain = abs
		}
	}
	var targets []target
	for _, o := range objs {
		var match bool
		switch {
		case wildcard:
			match = attachpoint.Glob.Match(path, o.Path) || attachpoint.Glob.Match(path, o.OpenPath)
		case strings.Contains(path, "/"):
			match = plain == o.Path || plain == o.OpenPath
		default:
			match = path == filepath.Base(o.Path)
		}
		if match {
			targets = append(targets, target{display: o.OpenPath, open: o.OpenPath})
		}
	}
	if len(targets) == 0 && !wildcard && strings.Contains(path, "/") && !isTargetFile(plain, nil) {
		return nil, targetFileError("usdt", path)
	}
	return targets, nil
}
