package lang

import (
	"debug/elf"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
)

// builtinVars are the builtin variables gotrace knows, with their types as
// bpftrace 0.17 types them. argN is handled by the checker (its validity
// depends on the probe).
var builtinVars = map[string]Type{
	"pid": Uint64, "tid": Uint64, "uid": Uint64, "gid": Uint64, "cpu": Uint64,
	"nsecs": Uint64, "elapsed": Uint64, "rand": Uint64, "cgroup": Uint64,
	"numaid": Uint64, "retval": Uint64,
	"cpid":     Int(4, false),
	"comm":     String(16),
	"probe":    {Kind: KindProbe},
	"func":     {Kind: KindUsym},
	"username": {Kind: KindUsername},
	"ustack":   {Kind: KindStack, StackFrames: DefaultStackFrames},
}

// unsupportedBuiltins are builtin variables bpftrace 0.17 has that need a
// kernel feature gotrace does without (kprobes, BTF of the kernel,
// tracefs).
var unsupportedBuiltins = map[string]bool{
	"kstack": true, "stack": true, "curtask": true, "ctx": true, "args": true,
}

// argIndex returns N for a builtin named argN, or -1.
func argIndex(name string) int {
	if !strings.HasPrefix(name, "arg") || len(name) == 3 {
		return -1
	}
	digits := name[3:]
	if len(digits) > 1 && digits[0] == '0' {
		return -1
	}
	n, err := strconv.Atoi(digits)
	if err != nil || n < 0 {
		return -1
	}
	return n
}

// funcSig is the arity of a builtin function. max < 0 means any number.
type funcSig struct {
	min, max int
	// void functions produce no value: they are statements.
	void bool
	// agg is the aggregation kind of count(), sum() ...; KindNone otherwise.
	agg Kind
	// unsafe functions need --unsafe.
	unsafe bool
	// varargs functions word their arity errors as a range ("at least",
	// "up to") even when min == max, as bpftrace does for strftime().
	varargs bool
}

// funcs are the functions gotrace implements, with their arities.
var funcs = map[string]funcSig{
	"count":       {min: 0, max: 0, agg: KindCount},
	"sum":         {min: 1, max: 1, agg: KindSum},
	"avg":         {min: 1, max: 1, agg: KindAvg},
	"min":         {min: 1, max: 1, agg: KindMin},
	"max":         {min: 1, max: 1, agg: KindMax},
	"stats":       {min: 1, max: 1, agg: KindStats},
	"hist":        {min: 1, max: 1, agg: KindHist},
	"lhist":       {min: 4, max: 4, agg: KindLhist},
	"printf":      {min: 1, max: -1, void: true},
	"print":       {min: 1, max: 3, void: true},
	"exit":        {min: 0, max: 0, void: true},
	"clear":       {min: 1, max: 1, void: true},
	"zero":        {min: 1, max: 1, void: true},
	"delete":      {min: 1, max: 1, void: true},
	"time":        {min: 0, max: 1, void: true},
	"join":        {min: 1, max: 2, void: true},
	"cat":         {min: 1, max: -1, void: true},
	"system":      {min: 1, max: -1, void: true, unsafe: true},
	"signal":      {min: 1, max: 1, void: true, unsafe: true},
	"override":    {min: 1, max: 1, void: true, unsafe: true},
	"str":         {min: 1, max: 2},
	"buf":         {min: 1, max: 2},
	"strftime":    {min: 2, max: 2, varargs: true},
	"ustack":      {min: 0, max: 2},
	"usym":        {min: 1, max: 1},
	"uaddr":       {min: 1, max: 1},
	"ntop":        {min: 1, max: 2},
	"kaddr":       {min: 1, max: 1},
	"reg":         {min: 1, max: 1},
	"sizeof":      {min: 1, max: 1},
	"strncmp":     {min: 3, max: 3},
	"uptr":        {min: 1, max: 1},
	"kptr":        {min: 1, max: 1},
	"bswap":       {min: 1, max: 1},
	"strcontains": {min: 2, max: 2},
	"strerror":    {min: 1, max: 1},
}

