package lang

import (
	"testing"

	"github.com/gotrace/gotrace/lang/attachpoint"
)

func TestExpandParams(t *testing.T) {
	params := []string{"/usr/bin/python3.11", "python"}
	for _, tc := range []struct {
		in, want string
		err      bool
	}{
		{"$1", "/usr/bin/python3.11", false},
		{"usdt:$1:$2:x", "usdt:/usr/bin/python3.11:python:x", false},
		{"no params", "no params", false},
		{"cost$", "cost$", false},
		{"$3", "", true},
		{"$0", "", true},
	} {
		got, err := expandParams(tc.in, params)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("expandParams(%q) = %q, %v; want %q, error %v", tc.in, got, err, tc.want, tc.err)
		}
	}
}

// TestResolveParamInProbeType checks a positional parameter inside the
// probe type, which the parser leaves for Resolve: BEG$1 with IN is BEGIN,
// with XX an invalid probe type.
func TestResolveParamInProbeType(t *testing.T) {
	for _, tc := range []struct {
		param, kind, err string
	}{
		{"IN", "BEGIN", ""},
		{"XX", "", "Invalid probe type: BEGXX"},
	} {
		p := mustParse(t, "BEG$1 { exit(); }")
		info := NewInfo()
		err := Resolve(p, Config{Params: []string{tc.param}}, info)
		switch {
		case tc.err != "" && (err == nil || err.Error() != "1:1-6: "+tc.err):
			t.Errorf("BEG$1 with %s: Resolve = %v, want %s", tc.param, err, tc.err)
		case tc.err == "" && (err != nil || info.AttachPoints(p.Probes[0])[0].Kind.String() != tc.kind):
			t.Errorf("BEG$1 with %s: Resolve = %v, kind %v; want %s", tc.param, err, info.AttachPoints(p.Probes[0])[0].Kind, tc.kind)
		}
	}
}

// processHost is a ProcessHost whose process sees every absolute path
// under /proc/7/root.
type processHost struct{ fakeTracepoints }

func (processHost) ProcessPath(path string) string { return "/proc/7/root" + path }

// TestResolveProcessTarget checks that an absolute usdt or uprobe target
// is the -p process's file, and that relative paths and wildcards are left
// as written.
func TestResolveProcessTarget(t *testing.T) {
	for _, tc := range []struct {
		src, want string
	}{
		{"usdt:/tmp/ns/usdt_test:tracetest:testprobe", "/proc/7/root/tmp/ns/usdt_test"},
		{"uprobe:/tmp/ns/uprobe_test:uprobeFunction1", "/proc/7/root/tmp/ns/uprobe_test"},
		{"uretprobe:/tmp/ns/uprobe_test:uprobeFunction1", "/proc/7/root/tmp/ns/uprobe_test"},
		{"uprobe:./testprogs/uprobe_test:uprobeFunction1", "./testprogs/uprobe_test"},
		{"uprobe:/tmp/ns/*:uprobeFunction1", "/tmp/ns/*"},
	} {
		p := mustParse(t, tc.src+" { }")
		info := NewInfo()
		if err := Resolve(p, Config{Host: processHost{}}, info); err != nil {
			t.Fatalf("Resolve(%q): %v", tc.src, err)
		}
		if got := info.AttachPoints(p.Probes[0])[0].Target; got != tc.want {
			t.Errorf("%s: target %q, want %q", tc.src, got, tc.want)
		}
	}
}

// TestResolveFunctionField checks that a uprobe's function field is parsed
// on the resolved attach point after the parameters are substituted: with
// $1 an address or a function and offset, the field is one only then. The
// parsed attach point keeps no parse.
func TestResolveFunctionField(t *testing.T) {
	for _, tc := range []struct {
		src, param string
		want       attachpoint.Func
	}{
		{"uprobe:/bin/sh:$1", "8802", attachpoint.Func{Field: "8802", Name: "8802", Address: 8802, IsAddress: true}},
		{"uretprobe:/bin/sh:$1", "main+0x10", attachpoint.Func{Field: "main+0x10", Name: "main", Offset: 0x10, HasOffset: true}},
		{"uprobe:/bin/sh:mall*", "", attachpoint.Func{Field: "mall*", Name: "mall*"}},
		{"usdt:/bin/sh:$1", "x+1", attachpoint.Func{}},
	} {
		p := mustParse(t, tc.src+" { }")
		info := NewInfo()
		if err := Resolve(p, Config{Params: []string{tc.param}}, info); err != nil {
			t.Fatalf("Resolve(%q): %v", tc.src, err)
		}
		if got := info.AttachPoints(p.Probes[0])[0].Function; got != tc.want {
			t.Errorf("%s with %q: function %+v, want %+v", tc.src, tc.param, got, tc.want)
		}
		if got := p.Probes[0].Attach[0].Function; got != (attachpoint.Func{}) {
			t.Errorf("%s: the parsed attach point holds %+v", tc.src, got)
		}
	}
}
