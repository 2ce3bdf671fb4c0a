package attachpoint

import (
	"fmt"
	"slices"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		raw  string
		want Point
		errs []string
	}{
		{"BEGIN", Point{Kind: Begin}, nil},
		{"usdt:./bitcoind:net:inbound_message", Point{Kind: USDT, Target: "./bitcoind", Provider: "net", Func: "inbound_message"}, nil},
		{"U:$1:function__entry", Point{Kind: USDT, Target: "$1", Func: "function__entry"}, nil},
		{`uprobe:/bin/t:"foo(char const*)"`, Point{Kind: Uprobe, Target: "/bin/t", Func: "foo(char const*)"}, nil},
		{`ur:"/a:b":main+2`, Point{Kind: Uretprobe, Target: "/a:b", Func: "main+2"}, nil},
		{"u:/bin/t:0x1234", Point{Kind: Uprobe, Target: "/bin/t", Address: 0x1234}, nil},
		{"u:/bin/t:0xzz", Point{Kind: Uprobe, Target: "/bin/t"}, []string{"invalid address 0xzz"}},
		{"interval:ms:100", Point{Kind: Interval, Unit: "ms", Freq: 100}, nil},
		{"interval:10ms", Point{Kind: Interval, Unit: "us", Freq: 10000}, nil},
		{"i:2m", Point{Kind: Interval, Unit: "us", Freq: 120e6}, nil},
		{"i:5ns", Point{Kind: Interval}, []string{"interval 5ns must be a positive whole number of microseconds"}},
		{"interval:s", Point{Kind: Interval}, []string{"interval probe type requires 2 arguments"}},
		{"i:s:$2", Point{Kind: Interval, Unit: "s", FreqParam: "$2"}, nil},
		{"interval:x:abc", Point{Kind: Interval, Unit: "x"}, []string{"x is not an accepted unit of time", `interval probe needs a number, not "abc"`}},
		{"profile:hz:0", Point{Kind: Profile, Unit: "hz"}, []string{"profile frequency should be a positive integer"}},
		{"interval:s:0", Point{Kind: Interval, Unit: "s"}, []string{"interval period should be a positive integer"}},
		{"interval:hz:1000000000", Point{Kind: Interval, Unit: "hz", Freq: 1e9}, nil},
		{"interval:hz:1000000001", Point{Kind: Interval, Unit: "hz"}, []string{"interval rate of 1000000001 hz is above 1000000000 hz, once a nanosecond"}},
		{"interval:s:9223372036", Point{Kind: Interval, Unit: "s", Freq: 9223372036}, nil},
		{"interval:s:9223372037", Point{Kind: Interval, Unit: "s"}, []string{"interval period of 9223372037 s is longer than the longest period (292 years)"}},
		{"interval:9999999999s", Point{Kind: Interval}, []string{"interval 9999999999s is longer than the longest period (292 years)"}},
		{"profile:us:18446744073709551615", Point{Kind: Profile, Unit: "us"}, []string{"profile period of 18446744073709551615 us is longer than the longest period (292 years)"}},
		{"profile:hz:18446744073709551615", Point{Kind: Profile, Unit: "hz", Freq: 18446744073709551615}, nil},
		{"t:sched:sched_switch", Point{Kind: Tracepoint, Target: "sched", Func: "sched_switch"}, nil},
		{"kr:vfs_read", Point{Kind: Kretprobe, Func: "vfs_read"}, nil},
		{"BEGIN:x", Point{Kind: Begin}, []string{"BEGIN probe type requires 0 arguments"}},
		{"usdt:a", Point{Kind: USDT}, []string{"usdt probe type requires 2 or 3 arguments"}},
		{"u:a:b:c", Point{Kind: Uprobe}, []string{"u probe type requires 2 arguments"}},
		{"software:cpu-clock:1", Point{Kind: Software, Func: "cpu-clock", Freq: 1}, nil},
		{"s:faults", Point{Kind: Software, Func: "faults"}, nil},
		{"s:nosuch:1", Point{Kind: Software, Func: "nosuch", Freq: 1}, []string{"nosuch is not a software probe"}},
		{"software", Point{Kind: Software}, []string{"software probe type requires 1 or 2 arguments"}},
		{"h:cache-misses:1", Point{Kind: Hardware, Func: "cache-misses", Freq: 1}, nil},
		{"hardware:cycles", Point{Kind: Hardware, Func: "cycles"}, nil},
		{"hardware:faults", Point{Kind: Hardware, Func: "faults"}, []string{"faults is not a hardware probe"}},
		{"watchpoint:0x404028:8:w", Point{Kind: Watchpoint, Address: 0x404028, Len: 8, Mode: "w"}, nil},
		{"w:4210728:4:rw", Point{Kind: Watchpoint, Address: 0x404028, Len: 4, Mode: "rw"}, nil},
		{"w:0x401040:8:x", Point{Kind: Watchpoint, Address: 0x401040, Len: 8, Mode: "x"}, nil},
		{"watchpoint:0x404028:8", Point{Kind: Watchpoint}, []string{"watchpoint probe type requires 3 arguments"}},
		{"watchpoint:zz:8:w", Point{Kind: Watchpoint}, []string{"invalid address zz"}},
		{"watchpoint:0x10:x:w", Point{Kind: Watchpoint}, []string{"invalid watchpoint length x"}},
		{"watchpoint:0x10:3:q", Point{Kind: Watchpoint, Address: 0x10, Len: 3, Mode: "q"}, []string{"watchpoint length must be one of (1,2,4,8)", "watchpoint mode must be combination of (r,w,x)"}},
		{"watchpoint:0x10:8:ww", Point{Kind: Watchpoint, Address: 0x10, Len: 8, Mode: "ww"}, []string{"watchpoint modes may not be duplicated"}},
		{"watchpoint:0x10:8:r", Point{Kind: Watchpoint, Address: 0x10, Len: 8, Mode: "r"}, []string{"invalid watchpoint mode: r"}},
		{"watchpoint:0x10:8:rwx", Point{Kind: Watchpoint, Address: 0x10, Len: 8, Mode: "rwx"}, []string{"invalid watchpoint mode: rwx"}},
		{"watchpoint:0x10:4:x", Point{Kind: Watchpoint, Address: 0x10, Len: 4, Mode: "x"}, []string{"an execute watchpoint (x) watches 8 bytes, not 4"}},
		{"watchpoint:0x14:8:w", Point{Kind: Watchpoint, Address: 0x14, Len: 8, Mode: "w"}, []string{"watchpoint address 0x14 is not a multiple of its length 8"}},
		{"watchpoint:main+arg0:8:w", Point{Kind: Watchpoint}, []string{"watchpoints on a function's argument (main+arg0) are not supported by gotrace: give the address to watch"}},
		{"aw:0x10:8:w", Point{}, []string{"probe type asyncwatchpoint is not supported by gotrace"}},
		{"fr:x", Point{Kind: Kretfunc, Func: "x"}, nil},
		{"kfunc:vfs_read", Point{Kind: Kfunc, Func: "vfs_read"}, nil},
		{"kfunc:a:b", Point{Kind: Kfunc}, []string{"kfunc probe type requires 1 argument"}},
		{"fentry:x", Point{}, []string{"probe type fentry is not supported by gotrace"}},
		{"usdtx:/bin/true:a:b", Point{}, []string{"Invalid probe type: usdtx"}},
	} {
		got, errs := Parse(tc.raw)
		var msgs []string
		for _, err := range errs {
			msgs = append(msgs, err.Error())
		}
		if got != tc.want || !slices.Equal(msgs, tc.errs) {
			t.Errorf("Parse(%q) = %+v, %q; want %+v, %q", tc.raw, got, msgs, tc.want, tc.errs)
		}
	}
}

