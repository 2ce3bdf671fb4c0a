package peersuite

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"time"
)

// failure is an expectation the output fails, and how.
type failure struct {
	expect Expect
	why    string
}

// check returns the expectations the output fails.
func (r *Runner) check(t *Test, out string) []failure {
	var failed []failure
	for _, e := range t.Expects {
		if why := r.checkOne(t, e, out); why != "" {
			failed = append(failed, failure{e, why})
		}
	}
	return failed
}

// checkOne applies one expectation as the engine does: EXPECT matches a
// whole line up to surrounding blanks, EXPECT_REGEX searches the output
// line by line (Python's re.M, here RE2), EXPECT_FILE compares the
// trimmed output with the trimmed file and EXPECT_JSON compares values.
func (r *Runner) checkOne(t *Test, e Expect, out string) string {
	switch e.Mode {
	case modeText, modeTextNone:
		line := regexp.QuoteMeta(e.Text)
		if m := attachedLine.FindStringSubmatch(e.Text); m != nil {
			line = attachingPattern(m[1])
		}
		re := regexp.MustCompile(`(?m)^\s*` + line + `\s*$`)
		if re.MatchString(out) != (e.Mode == modeText) {
			return expectWord(e.Mode) + " " + quoteLine(e.Text)
		}
	case modeRegex, modeRegexNone:
		text := e.Text
		if m := attachedLine.FindStringSubmatch(text); m != nil {
			text = attachingPattern(m[1])
		}
		re, err := regexp.Compile("(?m)" + text)
		if err != nil {
			return fmt.Sprintf("runner cannot read EXPECT_REGEX %s: %v", quoteLine(e.Text), err)
		}
		if re.MatchString(out) != (e.Mode == modeRegex) {
			return expectWord(e.Mode) + " " + quoteLine(e.Text)
		}
	case modeFile:
		want, err := os.ReadFile(filepath.Join(r.WorkDir, e.Text))
		if err != nil {
			return fmt.Sprintf("read EXPECT_FILE: %v", err)
		}
		w := strings.TrimSpace(string(want))
		if t.LocalizeTimestamps >= 0 {
			w = strftime(w, time.Unix(t.LocalizeTimestamps, 0))
		}
		if strings.TrimSpace(out) != w {
			return "output differs from EXPECT_FILE " + e.Text
		}
	case modeJSON:
		want, err := os.ReadFile(filepath.Join(r.WorkDir, e.Text))
		if err != nil {
			return fmt.Sprintf("read EXPECT_JSON: %v", err)
		}
		if !jsonMatches(strings.TrimSpace(out), strings.TrimSpace(string(want)), strings.HasSuffix(e.Text, ".ndjson")) {
			return "output differs from EXPECT_JSON " + e.Text
		}
	}
	return ""
}

// attachedLine matches bpftrace 0.24's "Attached N probes" line as a test
// expects it (EXPECT or EXPECT_REGEX), with the count.
var attachedLine = regexp.MustCompile(`^Attached (\d+) probes?$`)

// attachingPattern is the pattern an "Attached N probes" expectation is
// checked with: that line, or "Attaching N probes..." with the same N,
// the line in which bpftrace 0.17 and gotrace report the same count. The
// expectation is on how many probes are attached; 0.24 only says it after
// attaching instead of before. The count still has to match, and 0.17 and
// gotrace count each location of a USDT probe where 0.24 counts the probe
// once, so the tests over multi-location probes still fail on it.
func attachingPattern(count string) string {
	return `(?:Attached ` + count + ` probes?|Attaching ` + count + ` probes?\.\.\.)`
}

// expectWord names an expectation mode in a failure reason.
func expectWord(mode string) string {
	return map[string]string{
		modeText: "no line", modeTextNone: "unwanted line",
		modeRegex: "no match for", modeRegexNone: "unwanted match for",
	}[mode]
}

// quoteLine quotes an expectation for a one-line reason.
func quoteLine(s string) string {
	const max = 80
	if len(s) > max {
		s = s[:max] + "..."
	}
	return fmt.Sprintf("%q", s)
}

// jsonMatches compares output with the expected JSON: one value, or for
// .ndjson one value per line.
func jsonMatches(out, want string, ndjson bool) bool {
	outLines, wantLines := []string{out}, []string{want}
	if ndjson {
		outLines, wantLines = strings.Split(out, "\n"), strings.Split(want, "\n")
	} else if strings.Count(out, "\n") > 0 {
		return false
	}
	if len(outLines) != len(wantLines) {
		return false
	}
	for i := range outLines {
		a, errA := decodeJSON(outLines[i])
		b, errB := decodeJSON(wantLines[i])
		if errA != nil || errB != nil || !reflect.DeepEqual(a, b) {
			return false
		}
	}
	return true
}

// decodeJSON decodes one JSON value with its numbers as exact rationals,
// so that 1 and 1.0 are equal as in Python and large integers stay exact.
func decodeJSON(s string) (any, error) {
	d := json.NewDecoder(bytes.NewReader([]byte(s)))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	return exactNumbers(v), nil
}

func exactNumbers(v any) any {
	switch v := v.(type) {
	case json.Number:
		r, ok := new(big.Rat).SetString(v.String())
		if !ok {
			return v.String()
		}
		return r.RatString()
	case []any:
		for i := range v {
			v[i] = exactNumbers(v[i])
		}
	case map[string]any:
		for k := range v {
			v[k] = exactNumbers(v[k])
		}
	}
	return v
}

// strftime expands the time directives LOCALIZE_TIMESTAMPS applies to an
// expected file (Python's time.strftime with the local time zone).
func strftime(format string, t time.Time) string {
	t = t.Local()
	var b strings.Builder
	for i := 0; i < len(format); i++ {
		if format[i] != '%' || i+1 == len(format) {
			b.WriteByte(format[i])
			continue
		}
		i++
		switch format[i] {
		case 'H':
			fmt.Fprintf(&b, "%02d", t.Hour())
		case 'M':
			fmt.Fprintf(&b, "%02d", t.Minute())
		case 'S':
			fmt.Fprintf(&b, "%02d", t.Second())
		case 'Y':
			fmt.Fprintf(&b, "%04d", t.Year())
		case 'm':
			fmt.Fprintf(&b, "%02d", int(t.Month()))
		case 'd':
			fmt.Fprintf(&b, "%02d", t.Day())
		case '%':
			b.WriteByte('%')
		default:
			b.WriteByte('%')
			b.WriteByte(format[i])
		}
	}
	return b.String()
}
