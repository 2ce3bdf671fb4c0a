package lang

import (
	"fmt"
	"strings"

	"github.com/gotrace/gotrace/lang/attachpoint"
)

// tokenType is the kind of a token.
type tokenType int

// position is a place in the script: its byte offset, and its line and
// column counted from 1.
type position struct {
	Offset, Line, Column int
}

// Token types of the bpftrace lexer. Keywords such as if, else and struct
// come through as tokIdent and are matched by value in the parser.
const (
	tokEOF        tokenType = -1
	tokIdent                = tokenType(-2 - iota)
	tokInt                  // 42, 0x2a, 052, 1_000, 1e6 (validated by the lexer)
	tokString               // "..." as written, quotes and escapes included
	tokVar                  // $x
	tokMap                  // @x or @
	tokParam                // $1
	tokParamCount           // $#
	tokAttach               // usdt:./bitcoind:net:inbound_message, as written
	tokEndPred              // the "/" that closes a predicate (followed by "{")
	tokPunct                // operators and punctuation
)

// punctuation, longest first so that "<<=" wins over "<<" and "<".
var puncts = []string{
	"<<=", ">>=",
	"++", "--", "..", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||", "->",
	"+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=",
	"+", "-", "*", "/", "%", "<", ">", "=", "!", "~", "&", "|", "^",
	"?", ":", ";", ",", ".", "(", ")", "[", "]", "{", "}",
}

// lexToken is a token: its type, its text as written, where it starts,
// the position just after its last character and the start of its run,
// where bison's error locations begin: the character after the last blank
// before it. Comments do not end a run, but a newline in a block comment
// does, as in bpftrace's lexer ("/*c*/foo" is one run). The scanner's
// types are lang's own: participle's lexer package, linked for its token
// and position types only, cost gotrace its initialiser (a regular
// expression compiled, 0.3 ms) and text/scanner's at every start
// (issue 24).
type lexToken struct {
	Type  tokenType
	Value string
	Pos   position
	End   position
	Run   position
}

// scanner turns a script into tokens as the parser asks for them, so that
// only the few tokens of its lookahead are held at a time, however long
// the script. It tracks just enough context to tell attach points (only
// at the top level) and the predicate's closing slash (a "/" followed by
// "{") from expressions.
type scanner struct {
	src  string
	off  int
	line int
	col  int

	// toks[head:] are the tokens scanned and not yet taken.
	toks []lexToken
	head int
	// done says the end of the script has been queued (a tokEOF token),
	// and err is the first lexical error, after which nothing is scanned.
	done bool
	err  *Error
	// runs are the runs found so far (tokenRun); runTok is the first
	// token of the current run and runLast its last one so far.
	runs            []tokenRun
	runTok, runLast lexToken
	runTokens       int

	braces int      // depth of {}
	parens int      // depth of () and []
	inPred bool     // between a probe's "/" and its "{"
	run    position // start of the current run of non-blank characters
	// ternaries counts the "?" of the current statement still waiting for
	// their ":".
	ternaries int
	// macros are the object-like macros defined so far (macro.go), and
	// expanding those being expanded.
	macros    map[string]string
	expanding map[string]bool
	// conds counts the #ifdef and #ifndef whose kept lines are being
	// scanned, waiting for their #else or #endif.
	conds int
}

// newScanner returns a scanner at the start of src, past a "#!" line.
func newScanner(src string) *scanner {
	s := &scanner{src: src, line: 1, col: 1}
	if strings.HasPrefix(src, "#!") {
		n := strings.IndexByte(src, '\n')
		if n < 0 {
			n = len(src)
		}
		s.advance(n)
	}
	return s
}

// fill scans until n tokens are waiting to be taken, the end of the
// script is queued or a lexical error is found.
func (s *scanner) fill(n int) {
	for len(s.toks)-s.head < n && !s.done && s.err == nil {
		s.err = s.step()
	}
}

// drain scans the rest of the script, dropping its tokens, to find a
// lexical error after the point where the parser stopped.
func (s *scanner) drain() {
	for !s.done && s.err == nil {
		s.toks, s.head = s.toks[:0], 0
		s.err = s.step()
	}
}

// take drops the first waiting token.
func (s *scanner) take() {
	s.head++
	if s.head == len(s.toks) {
		s.toks, s.head = s.toks[:0], 0
	}
}

// step scans the next token (all of a macro's), or queues the end.
func (s *scanner) step() *Error {
	if err := s.skipSpace(); err != nil {
		return err
	}
	if s.off < len(s.src) {
		return s.next()
	}
	s.push(lexToken{Type: tokEOF, Pos: s.pos(), End: s.pos(), Run: s.run})
	s.endRun()
	s.done = true
	return nil
}

// push queues t and notes the run it belongs to.
func (s *scanner) push(t lexToken) {
	if s.runTokens == 0 || t.Run.Offset != s.runTok.Run.Offset {
		s.endRun()
		s.runTok, s.runTokens = t, 0
	}
	s.runLast = t
	s.runTokens++
	s.toks = append(s.toks, t)
}

