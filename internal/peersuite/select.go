package peersuite

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/gotrace/gotrace/internal/capability"
)

// hostArch returns the names an ARCH directive may use for this machine:
// its machine name (x86_64, aarch64, ...) and its byte order.
func hostArch() []string {
	var u syscall.Utsname
	if err := syscall.Uname(&u); err != nil {
		return nil
	}
	return []string{strings.ToLower(utsString(u.Machine[:])), "le"}
}

// kernelRelease returns this machine's kernel release (uname -r).
func kernelRelease() string {
	var u syscall.Utsname
	if err := syscall.Uname(&u); err != nil {
		return ""
	}
	return utsString(u.Release[:])
}

// utsString converts a NUL-terminated utsname field.
func utsString[T int8 | uint8](f []T) string {
	b := make([]byte, 0, len(f))
	for _, c := range f {
		if c == 0 {
			break
		}
		b = append(b, byte(c))
	}
	return string(b)
}

// archMatches applies an ARCH directive: a test runs when one of its
// plain names matches the host and none of its !names does.
func archMatches(arch, host []string) bool {
	var pos, neg []string
	for _, a := range arch {
		if n, ok := strings.CutPrefix(a, "!"); ok {
			neg = append(neg, n)
		} else {
			pos = append(pos, a)
		}
	}
	meets := func(names []string) bool {
		return slices.ContainsFunc(names, func(n string) bool { return slices.Contains(host, n) })
	}
	if len(pos) > 0 && !meets(pos) {
		return false
	}
	return !meets(neg)
}

// probeTypes are bpftrace's probe type names and their short forms.
var probeTypes = map[string]string{
	"BEGIN": "BEGIN", "END": "END", "begin": "begin", "end": "end",
	"kprobe": "kprobe", "k": "kprobe", "kretprobe": "kretprobe", "kr": "kretprobe",
	"uprobe": "uprobe", "u": "uprobe", "uretprobe": "uretprobe", "ur": "uretprobe",
	"usdt": "usdt", "U": "usdt",
	"tracepoint": "tracepoint", "t": "tracepoint",
	"rawtracepoint": "rawtracepoint", "rt": "rawtracepoint",
	"profile": "profile", "p": "profile", "interval": "interval", "i": "interval",
	"software": "software", "s": "software", "hardware": "hardware", "h": "hardware",
	"watchpoint": "watchpoint", "w": "watchpoint",
	"asyncwatchpoint": "asyncwatchpoint", "aw": "asyncwatchpoint",
	"kfunc": "fentry", "kretfunc": "fexit", "fentry": "fentry", "fexit": "fexit",
	"f": "fentry", "fr": "fexit",
	"iter": "iter", "it": "iter", "self": "self", "bench": "bench",
}

// machineProbes are the probe types that need a feature of the machine,
// which no tool has where the capability table says it is missing (this
// project's machines: kprobes compiled out, fentry refused, hardware
// breakpoints never delivered on AMD). Hardware probes are not among them:
// the tests that name them list events, which needs no PMU.
var machineProbes = map[string]capability.Feature{
	"kprobe":          capability.Kprobes,
	"kretprobe":       capability.Kprobes,
	"fentry":          capability.Fentry,
	"fexit":           capability.Fentry,
	"watchpoint":      capability.Breakpoints,
	"asyncwatchpoint": capability.Breakpoints,
}

// beginEndInterval are the probe types of the measured population.
var beginEndInterval = []string{"BEGIN", "END", "begin", "end", "interval"}

var (
	// stringOrComment matches a string literal or a comment, which may
	// contain words followed by colons that are not probes.
	stringOrComment = regexp.MustCompile(`"(?:[^"\\\n]|\\.)*"|//[^\n]*|/\*(?s:.*?)\*/`)
	word            = regexp.MustCompile(`[A-Za-z_]\w*`)
	// scriptPath matches a script file a RUN line hands to bpftrace.
	scriptPath = regexp.MustCompile(`runtime/scripts/[\w.-]+\.bt`)
)

// probeWords returns the start and end of each word in text that names a
// probe type: a word followed by ':' (kprobe:, i:), or BEGIN/END/begin/end
// followed by a body, a comma or a predicate. A word after '$', '@', '.'
// or "->" is a variable, map or field, not a probe.
func probeWords(text string) [][2]int {
	var found [][2]int
	for _, m := range word.FindAllStringIndex(text, -1) {
		if m[0] > 0 && strings.ContainsRune("$@.>", rune(text[m[0]-1])) {
			continue
		}
		w := text[m[0]:m[1]]
		if _, ok := probeTypes[w]; !ok {
			continue
		}
		rest := text[m[1]:]
		switch w {
		case "BEGIN", "END", "begin", "end":
			rest = strings.TrimLeft(rest, " \t")
			if rest == "" || strings.ContainsRune("{,/\n", rune(rest[0])) {
				found = append(found, [2]int{m[0], m[1]})
			}
		default:
			if strings.HasPrefix(rest, ":") {
				found = append(found, [2]int{m[0], m[1]})
			}
		}
	}
	return found
}

