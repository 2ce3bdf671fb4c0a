package usdt

import (
	"debug/elf"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/gotrace/gotrace/internal/ptregs"
)

// registers maps every x86-64 register name an SDT operand may use to its
// place in struct pt_regs and the width of the named part;
// aarch64Registers, every AArch64 one. They are built when the first
// operand is parsed, not at every start of gotrace.
var (
	registers        = sync.OnceValue(func() map[string]Register { return buildRegisters(ptregs.AMD64) })
	aarch64Registers = sync.OnceValue(func() map[string]Register { return buildRegisters(ptregs.ARM64) })
)

func buildRegisters(t *ptregs.Table) map[string]Register {
	regs := make(map[string]Register)
	add := func(name string, off, width int) {
		if name != "" {
			regs[name] = Register{Name: name, PtRegsOffset: off, Width: width}
		}
	}
	for _, r := range t.Registers {
		add(r.Q, r.Offset, 8)
		add(r.D, r.Offset, 4)
		add(r.W, r.Offset, 2)
		for _, b := range r.B {
			add(b, r.Offset, 1)
		}
		// The high-byte registers are the second byte of the full
		// register.
		add(r.H, r.Offset+1, 1)
	}
	return regs
}

// ParseArgs parses a note's argument string, such as "-8@%rdi 8@-16(%rbp)",
// into one Arg per space-separated operand. An empty string has no
// arguments. On an operand that cannot be parsed it returns the arguments
// before it and an error naming the operand.
func ParseArgs(s string) ([]Arg, error) {
	return parseArgList(strings.Fields(s), ParseArg)
}

// ParseArgsFor parses a note's argument string in the operand syntax of
// the ELF file's machine: x86-64's (ParseArgs) or AArch64's, whose
// memory operands hold a space ("-4@x1 8@[x22, 20] 1@0").
func ParseArgsFor(m elf.Machine, s string) ([]Arg, error) {
	switch m {
	case elf.EM_X86_64:
		return ParseArgs(s)
	case elf.EM_AARCH64:
		return parseArgList(splitAArch64(s), ParseAArch64Arg)
	}
	return nil, fmt.Errorf("parse usdt arguments %q: machine %v is neither x86-64 nor AArch64", s, m)
}

// parseArgList parses each operand with parse, stopping at the first that
// fails.
func parseArgList(fields []string, parse func(string) (Arg, error)) ([]Arg, error) {
	args := make([]Arg, 0, len(fields))
	for _, f := range fields {
		a, err := parse(f)
		if err != nil {
			return args, err
		}
		args = append(args, a)
	}
	return args, nil
}

// ParseArg parses one x86-64 SDT argument, `[-]SIZE@OPERAND`: SIZE is 1, 2,
// 4 or 8 and a minus sign makes it signed; OPERAND is a register (`%eax`),
// an immediate (`$-56`), a memory reference (`-16(%rbp)`,
// `0(%r13,%rdi,8)`) or a %rip-relative symbol (`sym+16(%rip)`). Symbol
// addresses are left for ReadFile to fill in.
func ParseArg(s string) (Arg, error) {
	return parseArg(s, x86Operand)
}

// ParseAArch64Arg parses one AArch64 SDT argument, `[-]SIZE@OPERAND`:
// OPERAND is a register (`x1`, `w1`, `sp`), an immediate (`0`, `-1`, or
// with '#'), or a memory reference of a 64-bit base register and an
// optional displacement (`[x22, 20]`, `[sp, 16]`, `[x0]`).
func ParseAArch64Arg(s string) (Arg, error) {
	return parseArg(s, aarch64Operand)
}

