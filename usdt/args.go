package usdt

import (
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/gotrace/gotrace/internal/ptregs"
)

// registers maps every x86-64 register name an SDT operand may use to its
// place in struct pt_regs and the width of the named part. It is built
// when the first operand is parsed, not at every start of gotrace.
var registers = sync.OnceValue(buildRegisters)

func buildRegisters() map[string]Register {
	regs := make(map[string]Register)
	add := func(name string, off, width int) {
		if name != "" {
			regs[name] = Register{Name: name, PtRegsOffset: off, Width: width}
		}
	}
	for _, r := range ptregs.Registers {
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
	fields := strings.Fields(s)
	args := make([]Arg, 0, len(fields))
	for _, f := range fields {
		a, err := ParseArg(f)
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
	a, err := parseArg(s)
	if err != nil {
		return Arg{}, fmt.Errorf("parse usdt argument %q: %w", s, err)
	}
	return a, nil
}

func parseArg(s string) (Arg, error) {
	var a Arg
	sizeText, op, ok := strings.Cut(s, "@")
	if !ok {
		return a, fmt.Errorf("no '@' between size and operand")
	}
	if strings.HasPrefix(sizeText, "-") {
		a.Signed = true
		sizeText = sizeText[1:]
	}
	switch sizeText {
	case "1", "2", "4", "8":
		a.Size = int(sizeText[0] - '0')
	default:
		return a, fmt.Errorf("size %q is not 1, 2, 4 or 8", sizeText)
	}
	a.Operand = op
	switch {
	case op == "":
		return a, fmt.Errorf("empty operand")
	case op[0] == '%':
		r, err := register(op[1:])
		if err != nil {
			return a, err
		}
		a.Loc = ArgRegister
		a.Reg = r
	case op[0] == '$':
		v, err := parseInt(op[1:])
		if err != nil {
			return a, fmt.Errorf("immediate %q: %w", op, err)
		}
		a.Loc = ArgConstant
		a.Const = v
	default:
		if err := parseMemory(op, &a); err != nil {
			return a, err
		}
	}
	return a, nil
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
