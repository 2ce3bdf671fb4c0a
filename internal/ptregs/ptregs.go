// Package ptregs is the one description of struct pt_regs, the context of
// a kprobe, a uprobe and a USDT probe, for each architecture gotrace runs
// on (x86-64 and arm64): the members' names (bpftrace's reg() takes
// them), their offsets, the assembler's names of each register and of its
// parts (USDT argument operands use them), the registers that pass
// function arguments and return values, and how to tell user mode. Native
// is the table of the architecture gotrace is built for; the package's
// variables and functions read it.
package ptregs

import "fmt"

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
// bpftrace does), sp, pc and pstate, 8 bytes each. The members are written
// out rather than made by a loop so that the table is data in the binary:
// a loop ran at every start of gotrace, on x86-64 too, for 94 allocations
// and 4.4 KB (issue 24).
var ARM64 = &Table{
	Arch: "aarch64",
	Registers: []Register{
		{Member: "r0", Offset: 0, Q: "x0", D: "w0"},
		{Member: "r1", Offset: 8, Q: "x1", D: "w1"},
		{Member: "r2", Offset: 16, Q: "x2", D: "w2"},
		{Member: "r3", Offset: 24, Q: "x3", D: "w3"},
		{Member: "r4", Offset: 32, Q: "x4", D: "w4"},
		{Member: "r5", Offset: 40, Q: "x5", D: "w5"},
		{Member: "r6", Offset: 48, Q: "x6", D: "w6"},
		{Member: "r7", Offset: 56, Q: "x7", D: "w7"},
		{Member: "r8", Offset: 64, Q: "x8", D: "w8"},
		{Member: "r9", Offset: 72, Q: "x9", D: "w9"},
		{Member: "r10", Offset: 80, Q: "x10", D: "w10"},
		{Member: "r11", Offset: 88, Q: "x11", D: "w11"},
		{Member: "r12", Offset: 96, Q: "x12", D: "w12"},
		{Member: "r13", Offset: 104, Q: "x13", D: "w13"},
		{Member: "r14", Offset: 112, Q: "x14", D: "w14"},
		{Member: "r15", Offset: 120, Q: "x15", D: "w15"},
		{Member: "r16", Offset: 128, Q: "x16", D: "w16"},
		{Member: "r17", Offset: 136, Q: "x17", D: "w17"},
		{Member: "r18", Offset: 144, Q: "x18", D: "w18"},
		{Member: "r19", Offset: 152, Q: "x19", D: "w19"},
		{Member: "r20", Offset: 160, Q: "x20", D: "w20"},
		{Member: "r21", Offset: 168, Q: "x21", D: "w21"},
		{Member: "r22", Offset: 176, Q: "x22", D: "w22"},
		{Member: "r23", Offset: 184, Q: "x23", D: "w23"},
		{Member: "r24", Offset: 192, Q: "x24", D: "w24"},
		{Member: "r25", Offset: 200, Q: "x25", D: "w25"},
		{Member: "r26", Offset: 208, Q: "x26", D: "w26"},
		{Member: "r27", Offset: 216, Q: "x27", D: "w27"},
		{Member: "r28", Offset: 224, Q: "x28", D: "w28"},
		{Member: "r29", Offset: 232, Q: "x29", D: "w29"},
		{Member: "r30", Offset: 240, Q: "x30", D: "w30"},
		{Member: "sp", Offset: 248, Q: "sp", D: "wsp"},
		{Member: "pc", Offset: 256},
		{Member: "pstate", Offset: 264},
	},
	Size: 34 * 8,
	Args: []string{"r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7"},
	IP:   "pc", Return: "r0", SP: "sp",
	// PSTATE's M[3:0]: 0 is EL0t, user mode.
	Mode: "pstate", ModeMask: 0xf, UserMode: 0,
	StackArgs: 0,
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
