package peersuite

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/gotrace/gotrace/lang"
)

func TestCheck(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"out.txt":    "\n@: 1\n\n",
		"out.json":   `{"type": "map", "data": {"@": 1.0}}`,
		"out.ndjson": "{\"a\": 1}\n{\"b\": [1, 2]}\n",
		"local.txt":  "%H:00 100%%",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := &Runner{WorkDir: dir}
	for _, tc := range []struct {
		expect Expect
		out    string
		pass   bool
	}{
		{Expect{modeText, "@: 1"}, "Attaching 1 probe...\n  @: 1  \n", true},
		{Expect{modeText, "@: 1"}, "@: 10\n", false},
		{Expect{modeText, "a.b"}, "axb\n", false},
		{Expect{modeText, "Attached 3 probes"}, "Attached 3 probes\n", true},
		{Expect{modeText, "Attached 3 probes"}, "Attaching 3 probes...\n", true},
		{Expect{modeText, "Attached 1 probe"}, "Attaching 1 probe...\n", true},
		{Expect{modeText, "Attached 3 probes"}, "Attaching 6 probes...\n", false},
		{Expect{modeTextNone, "Attached 2 probes"}, "Attaching 2 probes...\n", false},
		{Expect{modeRegex, "Attached 3 probes"}, "Attaching 3 probes...\n", true},
		{Expect{modeRegex, "Attached 3 probes"}, "Attaching 13 probes...\n", false},
		{Expect{modeTextNone, "bad"}, "good\n", true},
		{Expect{modeRegex, `^@\[\d+\]: 2$`}, "x\n@[7]: 2\n", true},
		{Expect{modeRegex, `(?s:a.*b)`}, "a\nb\n", true},
		{Expect{modeRegexNone, `ERROR`}, "ERROR: x\n", false},
		{Expect{modeRegex, `(?=x)`}, "x", false},
		{Expect{modeFile, "out.txt"}, "@: 1\n", true},
		{Expect{modeFile, "out.txt"}, "@: 2\n", false},
		{Expect{modeJSON, "out.json"}, `{"data": {"@": 1}, "type": "map"}` + "\n", true},
		{Expect{modeJSON, "out.json"}, `{"data": {"@": 2}, "type": "map"}`, false},
		{Expect{modeJSON, "out.json"}, "{}\n{}\n", false},
		{Expect{modeJSON, "out.ndjson"}, "{\"a\": 1.0}\n{\"b\": [1, 2]}", true},
		{Expect{modeJSON, "out.ndjson"}, "{\"a\": 1}\n{\"b\": [2, 1]}", false},
	} {
		test := &Test{Expects: []Expect{tc.expect}, LocalizeTimestamps: -1}
		if failed := r.check(test, tc.out); (len(failed) == 0) != tc.pass {
			t.Errorf("%v on %q: failures %q, want pass %v", tc.expect, tc.out, failed, tc.pass)
		}
	}
	ts := time.Date(2026, 1, 2, 13, 4, 5, 0, time.Local)
	test := &Test{Expects: []Expect{{modeFile, "local.txt"}}, LocalizeTimestamps: ts.Unix()}
	if failed := r.check(test, "13:00 100%\n"); len(failed) > 0 {
		t.Errorf("LOCALIZE_TIMESTAMPS: %q", failed)
	}
}