func TestSplit(t *testing.T) {
	for _, tc := range []struct {
		raw  string
		want []string
	}{
		{"usdt:a:b", []string{"usdt", "a", "b"}},
		{`uprobe:a:"std::x(int)"`, []string{"uprobe", "a", "std::x(int)"}},
		{`"a:b"c:`, []string{"a:bc", ""}},
		{`u:"a`, nil},
		{`usdt:p:test:"\"probe1\""`, []string{"usdt", "p", "test", `"probe1"`}},
		{`u:"a\"`, nil},
	} {
		got, err := Split(tc.raw)
		if !slices.Equal(got, tc.want) || (err != nil) != (tc.want == nil) {
			t.Errorf("Split(%q) = %q, %v; want %q", tc.raw, got, err, tc.want)
		}
	}
}

func TestKindNames(t *testing.T) {
	for k := Unknown + 1; int(k) < len(kindNames); k++ {
		for _, name := range []string{kindNames[k].name, kindNames[k].alias} {
			if name == "" {
				continue
			}
			if got, ok := LookupKind(name); !ok || got != k {
				t.Errorf("LookupKind(%q) = %v, %v; want %v", name, got, ok, k)
			}
			if _, ok := Unattached(name); ok {
				t.Errorf("%q is both attached and not", name)
			}
		}
	}
	if _, ok := LookupKind("unknown"); ok {
		t.Error(`LookupKind("unknown") found a kind`)
	}
	if got := Kind(99).String(); got != "unknown" {
		t.Errorf("Kind(99) is %q", got)
	}
}

