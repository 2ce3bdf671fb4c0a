package codegen

import (
	"testing"

	"github.com/cilium/ebpf/asm"

	"github.com/gotrace/gotrace/lang"
)

// TestPIDNamespaceIDs compiles pid, tid and a user stack's key with and
// without Options.PIDNamespace: in a PID namespace of gotrace's own, each
// reads the ids through bpf_get_ns_current_pid_tgid with the namespace's
// device and inode, and no program reads the kernel's ids.
func TestPIDNamespaceIDs(t *testing.T) {
	const src = `uprobe:/bin/true:main { @p = pid; @t = tid; @s[ustack(2)] = count(); }`
	ns := &PIDNamespace{Dev: 4, Ino: 4026532177}
	for _, tt := range []struct {
		ns         *PIDNamespace
		kernel, in int
	}{
		{nil, 3, 0},
		{ns, 0, 3},
	} {
		p, err := lang.Parse("pidns.bt", src)
		if err != nil {
			t.Fatal(err)
		}
		info, err := lang.Analyze(p, lang.Config{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		spec, err := Compile(info.ResolvedProgram(p), info, Options{PIDNamespace: tt.ns})
		if err != nil {
			t.Fatal(err)
		}
		kernel, in, inode := 0, 0, false
		for _, prog := range spec.Collection.Programs {
			for _, ins := range prog.Instructions {
				switch {
				case ins.IsBuiltinCall() && asm.BuiltinFunc(ins.Constant) == asm.FnGetCurrentPidTgid:
					kernel++
				case ins.IsBuiltinCall() && asm.BuiltinFunc(ins.Constant) == asm.FnGetNsCurrentPidTgid:
					in++
				case ins.IsLoadFromMap() || ins.OpCode.IsDWordLoad():
					inode = inode || ins.Constant == int64(ns.Ino)
				}
			}
		}
		if kernel != tt.kernel || in != tt.in || inode != (tt.ns != nil) {
			t.Errorf("namespace %v: %d calls for the kernel's ids, %d in the namespace (its inode loaded: %v); want %d and %d", tt.ns, kernel, in, inode, tt.kernel, tt.in)
		}
	}
}