// Program returns the text of the test's programs: its PROG, or its RUN
// line and the script files the line names, read from workDir.
func (t *Test) Program(workDir string) string {
	if t.Prog != "" {
		return t.Prog
	}
	text := t.Run
	for _, p := range scriptPath.FindAllString(t.Run, -1) {
		if b, err := os.ReadFile(filepath.Join(workDir, p)); err == nil {
			text += "\n" + string(b)
		}
	}
	return text
}

// Probes returns the probe types (full names) the program text uses.
func Probes(program string) []string {
	text := stringOrComment.ReplaceAllStringFunc(program, blank)
	var found []string
	for _, m := range probeWords(text) {
		if full := probeTypes[text[m[0]:m[1]]]; !slices.Contains(found, full) {
			found = append(found, full)
		}
	}
	slices.Sort(found)
	return found
}

// blank replaces a string literal or comment by as many spaces, keeping
// the offsets of the text around it.
func blank(s string) string { return strings.Repeat(" ", len(s)) }

// helperProgram reports whether the test needs one of bpftrace's helper
// programs (tests/testprogs), which are not part of the test data.
func (t *Test) helperProgram() bool {
	fields := append([]string{t.Run, t.Prog, t.After, t.Setup, t.Cleanup}, t.Befores...)
	fields = append(fields, t.Requires...)
	return len(t.Befores) > 0 || slices.ContainsFunc(fields, func(f string) bool {
		return strings.Contains(f, "testprogs/")
	})
}

var (
	structType  = regexp.MustCompile(`\bstruct\s+\w+|\bunion\s+\w+|\bcurtask\b|\bargs\b`)
	kernelStack = regexp.MustCompile(`\bkstack\b`)
)

// Unavailable returns why the test needs what no tool can have on this
// machine (a helper program, a probe type whose feature the machine
// lacks), or "".
func (t *Test) Unavailable(workDir string) string {
	if t.helperProgram() {
		return "needs a helper program from tests/testprogs"
	}
	return t.machineUnavailable(workDir)
}

// machineUnavailable returns why the test needs a probe type whose feature
// this machine lacks, or "".
func (t *Test) machineUnavailable(workDir string) string {
	for _, p := range Probes(t.Program(workDir)) {
		f, ok := machineProbes[p]
		if !ok {
			continue
		}
		if r := capability.Of(f); !r.Available {
			return fmt.Sprintf("needs %s probes, which this machine cannot serve: %s: %s", p, f, r.Evidence)
		}
	}
	return ""
}

// Core reports whether the test belongs to the measured population, issue
// 12's: a PROG whose probes are only begin/end/interval, that needs no
// helper program, no struct types and no kernel stacks, and that is checked
// by its output lines (not WILL_FAIL, EXPECT_FILE or EXPECT_JSON).
func (t *Test) Core(workDir string) bool {
	if t.Prog == "" || t.WillFail || t.ExactExpect || t.helperProgram() {
		return false
	}
	prog := t.Program(workDir)
	probes := Probes(prog)
	if len(probes) == 0 || slices.ContainsFunc(probes, func(p string) bool { return !slices.Contains(beginEndInterval, p) }) {
		return false
	}
	return !structType.MatchString(prog) && !kernelStack.MatchString(prog)
}

// versionPart matches the parts a kernel version is compared by: numbers
// and runs of letters (Python's LooseVersion, which the engine uses).
var versionPart = regexp.MustCompile(`\d+|[a-zA-Z]+`)

// versionLess reports whether kernel version a is older than b.
func versionLess(a, b string) bool {
	pa, pb := versionPart.FindAllString(a, -1), versionPart.FindAllString(b, -1)
	for i := range min(len(pa), len(pb)) {
		x, errX := strconv.Atoi(pa[i])
		y, errY := strconv.Atoi(pb[i])
		switch {
		case errX == nil && errY == nil && x != y:
			return x < y
		case (errX == nil) != (errY == nil):
			// A number sorts before letters.
			return errX == nil
		case errX != nil && pa[i] != pb[i]:
			return pa[i] < pb[i]
		}
	}
	return len(pa) < len(pb)
}
