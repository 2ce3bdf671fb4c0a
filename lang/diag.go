package lang

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
)

// Error is one diagnostic: a message about the source range Span, with an
// optional hint printed after it.
type Error struct {
	Span Span
	Msg  string
	Hint string
}

// Error formats the diagnostic as "LINE:COL-COL: message".
func (e *Error) Error() string {
	return e.location() + ": " + e.Msg
}

// location is the LINE:COL-COL (or LINE-LINE) part of a diagnostic.
func (e *Error) location() string {
	s := e.Span
	if s.End.Line > s.Start.Line {
		return fmt.Sprintf("%d-%d", s.Start.Line, s.End.Line)
	}
	return fmt.Sprintf("%d:%d-%d", s.Start.Line, s.Start.Col, s.End.Col)
}

// ErrorList is the error Parse and Check return: every problem found in a
// script, in source order.
type ErrorList []*Error

// Error returns the first diagnostic, and how many more there are.
func (l ErrorList) Error() string {
	switch len(l) {
	case 0:
		return "no errors"
	case 1:
		return l[0].Error()
	}
	return fmt.Sprintf("%s (and %d more errors)", l[0].Error(), len(l)-1)
}

// Sort puts the diagnostics of l in the order of their places in the
// script, as bpftrace reports them: by where they start, then an inner
// expression's before the one around it, which ends later (bpftrace checks
// the operands first); those of one place keep their order.
func (l ErrorList) Sort() {
	slices.SortStableFunc(l, func(a, b *Error) int {
		return cmp.Or(cmp.Compare(a.Span.Start.Line, b.Span.Start.Line), cmp.Compare(a.Span.Start.Col, b.Span.Start.Col),
			cmp.Compare(a.Span.End.Line, b.Span.End.Line), cmp.Compare(a.Span.End.Col, b.Span.End.Col))
	})
}

// Write prints every diagnostic the way bpftrace does:
//
//	FILE:LINE:COL-COL: ERROR: message
//	the source line
//	      ~~~~~
//
// followed by "HINT: hint" when the error has one. Tabs in the quoted line
// print as four spaces. A span over several lines prints as FILE:LINE-LINE:
// and quotes no source, and neither does a position past the last line.
// file is the script's name, "stdin" for -e.
func (l ErrorList) Write(w io.Writer, file, src string) {
	l.write(w, file, src, "ERROR")
}

// WriteWarnings prints the diagnostics as Write does, as warnings: for
// problems the run goes on despite (WARNING in place of ERROR).
func (l ErrorList) WriteWarnings(w io.Writer, file, src string) {
	l.write(w, file, src, "WARNING")
}

func (l ErrorList) write(w io.Writer, file, src, severity string) {
	lines := strings.SplitAfter(src, "\n")
	for _, e := range l {
		fmt.Fprintf(w, "%s:%s: %s: %s\n", file, e.location(), severity, e.Msg)
		s := e.Span
		if s.End.Line == s.Start.Line && s.Start.Line >= 1 && int(s.Start.Line) <= len(lines) && lines[s.Start.Line-1] != "" {
			line := strings.TrimRight(lines[s.Start.Line-1], "\r\n")
			fmt.Fprintf(w, "%s\n", strings.ReplaceAll(line, "\t", "    "))
			fmt.Fprintf(w, "%s\n", underline(line, int(s.Start.Col), int(s.End.Col)))
		}
		if e.Hint != "" {
			fmt.Fprintf(w, "HINT: %s\n", e.Hint)
		}
	}
}

// underline returns the marker line for columns [from, to) of line: a space
// per column before from and a "~" per column of the span that the line
// has, four of either for a tab, as the quoted line expands tabs.
func underline(line string, from, to int) string {
	var b strings.Builder
	for i := 1; i < to && i <= len(line); i++ {
		mark := " "
		if i >= from {
			mark = "~"
		}
		if line[i-1] == '\t' {
			mark = strings.Repeat(mark, 4)
		}
		b.WriteString(mark)
	}
	return b.String()
}
