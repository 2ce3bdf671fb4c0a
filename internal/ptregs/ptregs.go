// Package ptregs is the one description of struct pt_regs, the context of
// a kprobe, a uprobe and a USDT probe, for each architecture gotrace runs
// on (x86-64 and arm64): the members' names (bpftrace's reg() takes
// them), their offsets, the assembler's names of each register and of its
// parts (USDT argument operands use them), the registers that pass
// function arguments and return values, and how to tell user mode. Native
// is the table of the architecture gotrace is built for; the package's
// variables and functions read it.
package ptregs

import (
	"fmt"
	"strconv"
)

// Register is one member of struct pt_regs.
type Register struct {
	// Member is the member's name as reg() takes it: "ax", "r8",
	// "orig_ax" on x86-64, "r0" to "r30", "sp", "pc" on arm64.
	Member string
	// Offset is the member's byte offset in struct pt_regs.
	Offset int
	// Q, D and W are the assembler's names of the whole register and of
	// its low 4 and 2 bytes ("rax", "eax", "ax"; arm64's "x0", "w0" and
	// no W); "" for a member that is no general register (orig_ax,
	// flags, pstate).
	Q, D, W string
	// B are the names of the low byte ("al"; r8's is r8b or r8l).
	B []string
	// H is the name of the second byte ("ah"), "" where it has none.
	H string
}

// Table is one architecture's struct pt_regs.
type Table struct {
	// Arch is the architecture's name as bpftrace's messages spell it
	// ("x86_64", "aarch64").
	Arch string
	// Registers are the members of struct pt_regs in their order.
	Registers []Register
	// Size is the size of struct pt_regs in bytes, as a BPF program's
	// context (arm64's is struct user_pt_regs).
	Size int
	// Args are the members that pass the first integer arguments of a
	// function, in order; uprobes and kprobes read argN from them.
	Args []string
	// IP, Return and SP name the members of the instruction pointer
	// (func), the return value (retval) and the stack pointer.
	IP, Return, SP string
	// Mode is the member whose low bits say the privilege level the
	// probe interrupted; the code ran in user mode when Mode & ModeMask
	// is UserMode (x86-64's cs, arm64's pstate).
	Mode               string
	ModeMask, UserMode int32
	// StackArgs is how far above the stack pointer at a function's
	// entry its first argument on the stack lies (sarg0): past the
	// return address that x86-64's call pushes; at the stack pointer on
	// arm64, whose bl leaves the return address in x30.
	StackArgs int
}

// AMD64 is x86-64's struct pt_regs.
var AMD64 = &Table{
	Arch: "x86_64",
	Registers: []Register{
		{Member: "r15", Offset: 0, Q: "r15", D: "r15d", W: "r15w", B: []string{"r15b", "r15l"}},
		{Member: "r14", Offset: 8, Q: "r14", D: "r14d", W: "r14w", B: []string{"r14b", "r14l"}},
		{Member: "r13", Offset: 16, Q: "r13", D: "r13d", W: "r13w", B: []string{"r13b", "r13l"}},
		{Member: "r12", Offset: 24, Q: "r12", D: "r12d", W: "r12w", B: []string{"r12b", "r12l"}},
		{Member: "bp", Offset: 32, Q: "rbp", D: "ebp", W: "bp", B: []string{"bpl"}},
		{Member: "bx", Offset: 40, Q: "rbx", D: "ebx", W: "bx", B: []string{"bl"}, H: "bh"},
		{Member: "r11", Offset: 48, Q: "r11", D: "r11d", W: "r11w", B: []string{"r11b", "r11l"}},
		{Member: "r10", Offset: 56, Q: "r10", D: "r10d", W: "r10w", B: []string{"r10b", "r10l"}},
		{Member: "r9", Offset: 64, Q: "r9", D: "r9d", W: "r9w", B: []string{"r9b", "r9l"}},
		{Member: "r8", Offset: 72, Q: "r8", D: "r8d", W: "r8w", B: []string{"r8b", "r8l"}},
		{Member: "ax", Offset: 80, Q: "rax", D: "eax", W: "ax", B: []string{"al"}, H: "ah"},
		{Member: "cx", Offset: 88, Q: "rcx", D: "ecx", W: "cx", B: []string{"cl"}, H: "ch"},
		{Member: "dx", Offset: 96, Q: "rdx", D: "edx", W: "dx", B: []string{"dl"}, H: "dh"},
		{Member: "si", Offset: 104, Q: "rsi", D: "esi", W: "si", B: []string{"sil"}},
		{Member: "di", Offset: 112, Q: "rdi", D: "edi", W: "di", B: []string{"dil"}},
		{Member: "orig_ax", Offset: 120},
		{Member: "ip", Offset: 128, Q: "rip", D: "eip", W: "ip"},
		{Member: "cs", Offset: 136},
		{Member: "flags", Offset: 144},
		{Member: "sp", Offset: 152, Q: "rsp", D: "esp", W: "sp", B: []string{"spl"}},
		{Member: "ss", Offset: 160},
	},
	Size: 168,
	Args: []string{"di", "si", "dx", "cx", "r8", "r9"},
	IP:   "ip", Return: "ax", SP: "sp",
	// The code segment selector's requested privilege level: 3 is user.
	Mode: "cs", ModeMask: 3, UserMode: 3,
	StackArgs: 8,
}