// endRun records the current run if its tokens do not all start where it
// starts.
func (s *scanner) endRun() {
	if s.runTokens > 0 && s.runLast.Pos.Offset != s.runTok.Run.Offset {
		s.runs = append(s.runs, tokenRun{
			start: posAt(s.runTok.Run),
			last:  posAt(s.runLast.Pos),
		})
	}
	s.runTokens = 0
}

func (s *scanner) pos() position {
	return position{Offset: s.off, Line: s.line, Column: s.col}
}

// advance moves n bytes forward, keeping line and column.
func (s *scanner) advance(n int) {
	for _, c := range []byte(s.src[s.off : s.off+n]) {
		if c == '\n' {
			s.line++
			s.col = 1
		} else {
			s.col++
		}
	}
	s.off += n
}

// errorf reports a problem with the n bytes at the current offset. The
// span starts at start: the run's start for tokens, as bpftrace's does.
func (s *scanner) errorf(start position, n int, format string, args ...any) *Error {
	end := Pos{Line: int32(s.line), Col: int32(s.col + n)}
	return &Error{Span: Span{Start: posAt(start), End: end}, Msg: fmt.Sprintf(format, args...)}
}

func (s *scanner) skipSpace() *Error {
	if s.off == 0 {
		s.run = s.pos()
	}
	for s.off < len(s.src) {
		c := s.src[s.off]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			s.advance(1)
			s.run = s.pos()
		case strings.HasPrefix(s.src[s.off:], "//"):
			n := strings.IndexByte(s.src[s.off:], '\n')
			if n < 0 {
				n = len(s.src) - s.off
			}
			s.advance(n)
		case strings.HasPrefix(s.src[s.off:], "/*"):
			n := strings.Index(s.src[s.off+2:], "*/")
			if n < 0 {
				return s.errorf(s.pos(), 2, "unterminated comment")
			}
			nl := strings.LastIndexByte(s.src[s.off:s.off+n+2], '\n')
			s.advance(n + 4)
			if nl >= 0 {
				s.run = position{Offset: s.off - (n + 4) + nl + 1, Line: s.line, Column: 1}
			}
		default:
			return nil
		}
	}
	return nil
}

// numberLen is the length of the integer literal at the start of s: hex
// (0x2a), or digits in groups joined by single underscores with an optional
// exponent (1_000, 1e6). Letters after it start the next token, as in
// bpftrace, where "12abc" is 12 followed by the identifier abc.
func numberLen(s string) int {
	digits := func(i int, ok func(byte) bool) int {
		for i < len(s) && ok(s[i]) {
			i++
		}
		return i
	}
	if len(s) > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') && isHex(s[2]) {
		return digits(2, isHex)
	}
	n := digits(0, isDecDigit)
	for n+1 < len(s) && s[n] == '_' && isDecDigit(s[n+1]) {
		n = digits(n+1, isDecDigit)
	}
	if n+1 < len(s) && (s[n] == 'e' || s[n] == 'E') && isDecDigit(s[n+1]) {
		n = digits(n+1, isDecDigit)
	}
	return n
}

func isDecDigit(c byte) bool { return c >= '0' && c <= '9' }

