package output

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/txtar"

	"github.com/gotrace/gotrace/codegen/layout"
	"github.com/gotrace/gotrace/internal/printf"
	"github.com/gotrace/gotrace/internal/testenv"
)

// The golden files in testdata/*.txtar each hold:
//
//	-- script.bt --     a BEGIN-only bpftrace script
//	-- feed --          the values the runtime would hand to a Writer for it
//	-- text --          bpftrace 0.17's stdout for `bpftrace -q script.bt`
//	-- json --          bpftrace 0.17's stdout for `bpftrace -q -f json script.bt`
//	-- gotrace.text --  (optional) what gotrace prints instead, where it
//	-- gotrace.json --  differs on purpose (docs/compat.md says why)
//
// TestGolden feeds the values to the writers and compares with gotrace's
// expected output. TestGoldenBpftrace re-runs bpftrace on the scripts so
// the captured output cannot rot; with -update it rewrites the text and
// json sections from bpftrace instead.
//
// The feed is one command per line ("#" starts a comment):
//
//	printf FORMAT VALUE...       a printf record (FORMAT Go-quoted)
//	value VALUE                  print(VALUE)
//	message KIND TEXT            time/cat/syscall/join output (TEXT Go-quoted)
//	map NAME KIND [MIN MAX STEP] (re)defines a map; its entries follow,
//	  [KEY, ...] = ...           indented: "= VALUE" for plain, count, sum,
//	                             min and max maps, "= COUNT TOTAL" for avg
//	                             and stats, "= INDEX:COUNT ..." for hist and
//	                             lhist; no [...] for a map without keys
//	print NAME [TOP [DIV]]       print(@m, top, div)
//	lost N                       N lost events
//	exit                         the maps at exit
//
// VALUE is 5 or -5 (signed 64-bit), 5u (unsigned), "str" (Go-quoted),
// b"buf" (Go-quoted bytes) or (VALUE, VALUE, ...).
var update = flag.Bool("update", false, "rewrite the bpftrace sections of testdata/*.txtar by running bpftrace")

func goldenFiles(t *testing.T) []string {
	files, err := filepath.Glob("testdata/*.txtar")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden files: %v", err)
	}
	return files
}

func section(a *txtar.Archive, name string) ([]byte, bool) {
	for _, f := range a.Files {
		if f.Name == name {
			return f.Data, true
		}
	}
	return nil, false
}

func TestGolden(t *testing.T) {
	for _, file := range goldenFiles(t) {
		t.Run(filepath.Base(file), func(t *testing.T) {
			a, err := txtar.ParseFile(file)
			if err != nil {
				t.Fatal(err)
			}
			feed, ok := section(a, "feed")
			if !ok {
				t.Fatal("no feed section")
			}
			for _, f := range []struct {
				format Format
				name   string
			}{{Text, "text"}, {JSON, "json"}} {
				want, ok := section(a, "gotrace."+f.name)
				if !ok {
					want, ok = section(a, f.name)
				}
				if !ok {
					t.Fatalf("no %s section", f.name)
				}
				// Maps print the same from Entries and through Decode.
				for _, lazy := range []bool{false, true} {
					var got bytes.Buffer
					if err := runFeed(NewWriter(&got, f.format), string(feed), lazy); err != nil {
						t.Fatalf("feed: %v", err)
					}
					if !bytes.Equal(got.Bytes(), want) {
						t.Errorf("%s output differs (lazy %v)\n got:\n%s\nwant:\n%s\ndiff:\n%s", f.name, lazy, got.Bytes(), want, lineDiff(string(want), got.String()))
					}
				}
			}
		})
	}
}