func TestCause(t *testing.T) {
	for _, tc := range []struct {
		prog, out string
		missed    *Expect
		timedOut  bool
		want      string
	}{
		{"begin { }", "stdin:1:1-6: ERROR: Invalid probe type: begin\nbegin { }\n~~~~~\n", nil, false, "probe type begin"},
		{"config = { a = 1 } BEGIN { }", "stdin:1:8-9: ERROR: syntax error, unexpected =, expecting {\nconfig = { a = 1 } BEGIN { }\n       ~\n", nil, false, "syntax: config block"},
		{"BEGIN { $x: uint8 = 1; }", "stdin:1:9-12: ERROR: syntax error, unexpected :, expecting }\nBEGIN { $x: uint8 = 1; }\n        ~~~\n", nil, false, "syntax: typed variable"},
		{"BEGIN { for ($i : 0..5) { } }", "stdin:1:17-18: ERROR: syntax error, unexpected :, expecting ) or \",\"\nBEGIN { for ($i : 0..5) { } }\n                ~\n", nil, false, "syntax: for over a range"},
		{"BEGIN { for ($kv : @m) { } }", "stdin:1:18-19: ERROR: syntax error, unexpected :, expecting ) or \",\"\nBEGIN { for ($kv : @m) { } }\n                 ~\n", nil, false, "syntax: for over a map"},
		{"BEGIN { @ = pton(1); }", "stdin:1:13-17: ERROR: Unknown function: pton\n", nil, false, "unknown function pton"},
		{"BEGIN { @ = comm(); }", "stdin:1:13-17: ERROR: Unknown function: comm\n", nil, false, "call syntax for builtin comm"},
		{"BEGIN { @ = true; }", "stdin:1:13-17: ERROR: Unknown identifier: 'true'\n", nil, false, "unknown identifier true"},
		{"t:a:b { }", "stdin:1:1-6: ERROR: gotrace attaches only to user space\n", nil, false, "probe type tracepoint"},
		{"BEGIN { }", "ERROR: lhist() step must be >= 1 (0 provided)\n", nil, false, "lhist() step must be >= N (N provided)"},
		{"BEGIN { }", "something else\n", &Expect{modeText, "@: 1"}, false, "wrong output"},
		{"BEGIN { }", "1\n", &Expect{modeText, "true"}, true, "wrong output: bool values printed true/false (stopped at its time-out)"},
		{"BEGIN { }", "@: 50\n", &Expect{modeText, "@: 0x32"}, false, "wrong output: pointers printed in hex"},
		{"enum { A }; BEGIN { }", "0\n", &Expect{modeText, "A"}, false, "enum values printed by name"},
		{"enum E { A }; BEGIN { printf(\"%s\", A); }", "stdin:1:23-40: ERROR: printf: %s specifier expects a value of type string (integer supplied)\n", nil, false, "enum values printed by name"},
		{"BEGIN { }", "{}\n", &Expect{modeJSON, "x.json"}, false, "JSON output differs (EXPECT_JSON)"},
		{"usdt:./testprogs/usdt_test*:a:b { }", "ERROR: usdt target file './testprogs/usdt_test*' does not exist or is not executable\n", nil, false, "target file given as a wildcard"},
		{"uprobe:./testlibs/libsimple.so:fun { }", "ERROR: uprobe target file '/tmp/x/testlibs/libsimple.so' does not exist or is not executable\n", nil, false, "target file a non-executable shared library"},
		{"uprobe:/tmp/bpftrace-unshare-mountns-test/uprobe_test:f { }", "ERROR: uprobe target file '/tmp/bpftrace-unshare-mountns-test/uprobe_test' does not exist or is not executable\n", nil, false, "target file in the traced process's mount namespace"},
	} {
		res := &Result{Test: &Test{Prog: tc.prog}, Status: Fail, Output: tc.out, Missed: tc.missed, TimedOut: tc.timedOut}
		if got := Cause(res, "", lang.IsBuiltinVar); got != tc.want {
			t.Errorf("Cause(%q) = %q, want %q", tc.out, got, tc.want)
		}
	}
}

// TestOwnProcesses: an AFTER command signals only the test's own tracer,
// never another bpftrace of the machine.
func TestOwnProcesses(t *testing.T) {
	sleep := exec.Command("sleep", "30")
	sleep.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := sleep.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { sleep.Process.Kill(); sleep.Wait() }()
	r := &Runner{Binary: "/usr/bin/sleep"}
	pid := strconv.Itoa(sleep.Process.Pid)
	for in, want := range map[string]string{
		"pkill -SIGINT bpftrace":          "kill -s INT " + pid,
		"./x 2e9; pkill -SIGINT bpftrace": "./x 2e9; kill -s INT " + pid,
		"kill -s USR1 $(pidof bpftrace)":  "kill -s USR1 " + pid,
		"echo bpftrace":                   "echo bpftrace",
	} {
		if got := r.ownProcesses(in, sleep.Process.Pid); got != want {
			t.Errorf("ownProcesses(%q) = %q, want %q", in, got, want)
		}
	}
	if got := (&Runner{Binary: "/usr/bin/sleep"}).ownProcesses("pkill -SIGINT bpftrace", 1); got != "false" {
		t.Errorf("with no process of the group: %q", got)
	}
}

// TestBeforePIDs: a command line names this test's BEFORE programs by their
// own process ids, never another test's copy that pidof would also find.
func TestBeforePIDs(t *testing.T) {
	befores := []*exec.Cmd{
		{Path: "./testprogs/usdt_test", Process: &os.Process{Pid: 11}},
		{Path: "./testprogs/usdt_lib", Process: &os.Process{Pid: 22}},
	}
	for _, tc := range []struct{ line, want string }{
		{"bpftrace -p {{BEFORE_PID}}", "bpftrace -p 11"},
		{"bpftrace -p $(pidof usdt_lib)", "bpftrace -p 22"},
		{"bpftrace -p $(pidof other)", "bpftrace -p $(pidof other)"},
	} {
		if got := beforePIDs(tc.line, befores); got != tc.want {
			t.Errorf("beforePIDs(%q) = %q, want %q", tc.line, got, tc.want)
		}
	}
}

// TestHelperRefs: the helpers a test names, a wildcard kept as one.
func TestHelperRefs(t *testing.T) {
	test := &Test{
		Run:     "{{BPFTRACE}} -l 'uprobe:./testprogs/uprobe_test*:f' -p $(pidof usdt_lib)",
		Befores: []string{"./testprogs/usdt_lib"},
		After:   "cat ./testlibs/libusdt_tp.so",
	}
	want := []string{"testlibs/libusdt_tp.so", "testprogs/uprobe_test*", "testprogs/usdt_lib"}
	if got := test.helperRefs(t.TempDir()); !slices.Equal(got, want) {
		t.Errorf("helperRefs = %q, want %q", got, want)
	}
}
