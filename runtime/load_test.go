package runtime

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"golang.org/x/sys/unix"

	"github.com/gotrace/gotrace/codegen"
	"github.com/gotrace/gotrace/internal/testenv"
	"github.com/gotrace/gotrace/lang"
	"github.com/gotrace/gotrace/runtime/output"
	"github.com/gotrace/gotrace/runtime/plan"
)

func TestSourceAt(t *testing.T) {
	insns := asm.Instructions{
		asm.Mov.Imm(asm.R0, 0).WithSource(asm.Comment("a.bt:1:1: first")),
		asm.LoadImm(asm.R1, 1, asm.DWord), // two raw slots: 1 and 2
		asm.Mov.Imm(asm.R2, 0).WithSource(asm.Comment("a.bt:2:3: second")),
		asm.Return(),
	}
	for _, tc := range []struct {
		off  int
		want string
	}{
		{0, "a.bt:1:1: first"},
		{2, "a.bt:1:1: first"},
		{3, "a.bt:2:3: second"},
		{4, "a.bt:2:3: second"},
	} {
		if got := sourceAt(insns, tc.off); got != tc.want {
			t.Errorf("sourceAt(%d) = %q, want %q", tc.off, got, tc.want)
		}
	}
}

// TestLoadVerifierError loads a program the verifier rejects (it returns
// without setting R0) and checks that the error names the script position
// of the failing instruction and quotes only the end of the log.
func TestLoadVerifierError(t *testing.T) {
	testenv.RequireRoot(t)
	insns := asm.Instructions{
		asm.Mov.Imm(asm.R1, 0).WithSource(asm.Comment("test.bt:3:5: printf(\"x\")")),
		asm.Mov.Imm(asm.R2, 0),
	}
	// A long run of harmless instructions, so the log is longer than what
	// the error quotes.
	for range 100 {
		insns = append(insns, asm.Add.Imm(asm.R2, 1))
	}
	insns = append(insns, asm.Mov.Imm(asm.R3, 0).WithSource(asm.Comment("test.bt:7:9: exit()")), asm.Return())
	spec := &ebpf.CollectionSpec{Programs: map[string]*ebpf.ProgramSpec{
		"prog0": {Name: "gt_prog0", Type: ebpf.SocketFilter, License: "GPL", Instructions: insns},
	}}
	_, err := load(spec, nil)
	var ve *VerifierError
	if !errors.As(err, &ve) {
		t.Fatalf("error %v, want a *VerifierError", err)
	}
	if ve.Program != "prog0" || ve.Source != "test.bt:7:9: exit()" {
		t.Errorf("program %q, source %q; want prog0 and test.bt:7:9: exit()", ve.Program, ve.Source)
	}
	msg := err.Error()
	t.Logf("%s", msg)
	if !strings.HasPrefix(msg, "test.bt:7:9: the kernel's verifier rejected") || !strings.Contains(msg, "R0 !read_ok") {
		t.Errorf("message does not start with the position or lacks the reason:\n%s", msg)
	}
	if n := strings.Count(msg, "\n"); n > verifierTail {
		t.Errorf("message has %d lines of log, want at most %d", n, verifierTail)
	}
	var ebpfErr *ebpf.VerifierError
	if !errors.As(err, &ebpfErr) {
		t.Error("the cilium/ebpf VerifierError is not wrapped")
	}
}