func TestGoldenBpftrace(t *testing.T) {
	bpftrace := testenv.RequireBpftrace(t)
	for _, file := range goldenFiles(t) {
		t.Run(filepath.Base(file), func(t *testing.T) {
			t.Parallel()
			a, err := txtar.ParseFile(file)
			if err != nil {
				t.Fatal(err)
			}
			script, ok := section(a, "script.bt")
			if !ok {
				t.Fatal("no script.bt section")
			}
			changed := false
			for _, f := range []struct {
				name string
				args []string
			}{{"text", nil}, {"json", []string{"-f", "json"}}} {
				got := runBpftrace(t, bpftrace, string(script), f.args...)
				want, _ := section(a, f.name)
				if bytes.Equal(got, want) {
					continue
				}
				if !*update {
					t.Errorf("bpftrace's %s output is no longer the captured one\ndiff:\n%s", f.name, lineDiff(string(want), string(got)))
					continue
				}
				setSection(a, f.name, got)
				changed = true
			}
			if changed {
				if err := os.WriteFile(file, txtar.Format(a), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

func runBpftrace(t *testing.T, bpftrace, script string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bpftrace, append(append([]string{"-q"}, args...), "-e", script)...)
	cmd.Env = append(os.Environ(), "BPFTRACE_NO_CPP_DEMANGLE=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("bpftrace %v: %v\n%s", args, err, stderr.Bytes())
	}
	return out
}

func setSection(a *txtar.Archive, name string, data []byte) {
	for i := range a.Files {
		if a.Files[i].Name == name {
			a.Files[i].Data = data
			return
		}
	}
	a.Files = append(a.Files, txtar.File{Name: name, Data: data})
}

// lineDiff lists the lines that differ between want and got.
func lineDiff(want, got string) string {
	w := strings.Split(want, "\n")
	g := strings.Split(got, "\n")
	var b strings.Builder
	for i := 0; i < len(w) || i < len(g); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			fmt.Fprintf(&b, "line %d:\n  want %q\n   got %q\n", i+1, wl, gl)
		}
	}
	return b.String()
}

// runFeed interprets a feed (see the comment on update) against w.
// runFeed prints what feed says to w; with lazy, maps give their entries
// through Decode.
func runFeed(w *Writer, feed string, lazy bool) error {
	maps := map[string]*Map{}
	var order []string
	var cur *Map
	for n, line := range strings.Split(feed, "\n") {
		if i := strings.Index(line, "#"); i >= 0 && !strings.ContainsAny(line[:i], "\"") {
			line = line[:i]
		}
		if strings.TrimSpace(line) == "" {
			continue
		}
		if err := feedLine(w, maps, &order, &cur, line, lazy); err != nil {
			return fmt.Errorf("line %d: %q: %w", n+1, line, err)
		}
	}
	return nil
}

func feedLine(w *Writer, maps map[string]*Map, order *[]string, cur **Map, line string, lazy bool) error {
	printed := func(m *Map) *Map {
		if lazy {
			return decoded(m)
		}
		return m
	}
	if line[0] == ' ' || line[0] == '\t' {
		if *cur == nil {
			return fmt.Errorf("entry outside a map")
		}
		return feedEntry(*cur, strings.TrimSpace(line))
	}
	*cur = nil
	cmd, rest, _ := strings.Cut(line, " ")
	rest = strings.TrimSpace(rest)
	switch cmd {
	case "printf":
		s := &valueScanner{s: rest}
		format, err := s.quoted()
		if err != nil {
			return err
		}
		var args []Value
		for !s.done() {
			v, err := s.value()
			if err != nil {
				return err
			}
			args = append(args, v)
		}
		parts, err := printf.Parse(format)
		if err != nil {
			return err
		}
		return w.Printf(parts, args)
	case "value":
		s := &valueScanner{s: rest}
		v, err := s.value()
		if err != nil {
			return err
		}
		return w.Value(v)
	case "message":
		kind, text, _ := strings.Cut(rest, " ")
		s, err := strconv.Unquote(text)
		if err != nil {
			return err
		}
		return w.Message(Message(kind), s)
	case "map":
		f := strings.Fields(rest)
		if len(f) != 2 && len(f) != 5 {
			return fmt.Errorf("want map NAME KIND [MIN MAX STEP]")
		}
		m := &Map{Name: f[0]}
		kinds := map[string]layout.MapKind{
			"int": layout.MapValue, "string": layout.MapValue, "tuple": layout.MapValue, "buf": layout.MapValue,
			"count": layout.MapCount, "sum": layout.MapSum, "min": layout.MapMin, "max": layout.MapMax,
			"avg": layout.MapAvg, "stats": layout.MapStats, "hist": layout.MapHist, "lhist": layout.MapLhist,
		}
		k, ok := kinds[f[1]]
		if !ok {
			return fmt.Errorf("unknown map kind %q", f[1])
		}
		m.Kind = k
		if len(f) == 5 {
			var err error
			for i, p := range []*int64{&m.Lhist.Min, &m.Lhist.Max, &m.Lhist.Step} {
				if *p, err = strconv.ParseInt(f[2+i], 10, 64); err != nil {
					return err
				}
			}
		}
		if _, ok := maps[m.Name]; !ok {
			*order = append(*order, m.Name)
		}
		maps[m.Name] = m
		*cur = m
		return nil
	case "print":
		f := strings.Fields(rest)
		if len(f) < 1 || len(f) > 3 {
			return fmt.Errorf("want print NAME [TOP [DIV]]")
		}
		m, ok := maps[f[0]]
		if !ok {
			return fmt.Errorf("no map %s", f[0])
		}
		var nums [2]uint64
		for i, s := range f[1:] {
			var err error
			if nums[i], err = strconv.ParseUint(s, 10, 64); err != nil {
				return err
			}
		}
		return w.Map(printed(m), nums[0], nums[1])
	case "lost":
		n, err := strconv.ParseUint(rest, 10, 64)
		if err != nil {
			return err
		}
		return w.LostEvents(n)
	case "exit":
		var ms []*Map
		for _, name := range *order {
			ms = append(ms, printed(maps[name]))
		}
		return w.Exit(ms)
	}
	return fmt.Errorf("unknown command %q", cmd)
}

// decoded returns m with its entries behind Decode, as the runtime gives
// a big map, reusing the memory of e.Key as Decode may.
func decoded(m *Map) *Map {
	d := *m
	d.Entries, d.Len = nil, len(m.Entries)
	d.Decode = func(i int, e *Entry) {
		key := append(e.Key[:0], m.Entries[i].Key...)
		*e = m.Entries[i]
		e.Key = key
	}
	return &d
}

func feedEntry(m *Map, line string) error {
	s := &valueScanner{s: line}
	var e Entry
	if s.peek() == '[' {
		s.i++
		for {
			v, err := s.value()
			if err != nil {
				return err
			}
			e.Key = append(e.Key, v)
			s.skipSpace()
			if s.peek() == ']' {
				s.i++
				break
			}
			if err := s.expect(','); err != nil {
				return err
			}
		}
	}
	if err := s.expect('='); err != nil {
		return err
	}
	rest := strings.Fields(s.s[s.i:])
	switch m.Kind {
	case layout.MapAvg, layout.MapStats:
		if len(rest) != 2 {
			return fmt.Errorf("want = COUNT TOTAL")
		}
		var err error
		if e.Count, err = strconv.ParseUint(rest[0], 10, 64); err != nil {
			return err
		}
		if e.Total, err = strconv.ParseInt(rest[1], 10, 64); err != nil {
			return err
		}
	case layout.MapHist, layout.MapLhist:
		for _, f := range rest {
			i, c, ok := strings.Cut(f, ":")
			if !ok {
				return fmt.Errorf("want INDEX:COUNT, got %q", f)
			}
			idx, err := strconv.Atoi(i)
			if err != nil {
				return err
			}
			n, err := strconv.ParseUint(c, 10, 64)
			if err != nil {
				return err
			}
			for len(e.Buckets) <= idx {
				e.Buckets = append(e.Buckets, 0)
			}
			e.Buckets[idx] = n
		}
	default:
		v, err := s.value()
		if err != nil {
			return err
		}
		if !s.done() {
			return fmt.Errorf("junk after value: %q", s.s[s.i:])
		}
		e.Value = v
	}
	m.Entries = append(m.Entries, e)
	return nil
}

// valueScanner reads feed values from a line.
type valueScanner struct {
	s string
	i int
}

func (s *valueScanner) skipSpace() {
	for s.i < len(s.s) && (s.s[s.i] == ' ' || s.s[s.i] == '\t') {
		s.i++
	}
}

func (s *valueScanner) done() bool { s.skipSpace(); return s.i >= len(s.s) }

func (s *valueScanner) peek() byte {
	s.skipSpace()
	if s.i < len(s.s) {
		return s.s[s.i]
	}
	return 0
}

func (s *valueScanner) expect(c byte) error {
	if s.peek() != c {
		return fmt.Errorf("want %q at %q", c, s.s[s.i:])
	}
	s.i++
	return nil
}

// quoted reads a Go-quoted string.
func (s *valueScanner) quoted() (string, error) {
	if s.peek() != '"' {
		return "", fmt.Errorf("want a quoted string at %q", s.s[s.i:])
	}
	j := s.i + 1
	for j < len(s.s) && s.s[j] != '"' {
		if s.s[j] == '\\' {
			j++
		}
		j++
	}
	if j >= len(s.s) {
		return "", fmt.Errorf("unterminated string at %q", s.s[s.i:])
	}
	str, err := strconv.Unquote(s.s[s.i : j+1])
	s.i = j + 1
	return str, err
}

func (s *valueScanner) value() (Value, error) {
	switch c := s.peek(); {
	case c == '"':
		str, err := s.quoted()
		return Str(str), err
	case c == 'b':
		s.i++
		str, err := s.quoted()
		return Buf([]byte(str)), err
	case c == '(':
		s.i++
		var elems []Value
		for {
			v, err := s.value()
			if err != nil {
				return Value{}, err
			}
			elems = append(elems, v)
			if s.peek() == ')' {
				s.i++
				return Tuple(elems...), nil
			}
			if err := s.expect(','); err != nil {
				return Value{}, err
			}
		}
	case c == '-' || ('0' <= c && c <= '9'):
		j := s.i + 1
		for j < len(s.s) && '0' <= s.s[j] && s.s[j] <= '9' {
			j++
		}
		num := s.s[s.i:j]
		s.i = j
		if s.i < len(s.s) && s.s[s.i] == 'u' {
			s.i++
			n, err := strconv.ParseUint(num, 10, 64)
			return Uint(n), err
		}
		n, err := strconv.ParseInt(num, 10, 64)
		return Int(n), err
	}
	return Value{}, fmt.Errorf("want a value at %q", s.s[s.i:])
}