// ARM64 is arm64's struct user_pt_regs, the start of its struct pt_regs
// and what BPF programs get: x0 to x30 (reg() calls them r0 to r30, as
// bpftrace does), sp, pc and pstate.
var ARM64 = &Table{
	Arch:      "aarch64",
	Registers: arm64Registers(),
	Size:      34 * 8,
	Args:      []string{"r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7"},
	IP:        "pc", Return: "r0", SP: "sp",
	// PSTATE's M[3:0]: 0 is EL0t, user mode.
	Mode: "pstate", ModeMask: 0xf, UserMode: 0,
	StackArgs: 0,
}

// arm64Registers lays out x0-x30, sp, pc and pstate, 8 bytes each. It runs
// at every start of gotrace, so the table is one allocation and the names
// are made without fmt: 94 allocations and 4.4 KB, where appending and
// fmt.Sprint took 124 and 8.7 KB (issue 24).
func arm64Registers() []Register {
	regs := make([]Register, 0, 34)
	for i := 0; i <= 30; i++ {
		n := strconv.Itoa(i)
		regs = append(regs, Register{Member: "r" + n, Offset: 8 * i, Q: "x" + n, D: "w" + n})
	}
	return append(regs,
		Register{Member: "sp", Offset: 31 * 8, Q: "sp", D: "wsp"},
		Register{Member: "pc", Offset: 32 * 8},
		Register{Member: "pstate", Offset: 33 * 8},
	)
}

// The native table's parts, which code generation and the checker read.
var (
	// Registers are the native members of struct pt_regs in their order.
	Registers = Native.Registers
	// Size is the size of the native struct pt_regs in bytes.
	Size = Native.Size
	// Args are the native argument registers' members.
	Args = Native.Args
	// IP is the instruction pointer's offset: func, and the base of a
	// %rip-relative USDT operand.
	IP = Native.Offset(Native.IP)
	// Return is the return value's offset: retval.
	Return = Native.Offset(Native.Return)
	// StackArgs is where sarg0 lies above the native stack pointer at a
	// function's entry.
	StackArgs = Native.StackArgs
)

// ByMember returns the native member of struct pt_regs called name.
func ByMember(name string) (Register, bool) { return Native.ByMember(name) }

// ArgOffset returns the offset of the native member that passes argument
// n, or false when n is not passed in a register.
func ArgOffset(n int) (int, bool) { return Native.ArgOffset(n) }

// ByMember returns t's member called name.
func (t *Table) ByMember(name string) (Register, bool) {
	for _, r := range t.Registers {
		if r.Member == name {
			return r, true
		}
	}
	return Register{}, false
}

// ArgOffset returns the offset of t's member that passes argument n, or
// false when n is not passed in a register.
func (t *Table) ArgOffset(n int) (int, bool) {
	if n < 0 || n >= len(t.Args) {
		return 0, false
	}
	return t.Offset(t.Args[n]), true
}

// Offset returns the offset of a member the table itself names (IP,
// Return, SP, Mode, Args).
func (t *Table) Offset(member string) int {
	r, ok := t.ByMember(member)
	if !ok {
		panic(fmt.Sprintf("ptregs: %s has no member %s", t.Arch, member))
	}
	return r.Offset
}
