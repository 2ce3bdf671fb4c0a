package peersuite

import (
	"regexp"
	"strconv"
	"strings"
)

var (
	// diagnostic matches bpftrace's (and gotrace's) error line, with or
	// without a position: "stdin:1:9-12: ERROR: ..." or "ERROR: ...".
	diagnostic = regexp.MustCompile(`(?m)^(?:(?:stdin|[^\s:]+\.bt):(\d+):(\d+)(?:-\d+)?: )?ERROR: (.*)$`)
	// quotedName matches a name in quotes in a message.
	quotedName = regexp.MustCompile(`'([^']*)'`)
	// numbers matches numbers, which vary between otherwise equal messages.
	numbers = regexp.MustCompile(`\b\d+\b`)
)

// syntaxFeatures name the newer language forms that a syntax error's line
// shows, most specific first: a pattern on the text from the error's
// column back to the start of the line, and the feature's name.
var syntaxFeatures = []struct {
	re   *regexp.Regexp
	name string
}{
	{regexp.MustCompile(`\bconfig\s*=`), "config block"},
	{regexp.MustCompile(`\bmacro\b`), "macro"},
	{regexp.MustCompile(`\blet\s+@`), "map declaration"},
	{regexp.MustCompile(`\blet\b`), "let declaration"},
	{regexp.MustCompile(`\benum\b`), "enum"},
	{regexp.MustCompile(`\bimport\b`), "import"},
	{regexp.MustCompile(`\bfor\s*\(\s*\$\w+\s*:\s*[^)]*\.\.`), "for over a range"},
	{regexp.MustCompile(`\bfor\s*\(\s*\$\w+\s*:\s*@`), "for over a map"},
	{regexp.MustCompile(`\$\w+\s*:\s*\w`), "typed variable"},
	{regexp.MustCompile(`\?\s*:`), "ternary without middle"},
	{regexp.MustCompile(`\d+(?:ns|us|ms|s|m|h|d)\b`), "duration literal"},
	{regexp.MustCompile(`\b(?:break|continue|return)\b`), "break/continue/return"},
	{regexp.MustCompile(`(?:\$\w+|\))\s*\[\s*\d+\s*\]`), "indexing a string or tuple"},
	{regexp.MustCompile(`\(\s*\w+\s*=[^=]`), "record (named tuple)"},
	{regexp.MustCompile(`&\s*[$@\w]`), "address-of &"},
	{regexp.MustCompile(`\(\s*\w+\s*\[\d*\]\s*\)`), "cast to an array"},
	{regexp.MustCompile(`\(\s*bool\s*\)`), "bool type"},
	{regexp.MustCompile(`(?:^|[=(,{;]|\breturn)\s*\{`), "block expression"},
}

// Cause names the first thing that made a failed test fail, for the table
// of causes: the kind of the binary's first error (refined by the source
// it points at for syntax errors), or what was wrong with the output.
// builtinVar says whether a name is one of the language's builtin
// variables, so that "Unknown function: comm" is told apart as a builtin
// called with call syntax; nil treats every name as an unknown function.
// The caller passes the language's own table: the suite runs binaries and
// reads their output, and knows no language of its own.
func Cause(res *Result, workDir string, builtinVar func(name string) bool) string {
	out := res.Output
	if m := diagnostic.FindStringSubmatchIndex(out); m != nil {
		msg := out[m[6]:m[7]]
		var line string
		if m[2] >= 0 {
			// The source line is printed under the error line.
			rest := out[m[1]:]
			rest = strings.TrimPrefix(rest, "\n")
			line, _, _ = strings.Cut(rest, "\n")
			col, _ := strconv.Atoi(out[m[4]:m[5]])
			if col > 0 && col-1 <= len(line) {
				line = line[:col-1] + "\x00" + line[col-1:]
			}
		}
		return errorCause(msg, line, res.Test.Program(workDir), builtinVar)
	}
	switch {
	case strings.HasPrefix(res.Reason, "exit code"):
		return "exit code"
	case strings.Contains(res.Reason, "WILL_FAIL"):
		return "accepted what bpftrace refuses"
	case strings.Contains(res.Reason, "runner cannot"):
		return "runner"
	}
	cause := "wrong output"
	if res.Missed != nil {
		cause = outputCause(*res.Missed, res.Test.Program(workDir))
	}
	if res.TimedOut {
		// The engine checks the output of a test it stopped at its
		// time-out too, so the output is what failed.
		cause += " (stopped at its time-out)"
	}
	return cause
}

