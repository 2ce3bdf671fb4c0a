package usdt

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// ListOptions selects the probes that List prints.
type ListOptions struct {
	// Pattern is a probe pattern as given to `-l`: "usdt:PATH:NAME" or
	// "usdt:PATH:PROVIDER:NAME", where every field may hold the globs
	// `*` and `?` and a field may be double-quoted. With a PID,
	// "usdt:NAME" is accepted too and PATH selects among the process's
	// objects. An empty Pattern with a PID lists all its probes.
	Pattern string
	// PID, when not 0, lists the probes of the executable and the shared
	// objects that this process has mapped.
	PID int
	// Verbose (`-lv`) follows each probe's line with its locations
	// (address, file offset, semaphore) and each location's arguments
	// (index, bpftrace type, operand), indented. bpftrace 0.17 prints
	// nothing more for usdt probes with -lv, so these lines are additive:
	// the probe lines are the same as without Verbose.
	Verbose bool
}

// List writes the USDT probes that match opts to w the way bpftrace 0.17's
// `-l` does: one line "usdt:PATH:PROVIDER:NAME" per probe, sorted byte by
// byte, each probe once. PATH is the path as given (a bare name found
// through $PATH is shown with its directory); with a PID it is the
// object's path under /proc/PID/root. A pattern that cannot be parsed, a
// missing or unreadable file and a process that does not exist are errors,
// returned before anything is written.
func List(w io.Writer, opts ListOptions) error {
	if err := list(w, opts); err != nil {
		return fmt.Errorf("list usdt probes: %w", err)
	}
	return nil
}

func list(w io.Writer, opts ListOptions) error {
	pat, err := parsePattern(opts.Pattern, opts.PID != 0)
	if err != nil {
		return err
	}
	var targets []target
	if opts.PID != 0 {
		targets, err = processTargets(opts.PID, pat.path)
	} else {
		targets, err = fileTargets(pat.path)
	}
	var pe *PatternError
	if errors.As(err, &pe) {
		pe.Pattern = opts.Pattern
	}
	if err != nil {
		return err
	}
	type entry struct {
		line  string
		probe *Probe
	}
	var entries []entry
	seen := make(map[string]bool)
	for _, t := range targets {
		probes, err := ReadFile(t.open)
		if err != nil {
			if t.optional {
				continue
			}
			return err
		}
		for i := range probes {
			p := &probes[i]
			if !globMatch(pat.provider, p.Provider) || !globMatch(pat.name, p.Name) {
				continue
			}
			line := "usdt:" + t.display + ":" + p.Provider + ":" + p.Name
			if seen[line] {
				continue
			}
			seen[line] = true
			entries = append(entries, entry{line, p})
		}
	}
	slices.SortFunc(entries, func(a, b entry) int { return strings.Compare(a.line, b.line) })

	bw := bufio.NewWriter(w)
	for _, e := range entries {
		bw.WriteString(e.line)
		bw.WriteByte('\n')
		if opts.Verbose {
			writeDetails(bw, e.probe)
		}
	}
	return bw.Flush()
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

// pattern is a parsed usdt probe pattern; every field is a glob.
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

// targetFileError is bpftrace's message for a usdt path that names no
// readable ELF file.
func targetFileError(path string) error {
	return &PatternError{Msg: fmt.Sprintf("usdt target file '%s' does not exist or is not executable", path)}
}

type pattern struct {
	path, provider, name string
}

// parsePattern parses a `-l` pattern for usdt probes.
func parsePattern(s string, withPID bool) (pattern, error) {
	if s == "" {
		if withPID {
			return pattern{"*", "*", "*"}, nil
		}
		return pattern{}, fmt.Errorf("no probe pattern and no process to list")
	}
	fields, err := splitFields(s)
	if err != nil {
		return pattern{}, &PatternError{s, err.Error()}
	}
	if !globMatch(fields[0], "usdt") {
		return pattern{}, &PatternError{s, fmt.Sprintf("probe type '%s' is not usdt", fields[0])}
	}
	var p pattern
	switch args := fields[1:]; {
	case len(args) == 1 && withPID:
		p = pattern{"*", "*", args[0]}
	case len(args) == 2:
		p = pattern{args[0], "*", args[1]}
	case len(args) == 3:
		p = pattern{args[0], args[1], args[2]}
	default:
		return pattern{}, &PatternError{s, "usdt probe type requires 2 or 3 arguments"}
	}
	if p.provider == "" {
		p.provider = "*"
	}
	if p.path == "" {
		if !withPID {
			return pattern{}, &PatternError{s, "usdt probe must have a target file"}
		}
		p.path = "*"
	}
	if p.name == "" {
		return pattern{}, &PatternError{s, "usdt probe must have a target function or wildcard"}
	}
	return p, nil
}

// splitFields splits a pattern at its colons; a double-quoted part may
// contain colons and other characters and loses its quotes.
func splitFields(s string) ([]string, error) {
	var fields []string
	var cur strings.Builder
	quoted := false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"':
			quoted = !quoted
		case c == ':' && !quoted:
			fields = append(fields, cur.String())
			cur.Reset()
		default:
			cur.WriteByte(c)
		}
	}
	if quoted {
		return nil, fmt.Errorf("unterminated quote")
	}
	return append(fields, cur.String()), nil
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