// unsupportedFuncs are functions bpftrace 0.17 has that gotrace does not
// implement (kernel-side features).
var unsupportedFuncs = map[string]bool{
	"ksym": true, "kstack": true, "path": true, "macaddr": true, "cgroup_path": true,
	"skboutput": true, "cgroupid": true, "debugf": true, "unwatch": true,
}

// arityError returns bpftrace's message for a call of name with n
// arguments that sig does not allow, or "".
func arityError(name string, sig funcSig, n int) string {
	switch {
	case sig.min == sig.max && n != sig.min && !sig.varargs:
		switch sig.min {
		case 0:
			return fmt.Sprintf("%s() requires no arguments (%d provided)", name, n)
		case 1:
			return fmt.Sprintf("%s() requires one argument (%d provided)", name, n)
		}
		return fmt.Sprintf("%s() requires %d arguments (%d provided)", name, sig.min, n)
	case n < sig.min:
		if sig.min == 1 {
			return fmt.Sprintf("%s() requires at least one argument (%d provided)", name, n)
		}
		return fmt.Sprintf("%s() requires at least %d arguments (%d provided)", name, sig.min, n)
	case sig.max >= 0 && n > sig.max:
		if sig.max == 1 {
			return fmt.Sprintf("%s() takes up to one argument (%d provided)", name, n)
		}
		return fmt.Sprintf("%s() takes up to %d arguments (%d provided)", name, sig.max, n)
	}
	return ""
}

// ClosestName returns the name in candidates nearest to name by edit
// distance, or "" when none is close enough to be a likely typo. The
// runtime uses it too, for a misspelt probe or function name.
func ClosestName(name string, candidates []string) string {
	best, bestDist := "", 3
	if len(name) <= 3 {
		bestDist = 2
	}
	for _, cand := range candidates {
		if d := editDistance(name, cand); d < bestDist {
			best, bestDist = cand, d
		}
	}
	return best
}

// sortedNames lists the names of a table of builtins in a fixed order, so
// that hints are deterministic.
func sortedNames[V any](table map[string]V) []string {
	return slices.Sorted(maps.Keys(table))
}

// intTypeByName returns the integer type a type name such as uint32
// denotes (in sizeof(uint32)).
func intTypeByName(name string) (Type, bool) {
	signed := true
	rest, ok := strings.CutPrefix(name, "int")
	if !ok {
		rest, ok = strings.CutPrefix(name, "uint")
		signed = false
	}
	if !ok {
		return Type{}, false
	}
	switch rest {
	case "8", "16", "32", "64":
		bits, _ := strconv.Atoi(rest)
		return Int(bits/8, signed), true
	}
	return Type{}, false
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// ErrNoSymbol is returned by ObjectSymbol for a file without the symbol.
var ErrNoSymbol = errors.New("no such data symbol")

// ObjectSymbol returns the address and size of the data symbol (an ELF
// STT_OBJECT) name in the symbol table, or else the dynamic symbol table,
// of the ELF file path: what uaddr() resolves. As in bpftrace 0.17,
// functions and untyped symbols are not data symbols, and the address is
// the symbol's value in the file, not relocated for a PIE's load address.
func ObjectSymbol(path, name string) (addr, size uint64, err error) {
	// Only a regular file: opening a FIFO or a device could block.
	st, err := os.Stat(path)
	if err != nil {
		return 0, 0, fmt.Errorf("resolve symbol %s: %w", name, err)
	}
	if !st.Mode().IsRegular() {
		return 0, 0, fmt.Errorf("resolve symbol %s: %s is not a regular file: %w", name, path, ErrNoSymbol)
	}
	f, err := elf.Open(path)
	if err != nil {
		return 0, 0, fmt.Errorf("resolve symbol %s: %w", name, err)
	}
	defer f.Close()
	for _, read := range []func() ([]elf.Symbol, error){f.Symbols, f.DynamicSymbols} {
		syms, err := read()
		if err != nil {
			continue
		}
		for _, s := range syms {
			if s.Name == name && elf.ST_TYPE(s.Info) == elf.STT_OBJECT && s.Section != elf.SHN_UNDEF {
				return s.Value, s.Size, nil
			}
		}
	}
	return 0, 0, fmt.Errorf("resolve symbol %s in %s: %w", name, path, ErrNoSymbol)
}
