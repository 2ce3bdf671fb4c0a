package settings

import (
	"errors"
	"testing"
)

// TestResolve checks each setting's precedence (flag, environment,
// config block, default), the values taken as not given, and the errors.
func TestResolve(t *testing.T) {
	tests := []struct {
		name   string
		flags  map[string]string
		env    map[string]string
		config []ConfigEntry
		want   Values
		err    string
	}{
		{name: "defaults", want: Values{StrLen: 64, MapKeysMax: 4096}},
		{name: "config", config: []ConfigEntry{{"max_strlen", "100"}, {"max_buflen", "5000"}, {"max_map_keys", "9"}, {"missing_probes", "warn"}, {"perf_rb_pages", "2"}},
			want: Values{StrLen: 100, BufLen: 5000, MapKeysMax: 9, MissingProbes: MissingWarn, PerfRBPages: 2}},
		{name: "later entry wins", config: []ConfigEntry{{"max_strlen", "100"}, {"max_strlen", "200"}},
			want: Values{StrLen: 200, MapKeysMax: 4096}},
		{name: "environment over config", env: map[string]string{"BPFTRACE_STRLEN": "80", "BPFTRACE_MISSING_PROBES": "ignore"},
			config: []ConfigEntry{{"max_strlen", "100"}, {"missing_probes", "warn"}},
			want:   Values{StrLen: 80, MapKeysMax: 4096, MissingProbes: MissingIgnore}},
		{name: "first variable wins", env: map[string]string{"BPFTRACE_MAX_STRLEN": "90", "BPFTRACE_STRLEN": "80"},
			want: Values{StrLen: 90, MapKeysMax: 4096}},
		{name: "flag over environment", flags: map[string]string{"--missing-probes": "warn"}, env: map[string]string{"BPFTRACE_MISSING_PROBES": "ignore"},
			want: Values{StrLen: 64, MapKeysMax: 4096, MissingProbes: MissingWarn}},
		{name: "not a positive number is not given", env: map[string]string{"BPFTRACE_MAX_STRLEN": "abc", "BPFTRACE_STRLEN": "72", "BPFTRACE_MAP_KEYS_MAX": "-3"},
			want: Values{StrLen: 72, MapKeysMax: 4096}},
		{name: "a set variable keeps the config block out", env: map[string]string{"BPFTRACE_MAP_KEYS_MAX": "0"}, config: []ConfigEntry{{"max_map_keys", "9"}},
			want: Values{StrLen: 64, MapKeysMax: 4096}},
		{name: "cat bytes, 0.17's variable and the newer one", env: map[string]string{"BPFTRACE_CAT_BYTES_MAX": "3"},
			want: Values{StrLen: 64, MapKeysMax: 4096, CatBytesMax: 3}},
		{name: "cat bytes, the newer variable first", env: map[string]string{"BPFTRACE_CAT_BYTES_MAX": "3", "BPFTRACE_MAX_CAT_BYTES": "5"}, config: []ConfigEntry{{"max_cat_bytes", "7"}},
			want: Values{StrLen: 64, MapKeysMax: 4096, CatBytesMax: 5}},
		{name: "no C++ demangling, by variable", env: map[string]string{"BPFTRACE_NO_CPP_DEMANGLE": "1"},
			want: Values{StrLen: 64, MapKeysMax: 4096, NoCppDemangle: true}},
		{name: "no C++ demangling, by key", config: []ConfigEntry{{"cpp_demangle", "0"}},
			want: Values{StrLen: 64, MapKeysMax: 4096, NoCppDemangle: true}},
		{name: "the demangling variable over the key", env: map[string]string{"BPFTRACE_NO_CPP_DEMANGLE": "0"}, config: []ConfigEntry{{"cpp_demangle", "false"}},
			want: Values{StrLen: 64, MapKeysMax: 4096}},
		{name: "demangling variable not 0 or 1", env: map[string]string{"BPFTRACE_NO_CPP_DEMANGLE": "yes"},
			err: `read BPFTRACE_NO_CPP_DEMANGLE: "yes" is not a valid value (0 or 1)`},
		{name: "dummy time map", env: map[string]string{"BPFTRACE_DUMMY_TS_MAP": "@ts"},
			want: Values{StrLen: 64, MapKeysMax: 4096, TimeMap: "@ts"}},
		{name: "size too large in the environment", env: map[string]string{"BPFTRACE_STRLEN": "4000001"},
			err: "read BPFTRACE_STRLEN: 4000001 exceeds the maximum string size of 4000000 bytes"},
		{name: "size too large in the config block", config: []ConfigEntry{{"max_buflen", "4000001"}},
			err: "max_buflen 4000001 exceeds the maximum of 4000000 bytes"},
		{name: "stack unwinder from the config block", config: []ConfigEntry{{"stack_unwind", "eh_frame"}},
			want: Values{StrLen: 64, MapKeysMax: 4096, StackUnwind: UnwindEhFrame}},
		{name: "stack unwinder from the environment", env: map[string]string{"BPFTRACE_STACK_UNWIND": "fp"}, config: []ConfigEntry{{"stack_unwind", "eh_frame"}},
			want: Values{StrLen: 64, MapKeysMax: 4096, StackUnwind: UnwindFramePointers}},
		{name: "bad stack unwinder", config: []ConfigEntry{{"stack_unwind", "dwarf"}},
			err: `invalid stack_unwind value "dwarf": valid values are fp and eh_frame`},
		{name: "bad mode", flags: map[string]string{"--missing-probes": "maybe"},
			err: `invalid missing_probes value "maybe": valid values are error, warn and ignore`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := func(name string) (string, bool) { v, ok := tt.env[name]; return v, ok }
			got, err := Resolve(Sources{Flags: tt.flags, Env: env, Config: tt.config})
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("error %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("Resolve = %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

// TestResolveConfigEntry checks that an error in the config block names
// the entry, for the caller to place it.
func TestResolveConfigEntry(t *testing.T) {
	_, err := Resolve(Sources{Env: func(string) (string, bool) { return "", false },
		Config: []ConfigEntry{{"max_strlen", "10"}, {"missing_probes", "maybe"}}})
	var bad *Error
	if !errors.As(err, &bad) || bad.Source != "config" || bad.Entry != 1 || bad.Key != "missing_probes" {
		t.Errorf("error %#v, want the config entry 1 of missing_probes", err)
	}
}
