// Package usdt finds the USDT probes (systemtap SDT notes) of ELF executables
// and shared objects, parses their x86-64 argument operands, lists them the
// way bpftrace does and finds the objects a running process has mapped.
package usdt

// Probe is one provider:name of one file with all its locations. A probe that
// the compiler inlined or that the source fires from several places has
// several locations, each with its own arguments.
type Probe struct {
	// Path is the absolute path of the ELF file as the user named it.
	Path      string
	Provider  string
	Name      string
	Locations []Location
}

// Location is one site of a probe: one .note.stapsdt entry.
type Location struct {
	// PC is the note's address after the .stapsdt.base adjustment.
	PC uint64
	// Offset is PC as a file offset: what a uprobe attaches to.
	Offset uint64
	// Semaphore is the semaphore's address after adjustment, 0 for none.
	Semaphore uint64
	// SemaphoreOffset is the semaphore as a file offset, 0 for none: what
	// the kernel's uprobe ref_ctr_offset takes.
	SemaphoreOffset uint64
	// Base is the note's recorded .stapsdt.base address.
	Base uint64
	// ArgString is the note's argument string as written, such as
	// "-8@%rdi 8@-16(%rbp)".
	ArgString string
	// Args are the parsed arguments, one per operand. When an operand
	// cannot be parsed, ArgsErr says why and Args holds what came before.
	Args    []Arg
	ArgsErr error
}

// ArgLocation says where an argument's value lives at the probe site.
type ArgLocation int

// The operand forms of x86-64 SDT arguments.
const (
	// ArgRegister: the value is in register Reg.
	ArgRegister ArgLocation = iota + 1
	// ArgConstant: the value is the immediate Const (`$5`, `$-56`).
	ArgConstant
	// ArgMemory: the value is in memory at Disp + Reg [+ Index*Scale]
	// (`-16(%rbp)`, `(%rcx)`, `0(%r13,%rdi,8)`).
	ArgMemory
	// ArgRIPRelative: the value is in memory at Symbol+Disp relative to
	// the instruction pointer (`sym+16(%rip)`); SymbolAddr is Symbol's
	// address in the file when the symbol table has it.
	ArgRIPRelative
)

// Arg is one parsed argument operand, such as `-4@%eax`.
type Arg struct {
	// Size is the value's size in bytes: 1, 2, 4 or 8.
	Size int
	// Signed is true when the size carried a minus sign.
	Signed bool
	Loc    ArgLocation
	// Reg is the register (ArgRegister) or base register (ArgMemory).
	Reg Register
	// Index and Scale are the index register and its scale for the SIB
	// memory form; Index.Name is "" when there is none.
	Index Register
	Scale int
	// Disp is the memory displacement.
	Disp int64
	// Const is the immediate for ArgConstant.
	Const int64
	// Symbol and SymbolAddr describe a %rip-relative operand.
	Symbol     string
	SymbolAddr uint64
	// Operand is the operand text after the '@'.
	Operand string
}

// Register is an x86-64 register as named in an operand.
type Register struct {
	// Name is the register as written, without '%' ("eax", "r9d", "ah").
	Name string
	// PtRegsOffset is the byte offset of the full register in the kernel's
	// struct pt_regs (rdi is 112), plus 1 for the high-byte registers (ah
	// is 81).
	PtRegsOffset int
	// Width is the width of the named part in bytes: 8 for rax, 4 for eax,
	// 2 for ax, 1 for al and ah.
	Width int
}