func TestParseFunc(t *testing.T) {
	for _, tc := range []struct {
		field string
		want  Func
	}{
		{"main+2", Func{Name: "main", Offset: 2, HasOffset: true}},
		{"main+0x10", Func{Name: "main", Offset: 16, HasOffset: true}},
		{"main+0", Func{Name: "main", HasOffset: true}},
		{"main", Func{Name: "main"}},
		{"+2", Func{Name: "+2"}},
		{"operator+", Func{Name: "operator+"}},
		{"a+b", Func{Name: "a+b"}},
		{"8802", Func{Name: "8802", Address: 8802, IsAddress: true}},
		{"", Func{}},
	} {
		tc.want.Field = tc.field
		if got := ParseFunc(tc.field); got != tc.want {
			t.Errorf("ParseFunc(%q) = %+v, want %+v", tc.field, got, tc.want)
		}
	}
}

// FuzzParse checks that any attach point or -l pattern parses without a
// panic, and that a well-formed attach point gives fields that Split also
// finds.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"usdt:./b:net:x", `u:"a:b":0x10`, "interval:s:$1", "i:ms:", "p:hz:99", `k:"`, ":::"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		ParsePattern(raw, true)
		ParsePattern(raw, false)
		p, errs := Parse(raw)
		if len(errs) > 0 {
			return
		}
		parts, err := Split(raw)
		if err != nil {
			t.Fatalf("Parse(%q) succeeded where Split fails: %v", raw, err)
		}
		if p.Kind == Unknown || !slices.Contains(parts, p.Func) && p.Func != "" {
			t.Errorf("Parse(%q) = %s", raw, fmt.Sprintf("%+v", p))
		}
	})
}

func TestParsePattern(t *testing.T) {
	for _, tc := range []struct {
		s       string
		withPID bool
		want    []Point
		err     string
	}{
		{"usdt:/bin/x:*", false, []Point{{Kind: USDT, Target: "/bin/x", Provider: "*", Func: "*"}}, ""},
		{"U:/bin/x::n", false, []Point{{Kind: USDT, Target: "/bin/x", Provider: "*", Func: "n"}}, ""},
		{"usdt:n", true, []Point{{Kind: USDT, Target: "*", Provider: "*", Func: "n"}}, ""},
		{"usdt::p:n", false, nil, "usdt probe must have a target file"},
		{"usdt:/bin/x:p:", false, nil, "usdt probe must have a target function or wildcard"},
		{"usdt:a", false, nil, "usdt probe type requires 2 or 3 arguments"},
		{"u:/bin/x:Py_Main+4", false, []Point{{Kind: Uprobe, Target: "/bin/x", Func: "Py_Main"}}, ""},
		{"ur:/bin/x:Py_Main+4", false, nil, "Offset not allowed"},
		{"uprobe:main", true, []Point{{Kind: Uprobe, Func: "main"}}, ""},
		{"uprobe:main", false, nil, "uprobe probe type requires 2 arguments"},
		{"uprobe::main", false, nil, "uprobe should have a target"},
		{"uprobe:/bin/x:", false, nil, "uprobe should be attached to a function and/or address"},
		{"uprobe:/bin/x:0x10", false, nil, "0x10 is an address: -l lists functions by name"},
		{"*:/bin/x:*", false, []Point{{Kind: Uprobe, Target: "/bin/x", Func: "*"}, {Kind: USDT, Target: "/bin/x", Provider: "*", Func: "*"}}, ""},
		{"*:/bin/x:p:n", false, []Point{{Kind: USDT, Target: "/bin/x", Provider: "p", Func: "n"}}, ""},
		{"*", true, []Point{{Kind: Uprobe, Func: "*"}, {Kind: USDT, Target: "*", Provider: "*", Func: "*"}}, ""},
		{"*", false, nil, "'*' names no probe that gotrace lists: they are 'uprobe:FILE:FUNCTION' and 'usdt:FILE:[PROVIDER:]NAME', or with -p PID 'uprobe:FUNCTION' and 'usdt:NAME'; gotrace has no kernel probes"},
		{"k*:x", false, nil, "No probe type matched for k*: gotrace -l lists uprobe, uretprobe and usdt probes, and a wildcard stands for uprobe and usdt"},
		{"kprobe:x", false, nil, "probe type 'kprobe' is not listed: gotrace -l lists uprobe, uretprobe and usdt probes"},
		{`usdt:"a`, false, nil, "unterminated quote"},
	} {
		got, err := ParsePattern(tc.s, tc.withPID)
		msg := ""
		if err != nil {
			msg = err.Error()
		}
		if !slices.Equal(got, tc.want) || msg != tc.err {
			t.Errorf("ParsePattern(%q, %v) = %+v, %q; want %+v, %q", tc.s, tc.withPID, got, msg, tc.want, tc.err)
		}
	}
}
