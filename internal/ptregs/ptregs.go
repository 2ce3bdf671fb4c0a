// Package ptregs is the one table of the x86-64 registers as the kernel
// saves them in struct pt_regs, the context of a uprobe and of a USDT
// probe: the members' names (bpftrace's reg() takes them), their offsets,
// the assembler's names of each register and of its parts (USDT argument
// operands use them) and the registers that pass function arguments.
package ptregs

import "fmt"

// Register is one member of struct pt_regs.
type Register struct {
	// Member is the member's name in the kernel's struct pt_regs, the
	// name reg() takes: "ax", "r8", "orig_ax".
	Member string
	// Offset is the member's byte offset in struct pt_regs.
	Offset int
	// Q, D and W are the assembler's names of the whole register and of
	// its low 4 and 2 bytes ("rax", "eax", "ax"); "" for a member that is
	// no general register (orig_ax, flags).
	Q, D, W string
	// B are the names of the low byte ("al"; r8's is r8b or r8l).
	B []string
	// H is the name of the second byte ("ah"), "" where it has none.
	H string
}

// Registers are the members of struct pt_regs in their order.
var Registers = []Register{
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
}

// Size is the size of struct pt_regs in bytes.
const Size = 168

// Args are the members that pass the first integer arguments of a
// function in the x86-64 calling convention, in order; uprobes read argN
// from them.
var Args = []string{"di", "si", "dx", "cx", "r8", "r9"}

// The offsets of the members code generation reads by name.
var (
	// IP is the instruction pointer's offset: func, and the base of a
	// %rip-relative USDT operand.
	IP = offset("ip")
	// AX is the return value's offset: retval.
	AX = offset("ax")
)

// ByMember returns the member of struct pt_regs called name.
func ByMember(name string) (Register, bool) {
	for _, r := range Registers {
		if r.Member == name {
			return r, true
		}
	}
	return Register{}, false
}

// ArgOffset returns the offset of the member that passes argument n, or
// false when n is not passed in a register.
func ArgOffset(n int) (int, bool) {
	if n < 0 || n >= len(Args) {
		return 0, false
	}
	return offset(Args[n]), true
}

// offset returns the offset of a member the package itself names.
func offset(member string) int {
	r, ok := ByMember(member)
	if !ok {
		panic(fmt.Sprintf("ptregs: no member %s", member))
	}
	return r.Offset
}
