package codegen

import (
	"encoding/binary"
	"testing"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"

	"github.com/gotrace/gotrace/internal/ptregs"
	"github.com/gotrace/gotrace/internal/testenv"
	"github.com/gotrace/gotrace/usdt"
)

// userMem is memory of the test process that the programs below read
// with bpf_probe_read_user, as a probe reads the traced process.
var userMem [64]byte

func reg(name string, off, width int) usdt.Register {
	return usdt.Register{Name: name, PtRegsOffset: off, Width: width}
}

// TestLoadUSDTArg runs loadUSDTArg in the kernel on a fake struct
// pt_regs held in an array map, for every operand form.
func TestLoadUSDTArg(t *testing.T) {
	testenv.RequireRoot(t)
	for i := range userMem {
		userMem[i] = byte(0xf0 + i)
	}
	binary.LittleEndian.PutUint64(userMem[16:], 0xfffffffffffffff6) // -10
	binary.LittleEndian.PutUint32(userMem[24:], 0x80000000)
	mem := uint64(uintptr(unsafe.Pointer(&userMem[0])))

	const pc = 0x1000
	tests := []struct {
		name string
		arg  usdt.Arg
		regs map[int]uint64
		want uint64
	}{
		{"-8@%rdi", usdt.Arg{Size: 8, Signed: true, Loc: usdt.ArgRegister, Reg: reg("rdi", 112, 8)},
			map[int]uint64{112: 0xfffffffffffffffa}, 0xfffffffffffffffa},
		{"-4@%eax", usdt.Arg{Size: 4, Signed: true, Loc: usdt.ArgRegister, Reg: reg("eax", 80, 4)},
			map[int]uint64{80: 0x12345678fffffffe}, 0xfffffffffffffffe},
		{"4@%eax", usdt.Arg{Size: 4, Loc: usdt.ArgRegister, Reg: reg("eax", 80, 4)},
			map[int]uint64{80: 0x12345678fffffffe}, 0xfffffffe},
		{"-2@%r8w", usdt.Arg{Size: 2, Signed: true, Loc: usdt.ArgRegister, Reg: reg("r8w", 72, 2)},
			map[int]uint64{72: 0xfffa}, 0xfffffffffffffffa},
		{"-1@%r9b", usdt.Arg{Size: 1, Signed: true, Loc: usdt.ArgRegister, Reg: reg("r9b", 64, 1)},
			map[int]uint64{64: 0x1206}, 6},
		{"1@%ah", usdt.Arg{Size: 1, Loc: usdt.ArgRegister, Reg: reg("ah", 81, 1)},
			map[int]uint64{80: 0x1234c812}, 0xc8},
		{"-1@%ah", usdt.Arg{Size: 1, Signed: true, Loc: usdt.ArgRegister, Reg: reg("ah", 81, 1)},
			map[int]uint64{80: 0x1234c812}, 0xffffffffffffffc8},
		{"1@$-56", usdt.Arg{Size: 1, Loc: usdt.ArgConstant, Const: -56}, nil, 200},
		{"-4@$5", usdt.Arg{Size: 4, Signed: true, Loc: usdt.ArgConstant, Const: 5}, nil, 5},
		{"-8@$-1", usdt.Arg{Size: 8, Signed: true, Loc: usdt.ArgConstant, Const: -1}, nil, 0xffffffffffffffff},
		{"-8@16(%rbp)", usdt.Arg{Size: 8, Signed: true, Loc: usdt.ArgMemory, Reg: reg("rbp", 32, 8), Disp: 16},
			map[int]uint64{32: mem}, 0xfffffffffffffff6},
		{"-4@-8(%rbp)", usdt.Arg{Size: 4, Signed: true, Loc: usdt.ArgMemory, Reg: reg("rbp", 32, 8), Disp: -8},
			map[int]uint64{32: mem + 32}, 0xffffffff80000000},
		{"2@(%rcx)", usdt.Arg{Size: 2, Loc: usdt.ArgMemory, Reg: reg("rcx", 88, 8)},
			map[int]uint64{88: mem + 2}, 0xf3f2},
		{"-1@1(%rdi,%rdx,4)", usdt.Arg{Size: 1, Signed: true, Loc: usdt.ArgMemory, Reg: reg("rdi", 112, 8),
			Index: reg("rdx", 96, 8), Scale: 4, Disp: 1}, map[int]uint64{112: mem, 96: 2}, 0xfffffffffffffff9},
		{"4@-40(%rsp,%rax,8)", usdt.Arg{Size: 4, Loc: usdt.ArgMemory, Reg: reg("rsp", 152, 8),
			Index: reg("rax", 80, 8), Scale: 8, Disp: -40}, map[int]uint64{152: mem + 40, 80: 3}, 0x80000000},
		{"-8@sym+16(%rip)", usdt.Arg{Size: 8, Signed: true, Loc: usdt.ArgRIPRelative, Symbol: "sym", SymbolAddr: 0x5000, Disp: 16},
			map[int]uint64{128: mem - (0x5000 - pc)}, 0xfffffffffffffff6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := runArg(t, tt.arg, pc, tt.regs)
			if got != tt.want {
				t.Errorf("%s = %#x, want %#x", tt.name, got, tt.want)
			}
		})
	}
}

// runArg loads argument a from a fake pt_regs with the given register
// values and returns it.
func runArg(t *testing.T, a usdt.Arg, pc uint64, regs map[int]uint64) uint64 {
	t.Helper()
	regsMap, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.Array, KeySize: 4, ValueSize: uint32(ptregs.Size), MaxEntries: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer regsMap.Close()
	out, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	buf := make([]byte, ptregs.Size)
	for off, v := range regs {
		binary.LittleEndian.PutUint64(buf[off&^7:], v)
	}
	if err := regsMap.Put(uint32(0), buf); err != nil {
		t.Fatal(err)
	}
	load, err := loadUSDTArg(asm.R6, a, pc, asm.RFP, -16)
	if err != nil {
		t.Fatal(err)
	}
	insns := asm.Instructions{
		storeImm64(asm.RFP, -8, 0),
		asm.LoadMapPtr(asm.R1, regsMap.FD()),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, -8),
		asm.FnMapLookupElem.Call(),
		asm.JNE.Imm(asm.R0, 0, "ok"),
		asm.Return(),
		asm.Mov.Reg(asm.R6, asm.R0).WithSymbol("ok"),
	}
	insns = append(insns, load...)
	insns = append(insns,
		asm.StoreMem(asm.RFP, -16, asm.R0, asm.DWord),
		asm.LoadMapPtr(asm.R1, out.FD()),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, -8),
		asm.Mov.Reg(asm.R3, asm.RFP),
		asm.Add.Imm(asm.R3, -16),
		asm.Mov.Imm(asm.R4, 0),
		asm.FnMapUpdateElem.Call(),
		asm.Mov.Imm(asm.R0, 0),
		asm.Return(),
	)
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{Type: ebpf.RawTracepoint, License: "GPL", Instructions: insns})
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	defer prog.Close()
	if _, err := prog.Run(&ebpf.RunOptions{Context: []uint64{0}}); err != nil {
		t.Fatal(err)
	}
	var v uint64
	if err := out.Lookup(uint32(0), &v); err != nil {
		t.Fatal(err)
	}
	return v
}