// TestVerifierErrorMessage checks what a rejected program's error says:
// the script position of the failing instruction, or, when the verifier's
// log ends in its summary of an accepted program, that the kernel refused
// the program after its verifier, with the system error.
func TestVerifierErrorMessage(t *testing.T) {
	tests := []struct {
		name string
		e    VerifierError
		want string
	}{
		{"failing instruction", VerifierError{Program: "prog0", Source: "a.bt:3:5: exit()", Log: []string{"7: (95) exit", "R0 !read_ok"}, Err: unix.EACCES},
			"a.bt:3:5: the kernel's verifier rejected the code for \"exit()\" in program prog0; the end of its log:\n  7: (95) exit\n  R0 !read_ok"},
		{"accepted, then refused", VerifierError{Program: "prog0", Log: []string{"processed 34 insns (limit 1000000) max_states_per_insn 0 total_states 3 peak_states 3 mark_read 1"}, Err: fmt.Errorf("program prog0: load program: %w", unix.EINVAL)},
			"the kernel refused program prog0 after its verifier accepted it (invalid argument; the kernel's log, dmesg, may say why); the end of its log:\n  processed 34 insns (limit 1000000) max_states_per_insn 0 total_states 3 peak_states 3 mark_read 1"},
		{"no position", VerifierError{Program: "prog1", Log: []string{"invalid func unknown#999"}, Err: unix.EINVAL},
			"the kernel's verifier rejected program prog1; the end of its log:\n  invalid func unknown#999"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.e.Error(); got != tt.want {
				t.Errorf("Error() =\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

// A ustack deeper than kernel.perf_event_max_stack is refused before
// loading, at the script position that asked for it.
func TestCheckStackDepth(t *testing.T) {
	dir := t.TempDir()
	limitFile := filepath.Join(dir, "perf_event_max_stack")
	if err := os.WriteFile(limitFile, []byte("127\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	specWith := func(frames int) *ebpf.CollectionSpec {
		name := codegen.StackMap(frames)
		return &ebpf.CollectionSpec{
			Maps: map[string]*ebpf.MapSpec{
				name: {Type: ebpf.StackTrace, KeySize: 4, ValueSize: uint32(8 * frames), MaxEntries: 16},
			},
			Programs: map[string]*ebpf.ProgramSpec{"prog0": {Instructions: asm.Instructions{
				asm.Mov.Imm(asm.R0, 0).WithSource(asm.Comment("a.bt:4:3: @[ustack(n)] = count()")),
				asm.LoadMapPtr(asm.R2, 0).WithReference(name),
				asm.Return(),
			}}},
		}
	}
	for _, tc := range []struct {
		frames    int
		limitFile string
		want      string
	}{
		{127, limitFile, ""},
		{128, limitFile, "a.bt:4:3: a stack (ustack, kstack) of 128 frames: the kernel walks at most 127 (kernel.perf_event_max_stack); raise the limit with sysctl kernel.perf_event_max_stack=128"},
		{128, filepath.Join(dir, "missing"), ""},
	} {
		err := checkStackDepth(specWith(tc.frames), tc.limitFile)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tc.want {
			t.Errorf("%d frames, limit file %s: error %q, want %q", tc.frames, filepath.Base(tc.limitFile), got, tc.want)
		}
	}
}

// TestLoadPlanStoresStart checks that the load stage stores the start
// time that elapsed reads before the attach stage attaches anything: a
// uprobe of a -p process fires as soon as it is attached, before BEGIN,
// and read a start of 0 (the time since boot as elapsed) when the start
// was stored after the attach stage's first pass.
func TestLoadPlanStoresStart(t *testing.T) {
	testenv.RequireRoot(t)
	p, info := checkScript(t, `tracepoint:sched:sched_switch { printf("%d\n", elapsed); }`, lang.Config{Host: NewHost(0, "")})
	opts := Options{}.withDefaults()
	tr := newTracer(info.ResolvedProgram(p), info, opts, output.Text)
	defer tr.close()
	pl, err := plan.Make(tr.prog, info, planInput(opts, nil, 0, tr.files))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.loadPlan(pl, nil); err != nil {
		t.Fatal(err)
	}
	if tr.attached != nil {
		t.Fatal("the load stage made an attached set")
	}
	var start uint64
	if err := tr.coll.Maps[tr.spec.StartMap].Lookup(uint32(0), &start); err != nil {
		t.Fatal(err)
	}
	if start == 0 {
		t.Error("the start time is 0 at the end of the load stage, before any probe is attached")
	}
}
