package usdt

import (
	"debug/elf"
	"reflect"
	"strings"
	"testing"
)

func reg(name string, off, width int) Register {
	return Register{Name: name, PtRegsOffset: off, Width: width}
}

func TestParseArg(t *testing.T) {
	tests := []struct {
		in   string
		want Arg
	}{
		// Registers of every width.
		{"8@%rdi", Arg{Size: 8, Loc: ArgRegister, Reg: reg("rdi", 112, 8)}},
		{"-8@%rsi", Arg{Size: 8, Signed: true, Loc: ArgRegister, Reg: reg("rsi", 104, 8)}},
		{"-4@%eax", Arg{Size: 4, Signed: true, Loc: ArgRegister, Reg: reg("eax", 80, 4)}},
		{"4@%r9d", Arg{Size: 4, Loc: ArgRegister, Reg: reg("r9d", 64, 4)}},
		{"2@%si", Arg{Size: 2, Loc: ArgRegister, Reg: reg("si", 104, 2)}},
		{"-2@%r8w", Arg{Size: 2, Signed: true, Loc: ArgRegister, Reg: reg("r8w", 72, 2)}},
		{"1@%sil", Arg{Size: 1, Loc: ArgRegister, Reg: reg("sil", 104, 1)}},
		{"1@%dil", Arg{Size: 1, Loc: ArgRegister, Reg: reg("dil", 112, 1)}},
		{"1@%al", Arg{Size: 1, Loc: ArgRegister, Reg: reg("al", 80, 1)}},
		{"-1@%r9b", Arg{Size: 1, Signed: true, Loc: ArgRegister, Reg: reg("r9b", 64, 1)}},
		{"1@%r8l", Arg{Size: 1, Loc: ArgRegister, Reg: reg("r8l", 72, 1)}},
		{"8@%r15", Arg{Size: 8, Loc: ArgRegister, Reg: reg("r15", 0, 8)}},
		{"8@%rbp", Arg{Size: 8, Loc: ArgRegister, Reg: reg("rbp", 32, 8)}},
		{"8@%rsp", Arg{Size: 8, Loc: ArgRegister, Reg: reg("rsp", 152, 8)}},
		// High-byte registers are the full register's offset plus one.
		{"1@%ah", Arg{Size: 1, Loc: ArgRegister, Reg: reg("ah", 81, 1)}},
		{"1@%bh", Arg{Size: 1, Loc: ArgRegister, Reg: reg("bh", 41, 1)}},
		{"1@%ch", Arg{Size: 1, Loc: ArgRegister, Reg: reg("ch", 89, 1)}},
		{"-1@%dh", Arg{Size: 1, Signed: true, Loc: ArgRegister, Reg: reg("dh", 97, 1)}},
		// Immediates.
		{"-4@$5", Arg{Size: 4, Signed: true, Loc: ArgConstant, Const: 5}},
		{"1@$-56", Arg{Size: 1, Loc: ArgConstant, Const: -56}},
		{"1@$0", Arg{Size: 1, Loc: ArgConstant}},
		{"8@$0x10", Arg{Size: 8, Loc: ArgConstant, Const: 16}},
		{"8@$18446744073709551615", Arg{Size: 8, Loc: ArgConstant, Const: -1}},
		// Memory.
		{"8@-16(%rbp)", Arg{Size: 8, Loc: ArgMemory, Reg: reg("rbp", 32, 8), Disp: -16}},
		{"-4@112(%rsp)", Arg{Size: 4, Signed: true, Loc: ArgMemory, Reg: reg("rsp", 152, 8), Disp: 112}},
		{"8@(%rcx)", Arg{Size: 8, Loc: ArgMemory, Reg: reg("rcx", 88, 8)}},
		{"8@0(%r13,%rdi,8)", Arg{Size: 8, Loc: ArgMemory, Reg: reg("r13", 16, 8),
			Index: reg("rdi", 112, 8), Scale: 8}},
		{"8@(%rcx,%rdi,8)", Arg{Size: 8, Loc: ArgMemory, Reg: reg("rcx", 88, 8),
			Index: reg("rdi", 112, 8), Scale: 8}},
		{"-4@24(%rdi,%rdx,4)", Arg{Size: 4, Signed: true, Loc: ArgMemory, Reg: reg("rdi", 112, 8),
			Disp: 24, Index: reg("rdx", 96, 8), Scale: 4}},
		{"2@-8(%rax,%r12)", Arg{Size: 2, Loc: ArgMemory, Reg: reg("rax", 80, 8),
			Disp: -8, Index: reg("r12", 24, 8), Scale: 1}},
		// %rip-relative symbols.
		{"8@sym+16(%rip)", Arg{Size: 8, Loc: ArgRIPRelative, Reg: reg("rip", 128, 8),
			Symbol: "sym", Disp: 16}},
		{"-8@16+static_arr(%rip)", Arg{Size: 8, Signed: true, Loc: ArgRIPRelative, Reg: reg("rip", 128, 8),
			Symbol: "static_arr", Disp: 16}},
		{"8@sym(%rip)", Arg{Size: 8, Loc: ArgRIPRelative, Reg: reg("rip", 128, 8), Symbol: "sym"}},
		{"-4@NBuffers(%rip)", Arg{Size: 4, Signed: true, Loc: ArgRIPRelative, Reg: reg("rip", 128, 8),
			Symbol: "NBuffers"}},
		{"4@counter.0-8(%rip)", Arg{Size: 4, Loc: ArgRIPRelative, Reg: reg("rip", 128, 8),
			Symbol: "counter.0", Disp: -8}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseArg(tt.in)
			if err != nil {
				t.Fatalf("ParseArg(%q): %v", tt.in, err)
			}
			tt.want.Operand = tt.in[strings.IndexByte(tt.in, '@')+1:]
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ParseArg(%q)\n got %+v\nwant %+v", tt.in, got, tt.want)
			}
		})
	}
}

