package lang

import (
	"errors"
	"reflect"
	"testing"

	"github.com/cilium/ebpf/btf"
)

// fakeKernel hands the checker a BTF built in memory.
type fakeKernel struct{ spec *btf.Spec }

func (k fakeKernel) Types() (*btf.Spec, error) { return k.spec, nil }

func (k fakeKernel) CgroupID(path string) (uint64, error) {
	if path == "/sys/fs/cgroup/x" {
		return 35, nil
	}
	return 0, errors.New("no such file or directory")
}

func (k fakeKernel) Symbol(name string) (uint64, error) {
	if name == "do_sys_openat2" {
		return 0xffffffff816d4d70, nil
	}
	return 0, errors.New("not in /proc/kallsyms")
}

// testKernel builds the BTF of a small kernel: struct task with integers,
// a char array, an array of ints, a bitfield, a pointer to itself, an
// unnamed union whose members are task's, and a member of an unnamed
// struct type.
func testKernel(t *testing.T) fakeKernel {
	t.Helper()
	u32 := &btf.Int{Name: "unsigned int", Size: 4}
	s32 := &btf.Int{Name: "int", Size: 4, Encoding: btf.Signed}
	char := &btf.Int{Name: "char", Size: 1, Encoding: btf.Signed}
	task := &btf.Struct{Name: "task", Size: 48}
	task.Members = []btf.Member{
		{Name: "pid", Type: &btf.Typedef{Name: "pid_t", Type: s32}, Offset: 0},
		{Name: "comm", Type: &btf.Array{Index: u32, Type: char, Nelems: 8}, Offset: 32},
		{Name: "flag", Type: u32, Offset: 96 + 3, BitfieldSize: 2},
		{Name: "parent", Type: &btf.Pointer{Target: &btf.Const{Type: task}}, Offset: 128},
		{Name: "", Type: &btf.Union{Size: 4, Members: []btf.Member{{Name: "a", Type: u32}, {Name: "b", Type: s32}}}, Offset: 192},
		{Name: "in", Type: &btf.Struct{Size: 4, Members: []btf.Member{{Name: "x", Type: u32}}}, Offset: 224},
		{Name: "v", Type: &btf.Array{Index: u32, Type: u32, Nelems: 2}, Offset: 256},
	}
	b, err := btf.NewBuilder([]btf.Type{task}, nil)
	if err != nil {
		t.Fatal(err)
	}
	spec, err := b.Spec()
	if err != nil {
		t.Fatal(err)
	}
	return fakeKernel{spec}
}

func TestKernelStructs(t *testing.T) {
	k := testKernel(t)
	defs := kernelStructs(k.spec, "task")
	if len(defs) != 2 {
		t.Fatalf("got %d structs, want task and its anonymous member's", len(defs))
	}
	task := defs[0]
	u32, elem := Int(4, false), Int(4, false)
	want := []StructField{
		{Name: "pid", Type: Int(4, true), Offset: 0},
		{Name: "comm", Type: String(8), Offset: 4},
		{Name: "flag", Type: u32, Offset: 12, Bits: 2, BitShift: 3},
		{Name: "parent", Type: Type{Kind: KindPointer, Size: 8, Elem: &Type{Kind: KindStruct, Struct: "task", Size: 48}}, Offset: 16},
		{Name: "a", Type: u32, Offset: 24},
		{Name: "b", Type: Int(4, true), Offset: 24},
		{Name: "in", Type: Type{Kind: KindStruct, Struct: "task::(anonymous in)", Size: 4}, Offset: 28},
		{Name: "v", Type: Type{Kind: KindArray, Elem: &elem, Len: 2, Size: 8}, Offset: 32},
	}
	if task.Name != "task" || task.Size != 48 || !task.Kernel || !reflect.DeepEqual(task.Fields, want) {
		t.Errorf("task = %+v\nwant fields %+v", task, want)
	}
	if in := defs[1]; in.Name != "task::(anonymous in)" || len(in.Fields) != 1 || in.Fields[0].Name != "x" {
		t.Errorf("anonymous member's struct = %+v", in)
	}
	if kernelStructs(k.spec, "nosuch") != nil {
		t.Error("a struct the BTF lacks was found")
	}
}

func TestCheckKernelTypes(t *testing.T) {
	k := testKernel(t)
	tests := []struct {
		src, err string
	}{
		{`BEGIN { $t = (struct task *)0; @[$t->parent->comm] = count(); @x = $t->flag + $t->a + $t->in.x + $t->v[1]; }`, ""},
		{`struct task { int z; } BEGIN { $t = (struct task *)0; @ = $t->z; }`, ""},
		{`struct task { int z; } BEGIN { $t = (struct task *)0; @ = $t->pid; }`, "1:59-66: Struct/union of type 'struct task' does not contain a field named 'pid'"},
		{`BEGIN { $t = (struct task *)0; @ = $t->nosuch; }`, "1:36-46: Struct/union of type 'struct task' does not contain a field named 'nosuch'"},
		{`BEGIN { $t = (struct nosuch *)0; }`, "1:14-31: Unknown struct/union: 'struct nosuch'"},
		{`BEGIN { @ = kaddr("do_sys_openat2") + 1; }`, ""},
		{`BEGIN { @ = kaddr("jiffies"); }`, "1:13-29: Failed to resolve kernel symbol: jiffies"},
		{`BEGIN { @ = cgroupid("/sys/fs/cgroup/x") + 1; }`, ""},
		{`BEGIN { @ = cgroupid("/nosuch"); }`, "1:13-32: Failed to get `cgroupid` for path: \"/nosuch\": no such file or directory"},
		{`BEGIN { $p = "/x"; @ = cgroupid($p); }`, "1:24-36: cgroupid() expects a string literal (string provided)"},
		{`BEGIN { @ = ksym(1); @k[kstack(perf, 3)] = count(); @u[ustack(2)] = count(); }`, ""},
		{`BEGIN { @ = kstack; @ = ustack; }`, "1:21-22: Type mismatch for @: trying to assign value of type 'ustack' when map already contains a value of type 'kstack"},
	}
	for _, tt := range tests {
		p, err := Parse("t.bt", tt.src)
		if err != nil {
			t.Fatalf("parse %s: %v", tt.src, err)
		}
		_, err = Analyze(p, Config{Kernel: k}, nil)
		got := ""
		if err != nil {
			got = err.(ErrorList)[0].Error()
		}
		if got != tt.err {
			t.Errorf("%s:\n got %q\nwant %q", tt.src, got, tt.err)
		}
	}
}
