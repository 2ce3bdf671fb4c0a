package lang

// This file finds token positions the AST does not record by scanning
// the source text.

import (
	"slices"
	"strings"
)

// tokenStart returns where bpftrace 0.17 says the token at p starts.
// Its lexer only moves the start of a location on white space, so a token
// right after others ("str($x" or "$y=1+$x") begins where that run of
// characters begins.
func (c *checker) tokenStart(p Pos) Pos {
	if p.Line < 1 || p.Line > len(c.lines) {
		return p
	}
	line := c.prog.Source[c.lines[p.Line-1]:]
	col := min(p.Col, len(line)+1)
	for col > 1 && !isSpace(line[col-2]) {
		col--
	}
	return Pos{Line: p.Line, Col: col}
}

func isSpace(b byte) bool { return b == ' ' || b == '\t' || b == '\n' || b == '\r' }

// lineOffsets returns the byte offset at which each line of src starts.
func lineOffsets(src string) []int {
	offs := []int{0}
	for i := 0; i < len(src); i++ {
		if src[i] == '\n' {
			offs = append(offs, i+1)
		}
	}
	return offs
}

// offset converts a position to a byte offset in the source, clamped.
func (c *checker) offset(p Pos) int {
	if p.Line < 1 || p.Line > len(c.lines) {
		return len(c.prog.Source)
	}
	return min(c.lines[p.Line-1]+p.Col-1, len(c.prog.Source))
}

// position converts a byte offset to a position.
func (c *checker) position(off int) Pos {
	line, _ := slices.BinarySearch(c.lines, off+1)
	return Pos{Line: line, Col: off - c.lines[line-1] + 1}
}

// find returns the span of the first token tok at or after from, skipping
// blanks, comments and closing parentheses: the position of an operator
// that the AST does not record. Without source it returns an empty span
// at from.
func (c *checker) find(from Pos, tok string) Span {
	src := c.prog.Source
	i := c.offset(from)
	for i < len(src) {
		switch {
		case strings.HasPrefix(src[i:], tok):
			return Span{Start: c.position(i), End: c.position(i + len(tok))}
		case strings.HasPrefix(src[i:], "//"):
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case strings.HasPrefix(src[i:], "/*"):
			end := strings.Index(src[i+2:], "*/")
			if end < 0 {
				return Span{Start: from, End: from}
			}
			i += end + 4
		case isSpace(src[i]) || src[i] == ')':
			i++
		default:
			return Span{Start: from, End: from}
		}
	}
	return Span{Start: from, End: from}
}
