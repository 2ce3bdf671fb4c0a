package codegen

import (
	"testing"

	"github.com/cilium/ebpf"

	"github.com/gotrace/gotrace/internal/settings"
	"github.com/gotrace/gotrace/internal/testenv"
	"github.com/gotrace/gotrace/lang"
)

// TestUnwindMaps checks which stack maps a script's stacks go to under
// each unwinder: user stacks walked with .eh_frame rules into
// UnwoundStackMap with the walk's tables, kernel stacks and the fp walk
// into the kernel's stack trace map. As root it also loads each program,
// one per probe kind whose registers the walk takes differently (a
// uprobe's context is covered by runtime's tests, which need a binary).
func TestUnwindMaps(t *testing.T) {
	tests := []struct {
		name   string
		unwind settings.StackUnwind
		src    string
		want   []string
		absent []string
	}{
		{"fp", settings.UnwindFramePointers, `BEGIN { @[ustack] = count(); }`,
			[]string{StackMap(127)}, []string{UnwoundStackMap(127), UnwindProcsMap}},
		{"eh_frame", settings.UnwindEhFrame, `BEGIN { @[ustack(5)] = count(); }`,
			[]string{UnwoundStackMap(5), UnwindBufMap(5), UnwindFilesMap, UnwindRulesMap, UnwindProcsMap, UnwindStopsMap}, []string{StackMap(5)}},
		{"eh_frame perf", settings.UnwindEhFrame, `profile:hz:99 { @[ustack(perf)] = count(); }`,
			[]string{UnwoundStackMap(127)}, []string{StackMap(127)}},
		{"eh_frame and kstack", settings.UnwindEhFrame, `interval:s:1 { @[kstack, ustack] = count(); }`,
			[]string{StackMap(127), UnwoundStackMap(127)}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := lang.Parse("test.bt", tt.src)
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			v := settings.Values{StackUnwind: tt.unwind, MapKeysMax: settings.DefaultMapKeysMax, StrLen: settings.DefaultStrLen}
			info, err := lang.Analyze(p, lang.Config{Values: v}, nil)
			if err != nil {
				t.Fatalf("check: %v", err)
			}
			spec, err := Compile(info.ResolvedProgram(p), info, Options{Values: v})
			if err != nil {
				t.Fatalf("compile: %v", err)
			}
			for _, name := range tt.want {
				if spec.Collection.Maps[name] == nil {
					t.Errorf("no map %s", name)
				}
			}
			for _, name := range tt.absent {
				if spec.Collection.Maps[name] != nil {
					t.Errorf("map %s declared", name)
				}
			}
			if testing.Short() {
				return
			}
			testenv.RequireRoot(t)
			coll, err := ebpf.NewCollection(spec.Collection)
			if err != nil {
				t.Fatalf("load: %v", err)
			}
			coll.Close()
		})
	}
}