func TestParseArgErrors(t *testing.T) {
	tests := []struct {
		in, msg string
	}{
		{"8f@%xmm0", `size "8f" is not 1, 2, 4 or 8`},
		{"8@%xmm0", "unknown register %xmm0"},
		{"3@%rax", `size "3" is not 1, 2, 4 or 8`},
		{"16@%rax", `size "16" is not 1, 2, 4 or 8`},
		{"%rax", "no '@'"},
		{"8@", "empty operand"},
		{"-@%rax", `size "" is not`},
		{"8@x0", "is not a register, immediate or memory reference"},
		{"8@[sp, 8]", "is not a register, immediate or memory reference"},
		{"-4@[x29, -12]", "is not a register, immediate or memory reference"},
		{"8@$x", "bad integer"},
		{"8@$", "bad integer"},
		{"8@8(%eax)", "address register %eax is not 64-bit"},
		{"8@8(rax)", `"rax" is not a register`},
		{"8@8(%rax,%rbx,3)", `scale "3" is not 1, 2, 4 or 8`},
		{"8@8(%rax,%rbx,8,1)", "too many parts"},
		{"8@8(%rax,%rsp,8)", "%rsp cannot be an index"},
		{"8@(%rip)", "empty displacement"},
		{"8@16(%rip)", "without a symbol"},
		{"8@a+b(%rip)", "only one added symbol"},
		{"8@-sym(%rip)", "only one added symbol"},
		{"8@sym++1(%rip)", "empty term"},
		{"8@sym(%rip,%rax,1)", "%rip takes no index"},
		{"8@x(%rax)", "displacement"},
		{"8@1(%rax", "is not a register, immediate or memory reference"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			_, err := ParseArg(tt.in)
			if err == nil {
				t.Fatalf("ParseArg(%q) succeeded", tt.in)
			}
			if !strings.Contains(err.Error(), tt.msg) || !strings.Contains(err.Error(), tt.in) {
				t.Errorf("ParseArg(%q) = %q, want it to name the operand and say %q", tt.in, err, tt.msg)
			}
		})
	}
}

func TestParseArgs(t *testing.T) {
	args, err := ParseArgs("-8@%rdi  8@-16(%rbp) 1@$1")
	if err != nil {
		t.Fatal(err)
	}
	if len(args) != 3 || args[0].Reg.Name != "rdi" || args[1].Disp != -16 || args[2].Const != 1 {
		t.Errorf("ParseArgs = %+v", args)
	}
	if args, err := ParseArgs(""); err != nil || len(args) != 0 {
		t.Errorf(`ParseArgs("") = %v, %v; want no arguments`, args, err)
	}
	args, err = ParseArgs("8@%rdi 8f@%xmm0 8@%rsi")
	if err == nil || !strings.Contains(err.Error(), "8f@%xmm0") {
		t.Errorf("ParseArgs with a float operand: err = %v, want one naming 8f@%%xmm0", err)
	}
	if len(args) != 1 || args[0].Reg.Name != "rdi" {
		t.Errorf("ParseArgs with a bad second operand kept %+v, want the first", args)
	}
}