func isIdentStart(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

func isIdentChar(c byte) bool { return isIdentStart(c) || c >= '0' && c <= '9' }

// emit queues a token of n bytes starting at the current offset.
func (s *scanner) emit(typ tokenType, n int) {
	start := s.pos()
	val := s.src[s.off : s.off+n]
	s.advance(n)
	s.push(lexToken{Type: typ, Value: val, Pos: start, End: s.pos(), Run: s.run})
}

func (s *scanner) next() *Error {
	rest := s.src[s.off:]
	c := rest[0]
	top := s.braces == 0 && !s.inPred
	switch {
	case isIdentStart(c):
		n := len(identPrefix(rest))
		if top && n < len(rest) && rest[n] == ':' {
			return s.attachPoint()
		}
		if _, ok := s.macros[rest[:n]]; ok && !s.expanding[rest[:n]] {
			return s.expand(rest[:n], n)
		}
		s.emit(tokIdent, n)
	case c >= '0' && c <= '9':
		n := numberLen(rest)
		if _, err := parseInt(rest[:n]); err != nil {
			return s.errorf(s.run, n, "%v", err)
		}
		// A duration literal (bpftrace 0.24): 1ms is 1000000 (ns).
		if _, u, ok := attachpoint.DurationUnit(rest[n:]); ok && !strings.ContainsAny(rest[:n], "xXeE_") {
			if _, ok := attachpoint.ParseDuration(rest[:n+u]); !ok {
				return s.errorf(s.run, n+u, "duration %s is out of range", rest[:n+u])
			}
			n += u
		}
		s.emit(tokInt, n)
	case c == '"':
		n := 1
		for n < len(rest) && rest[n] != '"' && rest[n] != '\n' {
			if rest[n] == '\\' && n+1 < len(rest) && rest[n+1] != '\n' {
				n++
			}
			n++
		}
		if n >= len(rest) || rest[n] != '"' {
			if n < len(rest) {
				n++ // bpftrace's span takes in the newline
			}
			return s.errorf(s.run, n, "unterminated string")
		}
		s.emit(tokString, n+1)
	case c == '$':
		switch {
		case len(rest) > 1 && rest[1] == '#':
			s.emit(tokParamCount, 2)
		case len(rest) > 1 && rest[1] >= '0' && rest[1] <= '9':
			n := 2
			for n < len(rest) && rest[n] >= '0' && rest[n] <= '9' {
				n++
			}
			s.emit(tokParam, n)
		case len(rest) > 1 && isIdentStart(rest[1]):
			n := 2
			for n < len(rest) && isIdentChar(rest[n]) {
				n++
			}
			s.emit(tokVar, n)
		default:
			return s.errorf(s.run, 1, "syntax error, unexpected $")
		}
	case c == '@':
		n := 1
		for n < len(rest) && isIdentChar(rest[n]) {
			n++
		}
		s.emit(tokMap, n)
	case c == '#':
		return s.directive()
	default:
		return s.punct()
	}
	return nil
}

// pathLen is the length of the path characters at the start of s:
// letters, digits, "_-./#*" and backslash escapes.
func pathLen(s string) int {
	n := 0
	for n < len(s) {
		switch c := s[n]; {
		case isIdentChar(c) || strings.IndexByte("-./#*", c) >= 0:
			n++
		case c == '\\' && n+1 < len(s) && s[n+1] != '\n':
			n += 2
		default:
			return n
		}
	}
	return n
}

// attachPoint lexes `type:rest` at the top level. Like bpftrace it takes
// letters, digits and "_-./#*:+[]$" (paths, globs, $1), backslash escapes,
// and "double-quoted" sections kept whole (C++ names); anything else ends it.
func (s *scanner) attachPoint() *Error {
	rest := s.src[s.off:]
	n := 0
loop:
	for n < len(rest) {
		switch c := rest[n]; {
		case isIdentChar(c) || strings.IndexByte("-./#*:+[]$", c) >= 0:
			n++
		case c == '\\' && n+1 < len(rest) && rest[n+1] != '\n':
			n += 2
		case c == '"':
			m := quotedLen(rest[n:])
			if m < 0 {
				return s.errorf(s.run, n+1, "unterminated string in attach point")
			}
			n += m
		default:
			break loop
		}
	}
	s.emit(tokAttach, n)
	return nil
}

// quotedLen returns the length of the double-quoted section that s starts
// with, quotes included, or -1 when it ends before its closing quote (at a
// newline or the end). A backslash escapes the character after it, so that
// a quoted probe name may hold quotes (usdt:...:test:"\"probe1\"").
func quotedLen(s string) int {
	for n := 1; n < len(s); n++ {
		switch s[n] {
		case '"':
			return n + 1
		case '\n':
			return -1
		case '\\':
			if n+1 < len(s) && s[n+1] != '\n' {
				n++
			}
		}
	}
	return -1
}

func (s *scanner) punct() *Error {
	rest := s.src[s.off:]
	var p string
	for _, q := range puncts {
		if strings.HasPrefix(rest, q) {
			p = q
			break
		}
	}
	if p == "" {
		return s.errorf(s.run, 1, "invalid character '%s'", printableByte(rest[0]))
	}
	switch p {
	case ":":
		if s.ternaries > 0 {
			s.ternaries--
			break
		}
		// Outside a ternary, bpftrace lexes ":" and the path characters
		// after it as a path, which it then reports as an "unexpected
		// path" (usually a probe's missing "}" before the next probe).
		if n := pathLen(rest[1:]); n > 0 {
			s.emit(tokAttach, 1+n)
			return nil
		}
	case "?":
		s.ternaries++
	case ";":
		s.ternaries = 0
	case "/":
		if s.braces == 0 && (!s.inPred || s.parens == 0) {
			// At the top level, "/" followed by "{" closes a predicate.
			i := 1
			for i < len(rest) && strings.IndexByte(" \t\n\r\f\v", rest[i]) >= 0 {
				i++
			}
			if i < len(rest) && rest[i] == '{' {
				s.emit(tokEndPred, 1)
				s.inPred = false
				return nil
			}
		}
		if s.braces == 0 && !s.inPred {
			s.inPred = true
		}
	case "{":
		s.braces++
		s.inPred = false
		s.ternaries = 0
	case "}":
		s.ternaries = 0
		if s.braces > 0 {
			s.braces--
		}
	case "(", "[":
		s.parens++
	case ")", "]":
		if s.parens > 0 {
			s.parens--
		}
	}
	s.emit(tokPunct, len(p))
	return nil
}

func printableByte(c byte) string {
	if c >= 0x20 && c < 0x7f {
		return string(c)
	}
	return fmt.Sprintf("\\x%02x", c)
}

// tokenRun is a run of characters without blanks that holds more than
// one token, or one token after a comment: from the run's start to the
// start of its last token.
type tokenRun struct{ start, last Pos }

// posAt is the script position of a lexer position.
func posAt(p position) Pos { return Pos{Line: int32(p.Line), Col: int32(p.Column)} }