// parseArg parses the size of an argument and leaves its operand to
// operand, the machine's syntax.
func parseArg(s string, operand func(op string, a *Arg) error) (Arg, error) {
	var a Arg
	sizeText, op, ok := strings.Cut(s, "@")
	if !ok {
		return a, fmt.Errorf("parse usdt argument %q: no '@' between size and operand", s)
	}
	if strings.HasPrefix(sizeText, "-") {
		a.Signed = true
		sizeText = sizeText[1:]
	}
	switch sizeText {
	case "1", "2", "4", "8":
		a.Size = int(sizeText[0] - '0')
	default:
		return a, fmt.Errorf("parse usdt argument %q: size %q is not 1, 2, 4 or 8", s, sizeText)
	}
	a.Operand = op
	if op == "" {
		return Arg{}, fmt.Errorf("parse usdt argument %q: empty operand", s)
	}
	if err := operand(op, &a); err != nil {
		return Arg{}, fmt.Errorf("parse usdt argument %q: %w", s, err)
	}
	return a, nil
}

// x86Operand parses an x86-64 operand (AT&T syntax) into a.
func x86Operand(op string, a *Arg) error {
	switch op[0] {
	case '%':
		r, err := register(op[1:])
		if err != nil {
			return err
		}
		a.Loc = ArgRegister
		a.Reg = r
	case '$':
		v, err := parseInt(op[1:])
		if err != nil {
			return fmt.Errorf("immediate %q: %w", op, err)
		}
		a.Loc = ArgConstant
		a.Const = v
	default:
		return parseMemory(op, a)
	}
	return nil
}

// splitAArch64 splits an AArch64 argument string at the spaces outside
// brackets: "8@[x22, 20]" is one operand.
func splitAArch64(s string) []string {
	var fields []string
	depth, start := 0, -1
	for i := 0; i <= len(s); i++ {
		if i == len(s) || (s[i] == ' ' || s[i] == '\t') && depth == 0 {
			if start >= 0 {
				fields = append(fields, s[start:i])
				start = -1
			}
			continue
		}
		switch s[i] {
		case '[':
			depth++
		case ']':
			depth--
		}
		if start < 0 {
			start = i
		}
	}
	return fields
}

// aarch64Operand parses an AArch64 operand into a.
func aarch64Operand(op string, a *Arg) error {
	if inner, ok := strings.CutPrefix(op, "["); ok {
		inner, ok = strings.CutSuffix(inner, "]")
		if !ok {
			return fmt.Errorf("memory operand %q has no closing ']'", op)
		}
		baseText, dispText, hasDisp := strings.Cut(inner, ",")
		base, ok := aarch64Registers()[strings.TrimSpace(baseText)]
		if !ok || base.Width != 8 {
			return fmt.Errorf("memory operand %q: base %q is not a 64-bit register", op, strings.TrimSpace(baseText))
		}
		if hasDisp {
			d, err := parseInt(strings.TrimPrefix(strings.TrimSpace(dispText), "#"))
			if err != nil {
				return fmt.Errorf("memory operand %q: displacement: %w", op, err)
			}
			a.Disp = d
		}
		a.Loc = ArgMemory
		a.Reg = base
		return nil
	}
	if r, ok := aarch64Registers()[op]; ok {
		a.Loc = ArgRegister
		a.Reg = r
		return nil
	}
	v, err := parseInt(strings.TrimPrefix(op, "#"))
	if err != nil {
		return fmt.Errorf("operand %q is not a register, immediate or memory reference", op)
	}
	a.Loc = ArgConstant
	a.Const = v
	return nil
}