// outputKinds name what a missed expectation shows about the output that
// was wanted: a pattern on the expectation's text, and its name.
var outputKinds = []struct {
	re   *regexp.Regexp
	name string
}{
	{regexp.MustCompile(`^(?:true|false)$|[:(, ](?:true|false)\b`), "bool values printed true/false"},
	{regexp.MustCompile(`^@\S*: 0x[0-9a-f]+$`), "pointers printed in hex"},
	// The check takes 0.17's "Attaching N probes..." for 0.24's line (see
	// attachingPattern), so what is left is the count.
	{regexp.MustCompile(`^Attached \d+ probe`), `probe count: 0.24 counts a USDT probe once, 0.17 each location`},
	{regexp.MustCompile(`\bbpftrace\b`), "the tracer's own name (comm is bpftrace)"},
	{regexp.MustCompile(`WARNING|ERROR|HINT`), "a diagnostic's wording"},
	{regexp.MustCompile(`\{ \.count = `), "stats printed as { .count = ... } (0.24)"},
}

// outputCause names what was wrong with a test's output from the first
// expectation it missed.
func outputCause(e Expect, prog string) string {
	switch e.Mode {
	case modeFile:
		return "text output differs (EXPECT_FILE)"
	case modeJSON:
		return "JSON output differs (EXPECT_JSON)"
	}
	for _, k := range outputKinds {
		if k.re.MatchString(e.Text) {
			return "wrong output: " + k.name
		}
	}
	if enumDecl.MatchString(prog) {
		return "enum values printed by name"
	}
	return "wrong output"
}

// targetFileMissing matches the error for a uprobe or USDT target file
// that is not there (or not executable), with the file's path.
var targetFileMissing = regexp.MustCompile(`^(?:uprobe|usdt) target file '([^']*)' does not exist or is not executable`)

// targetFileCause names why a target path the helper tests use was not
// found: what kind of path it is, not the path itself, which holds the
// run's scratch directory.
func targetFileCause(path string) string {
	switch {
	case strings.Contains(path, "*"):
		return "target file given as a wildcard"
	case strings.HasPrefix(path, "/tmp/bpftrace-unshare-mountns-test/"):
		return "target file in the traced process's mount namespace"
	case strings.HasSuffix(path, ".so"):
		return "target file a non-executable shared library"
	}
	return "target file not found"
}

// enumDecl matches an enum definition in a program.
var enumDecl = regexp.MustCompile(`\benum\b[^{;]*\{`)

// errorCause classifies an error message; line is the source line the
// error points at, with a NUL at its column, or "".
func errorCause(msg, line, prog string, builtinVar func(string) bool) string {
	switch {
	case targetFileMissing.MatchString(msg):
		return targetFileCause(targetFileMissing.FindStringSubmatch(msg)[1])
	case strings.HasPrefix(msg, "Invalid probe type: "):
		return "probe type " + strings.TrimPrefix(msg, "Invalid probe type: ")
	case strings.HasPrefix(msg, "gotrace attaches only to"):
		for _, p := range Probes(prog) {
			switch p {
			case "BEGIN", "END", "begin", "end", "interval", "profile", "usdt", "uprobe", "uretprobe":
			default:
				return "probe type " + p
			}
		}
		return "probe type"
	case strings.Contains(msg, "%s specifier expects a value of type string") && enumDecl.MatchString(prog):
		return "enum values printed by name"
	case strings.HasPrefix(msg, "Unknown function: "):
		name := strings.TrimPrefix(msg, "Unknown function: ")
		if builtinVar != nil && builtinVar(name) {
			return "call syntax for builtin " + name
		}
		return "unknown function " + name
	case strings.HasPrefix(msg, "Unknown identifier: "):
		if m := quotedName.FindStringSubmatch(msg); m != nil {
			return "unknown identifier " + m[1]
		}
	case strings.HasPrefix(msg, "unknown flag: "), strings.HasPrefix(msg, "unknown shorthand flag: "):
		f, _, _ := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(msg, "unknown shorthand flag: "), "unknown flag: "), " ")
		return "flag " + f
	case strings.HasPrefix(msg, "syntax error"):
		// First the statement up to the token the error is at, then the
		// line.
		before, after, _ := strings.Cut(line, "\x00")
		token, _, _ := strings.Cut(after, " ")
		stmt := before[strings.LastIndexAny(before, ";{}")+1:]
		for _, text := range []string{stmt + token, before + after} {
			for _, f := range syntaxFeatures {
				if f.re.MatchString(text) {
					return "syntax: " + f.name
				}
			}
		}
		return "syntax: " + numbers.ReplaceAllString(msg, "N")
	}
	msg = numbers.ReplaceAllString(msg, "N")
	if len(msg) > 70 {
		msg = msg[:70] + "..."
	}
	return msg
}
