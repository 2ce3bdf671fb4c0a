package peersuite

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
)

func TestParseFile(t *testing.T) {
	const file = `# a comment
NAME first
PROG begin { printf("a\n");
              exit(); }
EXPECT a
EXPECT_REGEX ^x
             y$
TIMEOUT 2
ENV A=1 B=2
REQUIRES_FEATURE btf !dwarf
ARCH x86_64 | !aarch64

NAME first
RUN {{BPFTRACE}} -e 'END {}'
EXPECT_JSON runtime/outputs/x.json
WILL_FAIL
`
	path := filepath.Join(t.TempDir(), "suite")
	if err := os.WriteFile(path, []byte(file), 0o644); err != nil {
		t.Fatal(err)
	}
	tests, err := ParseFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := []Test{{
		Suite: "suite", Name: "first",
		Prog:    "begin { printf(\"a\\n\");\n         exit(); }",
		Expects: []Expect{{modeText, "a"}, {modeRegex, "^x\ny$"}},
		Timeout: 2, Env: [][2]string{{"A", "1"}, {"B", "2"}},
		Features: []string{"btf"}, NegFeatures: []string{"dwarf"},
		Arch: []string{"x86_64", "!aarch64"}, LocalizeTimestamps: -1,
	}, {
		Suite: "suite", Name: "first", Run: "{{BPFTRACE}} -e 'END {}'",
		Expects:     []Expect{{modeJSON, "runtime/outputs/x.json"}},
		ExactExpect: true, WillFail: true, Timeout: defaultTimeout, LocalizeTimestamps: -1,
	}}
	if !reflect.DeepEqual(tests, want) {
		t.Errorf("ParseFile:\n got %+v\nwant %+v", tests, want)
	}
}

func TestParseFileErrors(t *testing.T) {
	for _, file := range []string{
		"PROG begin {}\nEXPECT x\n",
		"NAME a\nEXPECT x\n",
		"NAME a\nPROG x\nRUN y\nEXPECT x\n",
		"NAME a\nPROG x\n",
		"NAME a\nPROG x\nEXPECT_FILE f\nEXPECT y\n",
		"NAME a\nPROG x\nEXPECT y\nBOGUS 1\n",
		"NAME a\nPROG x\nEXPECT y\nTIMEOUT soon\n",
	} {
		path := filepath.Join(t.TempDir(), "suite")
		if err := os.WriteFile(path, []byte(file), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := ParseFile(path); err == nil {
			t.Errorf("ParseFile(%q): no error", file)
		}
	}
}

func TestProbes(t *testing.T) {
	for _, tc := range []struct {
		prog string
		want []string
	}{
		{`begin { printf("kprobe:x"); }`, []string{"begin"}},
		{`begin,end { }`, []string{"begin", "end"}},
		{"BEGIN\n{ $x: uint8 = 1; @a = 1 }", []string{"BEGIN"}},
		{`i:ms:100 { exit() } kprobe:f /pid/ { }`, []string{"interval", "kprobe"}},
		{`uprobe:/bin/bash:main { } t:syscalls:x { }`, []string{"tracepoint", "uprobe"}},
		{`begin { for ($i : 0..5) { } $s.end = 1; }`, []string{"begin"}},
	} {
		if got := Probes(tc.prog); !slices.Equal(got, tc.want) {
			t.Errorf("Probes(%q) = %v, want %v", tc.prog, got, tc.want)
		}
	}
}

func TestArchAndVersion(t *testing.T) {
	host := []string{"x86_64", "le"}
	for _, tc := range []struct {
		arch []string
		want bool
	}{
		{nil, true},
		{[]string{"x86_64"}, true},
		{[]string{"aarch64", "ppc64"}, false},
		{[]string{"!be"}, true},
		{[]string{"!x86_64"}, false},
	} {
		if got := archMatches(tc.arch, host); got != tc.want {
			t.Errorf("archMatches(%v) = %v", tc.arch, got)
		}
	}
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"5.10", "6.1", true},
		{"6.18.44-fc-v1147", "6.2", false},
		{"6.2", "6.2.1", true},
		{"6.2", "6.2", false},
	} {
		if got := versionLess(tc.a, tc.b); got != tc.want {
			t.Errorf("versionLess(%q, %q) = %v", tc.a, tc.b, got)
		}
	}
}
