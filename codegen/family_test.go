package codegen

import (
	"slices"
	"testing"

	"github.com/cilium/ebpf/asm"

	"github.com/gotrace/gotrace/lang"
)

// familySource has a probe of each kind the filter is for, and one it is
// not for.
const familySource = `BEGIN { @b = 1; }
uprobe:/bin/true:main { @u = count(); }
uretprobe:/bin/true:main { @r = count(); }`

// compileFamily compiles familySource with opts.
func compileFamily(t *testing.T, opts Options) *Spec {
	t.Helper()
	p, err := lang.Parse("test.bt", familySource)
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	info, err := lang.Analyze(p, lang.Config{}, nil)
	if err != nil {
		t.Fatalf("check: %v", err)
	}
	spec, err := Compile(info.ResolvedProgram(p), info, opts)
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	return spec
}

// refersTo reports whether insns use the map name.
func refersTo(insns asm.Instructions, name string) bool {
	return slices.ContainsFunc(insns, func(ins asm.Instruction) bool { return ins.Reference() == name })
}

// TestFamilyFilter checks which programs begin with the family filter:
// those of uprobes and uretprobes under Options.Family, never BEGIN's,
// none without; and that a Spec extending another shares its maps but
// adds no second pair of tracepoint programs.
func TestFamilyFilter(t *testing.T) {
	rec := &FamilyRecords{ChildPID: 20, GroupDead: 32}
	for _, tc := range []struct {
		name     string
		family   *FamilyRecords
		filtered map[lang.ProbeKind]bool
	}{
		{"without", nil, map[lang.ProbeKind]bool{}},
		{"with", rec, map[lang.ProbeKind]bool{lang.ProbeUprobe: true, lang.ProbeUretprobe: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := compileFamily(t, Options{Family: tc.family})
			for _, a := range spec.Attachments {
				got := refersTo(spec.Collection.Programs[a.Program].Instructions, familyMapName)
				if got != tc.filtered[a.Kind] {
					t.Errorf("%s: filtered %v, want %v", a.Probe, got, tc.filtered[a.Kind])
				}
			}
			if (spec.Family != nil) != (tc.family != nil) {
				t.Fatalf("Spec.Family %+v with Options.Family %+v", spec.Family, tc.family)
			}
			if spec.Family == nil {
				return
			}
			for _, prog := range []string{spec.Family.Fork, spec.Family.Exit} {
				if spec.Collection.Programs[prog] == nil {
					t.Errorf("no program %q in the collection", prog)
				}
			}
			ext := compileFamily(t, Options{Family: tc.family, Extends: spec})
			if ext.Family == nil || ext.Family.Fork != "" || ext.Family.Exit != "" || ext.Collection.Programs[familyForkProgram] != nil {
				t.Errorf("extending spec: Family %+v, want the maps without programs", ext.Family)
			}
			if ext.Collection.Maps[familyMapName] == nil {
				t.Error("extending spec: no family map to share")
			}
		})
	}
}

// TestFamilyLoads loads the filtered programs and the family's tracepoint
// programs, with and without the group_dead field that older kernels'
// sched_process_exit records lack.
func TestFamilyLoads(t *testing.T) {
	for _, groupDead := range []int{32, -1} {
		spec := compileFamily(t, Options{Family: &FamilyRecords{ChildPID: 20, GroupDead: groupDead}})
		load(t, spec)
	}
	// In a PID namespace of gotrace's own, with the seed program.
	spec := compileFamily(t, Options{Family: &FamilyRecords{ChildPID: 20, GroupDead: 32}, PIDNamespace: &PIDNamespace{Dev: 4, Ino: 4026531836}, ChildPID: 7})
	load(t, spec)
}

// TestFamilySeed checks that a family in a PID namespace of gotrace's
// own has the sched_process_exec program that adds the command by the
// kernel's PID, comparing the id the namespace gives with the command's
// (Options.ChildPID), and that none is made outside one or in a Spec
// that extends another.
func TestFamilySeed(t *testing.T) {
	rec := &FamilyRecords{ChildPID: 20, GroupDead: 32}
	if spec := compileFamily(t, Options{Family: rec, ChildPID: 7}); spec.Family.Seed != "" || spec.Collection.Programs[familySeedProgram] != nil {
		t.Errorf("outside a PID namespace: seed %q", spec.Family.Seed)
	}
	ns := &PIDNamespace{Dev: 4, Ino: 4026531836}
	spec := compileFamily(t, Options{Family: rec, PIDNamespace: ns, ChildPID: 7})
	seed := spec.Collection.Programs[spec.Family.Seed]
	if spec.Family.Seed == "" || seed == nil {
		t.Fatalf("in a PID namespace: no seed program (%+v)", spec.Family)
	}
	if !refersTo(seed.Instructions, familyMapName) {
		t.Error("the seed program does not change the family map")
	}
	var helpers []asm.BuiltinFunc
	comparesChild := false
	for _, ins := range seed.Instructions {
		if ins.IsBuiltinCall() {
			helpers = append(helpers, asm.BuiltinFunc(ins.Constant))
		}
		comparesChild = comparesChild || ins.OpCode.JumpOp() == asm.JNE && ins.OpCode.Source() == asm.ImmSource && ins.Constant == 7
	}
	if want := []asm.BuiltinFunc{asm.FnGetNsCurrentPidTgid, asm.FnGetCurrentPidTgid}; !slices.Equal(helpers, want) {
		t.Errorf("the seed program calls %v, want %v", helpers, want)
	}
	if !comparesChild {
		t.Error("the seed program does not compare the namespace's id with the command's, 7")
	}
	ext := compileFamily(t, Options{Family: rec, PIDNamespace: ns, ChildPID: 7, Extends: spec})
	if ext.Family.Seed != "" {
		t.Errorf("extending spec: seed %q, want none", ext.Family.Seed)
	}
}
