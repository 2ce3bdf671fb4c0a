package lang

import "testing"

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
		p, err := Parse("stdin", "BEG$1 { exit(); }")
		if err != nil {
			t.Fatalf("Parse: %v", err)
		}
		err = Resolve(p, Config{Params: []string{tc.param}})
		switch {
		case tc.err != "" && (err == nil || err.Error() != "1:1-6: "+tc.err):
			t.Errorf("BEG$1 with %s: Resolve = %v, want %s", tc.param, err, tc.err)
		case tc.err == "" && (err != nil || p.Probes[0].Attach[0].Kind.String() != tc.kind):
			t.Errorf("BEG$1 with %s: Resolve = %v, kind %v; want %s", tc.param, err, p.Probes[0].Attach[0].Kind, tc.kind)
		}
	}
}