// parseMemory parses `DISP(%base[,%index[,scale]])` and the %rip-relative
// `SYMEXPR(%rip)` into a.
func parseMemory(op string, a *Arg) error {
	open := strings.IndexByte(op, '(')
	if open < 0 || !strings.HasSuffix(op, ")") {
		return fmt.Errorf("operand %q is not a register, immediate or memory reference", op)
	}
	dispText, inner := op[:open], op[open+1:len(op)-1]
	parts := strings.Split(inner, ",")
	if len(parts) > 3 {
		return fmt.Errorf("memory operand %q has too many parts", op)
	}
	base, err := addressRegister(parts[0], op)
	if err != nil {
		return err
	}
	if base.Name == "rip" {
		if len(parts) != 1 {
			return fmt.Errorf("memory operand %q: %%rip takes no index", op)
		}
		sym, disp, err := parseSymbolExpr(dispText)
		if err != nil {
			return fmt.Errorf("memory operand %q: %w", op, err)
		}
		if sym == "" {
			return fmt.Errorf("memory operand %q: %%rip-relative operand without a symbol", op)
		}
		a.Loc = ArgRIPRelative
		a.Reg = base
		a.Symbol = sym
		a.Disp = disp
		return nil
	}
	if dispText != "" {
		a.Disp, err = parseInt(dispText)
		if err != nil {
			return fmt.Errorf("memory operand %q: displacement: %w", op, err)
		}
	}
	a.Loc = ArgMemory
	a.Reg = base
	if len(parts) == 1 {
		return nil
	}
	a.Index, err = addressRegister(parts[1], op)
	if err != nil {
		return err
	}
	if a.Index.Name == "rip" || a.Index.Name == "rsp" {
		return fmt.Errorf("memory operand %q: %%%s cannot be an index", op, a.Index.Name)
	}
	a.Scale = 1
	if len(parts) == 3 {
		switch parts[2] {
		case "1", "2", "4", "8":
			a.Scale = int(parts[2][0] - '0')
		default:
			return fmt.Errorf("memory operand %q: scale %q is not 1, 2, 4 or 8", op, parts[2])
		}
	}
	return nil
}

// addressRegister parses a base or index register of a memory operand:
// a full 64-bit register.
func addressRegister(s, op string) (Register, error) {
	if !strings.HasPrefix(s, "%") {
		return Register{}, fmt.Errorf("memory operand %q: %q is not a register", op, s)
	}
	r, err := register(s[1:])
	if err != nil {
		return r, fmt.Errorf("memory operand %q: %w", op, err)
	}
	if r.Width != 8 {
		return r, fmt.Errorf("memory operand %q: address register %%%s is not 64-bit", op, r.Name)
	}
	return r, nil
}

func register(name string) (Register, error) {
	r, ok := registers()[name]
	if !ok {
		return r, fmt.Errorf("unknown register %%%s", name)
	}
	return r, nil
}

// parseSymbolExpr parses the displacement of a %rip operand: a symbol and
// integer terms joined by + or -, such as "sym", "sym+16", "16+sym",
// "sym-8".
func parseSymbolExpr(s string) (sym string, disp int64, err error) {
	if s == "" {
		return "", 0, fmt.Errorf("empty displacement")
	}
	i := 0
	for i < len(s) {
		neg := false
		if s[i] == '+' || s[i] == '-' {
			neg = s[i] == '-'
			i++
		} else if i > 0 {
			return "", 0, fmt.Errorf("displacement %q: expected + or - at %q", s, s[i:])
		}
		j := i
		for j < len(s) && s[j] != '+' && s[j] != '-' {
			j++
		}
		term := s[i:j]
		i = j
		if term == "" {
			return "", 0, fmt.Errorf("displacement %q has an empty term", s)
		}
		if term[0] >= '0' && term[0] <= '9' {
			v, err := parseInt(term)
			if err != nil {
				return "", 0, fmt.Errorf("displacement %q: %w", s, err)
			}
			if neg {
				v = -v
			}
			disp += v
			continue
		}
		if !isSymbol(term) {
			return "", 0, fmt.Errorf("displacement %q: %q is not a symbol", s, term)
		}
		if neg || sym != "" {
			return "", 0, fmt.Errorf("displacement %q: only one added symbol is supported", s)
		}
		sym = term
	}
	return sym, disp, nil
}

func isSymbol(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		letter := c == '_' || c == '.' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
		if !letter && !(i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return s != ""
}

// parseInt parses a decimal or 0x-prefixed hexadecimal integer with an
// optional sign. Immediates such as $0xffffffffffffffff that only fit
// unsigned are kept as their two's-complement bits.
func parseInt(s string) (int64, error) {
	v, err := strconv.ParseInt(s, 0, 64)
	if err == nil {
		return v, nil
	}
	u, uerr := strconv.ParseUint(s, 0, 64)
	if uerr == nil {
		return int64(u), nil
	}
	return 0, fmt.Errorf("bad integer %q", s)
}