// fileTargets finds the files a path pattern names. Like bpftrace, a name
// without a slash is also looked for in every $PATH directory; a pattern
// with a glob lists every ELF file it matches, a plain one the first.
func fileTargets(path string) ([]target, error) {
	candidates := []string{path}
	if !strings.Contains(path, "/") {
		for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
			if dir != "" {
				candidates = append(candidates, dir+"/"+path)
			}
		}
	}
	wildcard := strings.ContainsAny(path, "*?")
	if wildcard {
		var expanded []string
		for _, c := range candidates {
			matches, err := filepath.Glob(c)
			if err != nil {
				return nil, fmt.Errorf("path pattern %q: %w", path, err)
			}
			expanded = append(expanded, matches...)
		}
		candidates = expanded
	}
	var targets []target
	seen := make(map[string]bool)
	for _, c := range candidates {
		if seen[c] || !isELF(c) {
			continue
		}
		seen[c] = true
		targets = append(targets, target{display: c, open: c, optional: wildcard})
		if !wildcard {
			break
		}
	}
	if len(targets) == 0 {
		return nil, targetFileError(path)
	}
	return targets, nil
}

// isELF reports whether path is a regular file that starts like an ELF
// file.
func isELF(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return false
	}
	var magic [4]byte
	_, err = io.ReadFull(f, magic[:])
	return err == nil && string(magic[:]) == "\x7fELF"
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
			match = globMatch(path, o.Path) || globMatch(path, o.OpenPath)
		case strings.Contains(path, "/"):
			match = plain == o.Path || plain == o.OpenPath
		default:
			match = path == filepath.Base(o.Path)
		}
		if match {
			targets = append(targets, target{display: o.OpenPath, open: o.OpenPath})
		}
	}
	if len(targets) == 0 && !wildcard && strings.Contains(path, "/") && !isELF(plain) {
		return nil, targetFileError(path)
	}
	return targets, nil
}

// globMatch reports whether s matches the glob pattern, in which `*`
// matches any run of bytes (slashes and colons too) and `?` any one byte.
func globMatch(pattern, s string) bool {
	p, i := 0, 0
	starP, starI := -1, 0
	for i < len(s) {
		switch {
		case p < len(pattern) && (pattern[p] == '?' || pattern[p] == s[i]):
			p++
			i++
		case p < len(pattern) && pattern[p] == '*':
			starP, starI = p, i
			p++
		case starP >= 0:
			// Let the last star take one more byte and retry.
			starI++
			p, i = starP+1, starI
		default:
			return false
		}
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}