// TestRegisterTable checks every register family against the pt_regs
// layout: one offset for all widths of a register.
func TestRegisterTable(t *testing.T) {
	families := map[int][]string{
		0:   {"r15", "r15d", "r15w", "r15b", "r15l"},
		8:   {"r14", "r14d", "r14w", "r14b", "r14l"},
		16:  {"r13", "r13d", "r13w", "r13b", "r13l"},
		24:  {"r12", "r12d", "r12w", "r12b", "r12l"},
		32:  {"rbp", "ebp", "bp", "bpl"},
		40:  {"rbx", "ebx", "bx", "bl"},
		48:  {"r11", "r11d", "r11w", "r11b", "r11l"},
		56:  {"r10", "r10d", "r10w", "r10b", "r10l"},
		64:  {"r9", "r9d", "r9w", "r9b", "r9l"},
		72:  {"r8", "r8d", "r8w", "r8b", "r8l"},
		80:  {"rax", "eax", "ax", "al"},
		88:  {"rcx", "ecx", "cx", "cl"},
		96:  {"rdx", "edx", "dx", "dl"},
		104: {"rsi", "esi", "si", "sil"},
		112: {"rdi", "edi", "di", "dil"},
		128: {"rip", "eip", "ip"},
		152: {"rsp", "esp", "sp", "spl"},
	}
	widths := []int{8, 4, 2, 1, 1}
	n := 4 // ah, bh, ch, dh
	for off, names := range families {
		for i, name := range names {
			n++
			r, err := register(name)
			if err != nil {
				t.Errorf("register %s: %v", name, err)
				continue
			}
			if r.PtRegsOffset != off || r.Width != widths[i] {
				t.Errorf("register %s = offset %d width %d, want %d %d", name, r.PtRegsOffset, r.Width, off, widths[i])
			}
		}
	}
	if len(registers()) != n {
		t.Errorf("register table has %d names, the test knows %d", len(registers()), n)
	}
}

// TestParseAArch64Arg parses the AArch64 operand forms: what gcc -O2
// writes for the fixture (x registers, plain immediates) and the memory
// forms of larger programs.
func TestParseAArch64Arg(t *testing.T) {
	tests := []struct {
		in   string
		want Arg
		err  string
	}{
		{in: "-8@x0", want: Arg{Size: 8, Signed: true, Loc: ArgRegister, Reg: reg("x0", 0, 8)}},
		{in: "-4@x1", want: Arg{Size: 4, Signed: true, Loc: ArgRegister, Reg: reg("x1", 8, 8)}},
		{in: "4@w3", want: Arg{Size: 4, Loc: ArgRegister, Reg: reg("w3", 24, 4)}},
		{in: "8@x30", want: Arg{Size: 8, Loc: ArgRegister, Reg: reg("x30", 240, 8)}},
		{in: "8@sp", want: Arg{Size: 8, Loc: ArgRegister, Reg: reg("sp", 248, 8)}},
		{in: "1@0", want: Arg{Size: 1, Loc: ArgConstant}},
		{in: "-4@-1", want: Arg{Size: 4, Signed: true, Loc: ArgConstant, Const: -1}},
		{in: "4@#5", want: Arg{Size: 4, Loc: ArgConstant, Const: 5}},
		{in: "8@[x22, 20]", want: Arg{Size: 8, Loc: ArgMemory, Reg: reg("x22", 176, 8), Disp: 20}},
		{in: "8@[sp, 16]", want: Arg{Size: 8, Loc: ArgMemory, Reg: reg("sp", 248, 8), Disp: 16}},
		{in: "-4@[x29, -4]", want: Arg{Size: 4, Signed: true, Loc: ArgMemory, Reg: reg("x29", 232, 8), Disp: -4}},
		{in: "8@[x1, #8]", want: Arg{Size: 8, Loc: ArgMemory, Reg: reg("x1", 8, 8), Disp: 8}},
		{in: "8@[x1]", want: Arg{Size: 8, Loc: ArgMemory, Reg: reg("x1", 8, 8)}},
		{in: "8@[w1, 8]", err: `base "w1" is not a 64-bit register`},
		{in: "8@[x1, 8", err: `has no closing ']'`},
		{in: "8@[x1, y]", err: `displacement: bad integer "y"`},
		{in: "8@x31", err: `operand "x31" is not a register, immediate or memory reference`},
		{in: "8@%rdi", err: `operand "%rdi" is not a register`},
		{in: "3@x1", err: `size "3" is not 1, 2, 4 or 8`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseAArch64Arg(tt.in)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) || !strings.Contains(err.Error(), tt.in) {
					t.Fatalf("ParseAArch64Arg(%q) = %v, want an error naming it and saying %q", tt.in, err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.want.Operand = tt.in[strings.IndexByte(tt.in, '@')+1:]
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ParseAArch64Arg(%q)\n got %+v\nwant %+v", tt.in, got, tt.want)
			}
		})
	}
}

// TestParseArgsForAArch64 splits an AArch64 argument string at the
// spaces outside brackets.
func TestParseArgsForAArch64(t *testing.T) {
	args, err := ParseArgsFor(elf.EM_AARCH64, "-8@x0 8@[x22, 20]  1@0 8@[sp, 16]")
	if err != nil {
		t.Fatal(err)
	}
	var ops []string
	for _, a := range args {
		ops = append(ops, a.Operand)
	}
	if want := []string{"x0", "[x22, 20]", "0", "[sp, 16]"}; !reflect.DeepEqual(ops, want) {
		t.Errorf("operands %q, want %q", ops, want)
	}
	if _, err := ParseArgsFor(elf.EM_RISCV, "8@a0"); err == nil || !strings.Contains(err.Error(), "neither x86-64 nor AArch64") {
		t.Errorf("ParseArgsFor(EM_RISCV) = %v, want it refused", err)
	}
}
