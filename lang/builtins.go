package lang

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// BuiltinID identifies one of the language's builtins: a builtin variable
// (pid, argN), a function (printf, count) or one of ustack()'s stack modes
// (perf). The checker resolves each name once and records the id on the
// node (Builtin.ID, Call.ID); later passes switch on the id, never on the
// name. BuiltinInvalid, the zero value, is a name that is no builtin.
//
// Adding a builtin means adding its id here, its row in the builtins
// table, its checks in the checker's switch when the table's columns do
// not say enough, and its lowering in codegen.
type BuiltinID int

// The builtins, each indexing its row in the builtins table.
const (
	BuiltinInvalid BuiltinID = iota

	// Builtin variables.
	VarPid
	VarTid
	VarUID
	VarGID
	VarCPU
	VarNsecs
	VarElapsed
	VarRand
	VarCgroup
	VarNumaid
	VarRetval
	VarCpid
	VarComm
	VarProbe
	VarFunc
	VarUsername
	VarUstack
	// VarArg is argN for any N; Builtin.ArgIndex returns N.
	VarArg
	VarKstack
	VarStack
	VarCurtask
	VarCtx
	VarArgs
	VarSarg
	VarJiffies
	VarNcpus
	VarUsermode
	VarProbetype

	// ustack()'s stack modes.
	ModePerf
	ModeBpftrace

	// Functions.
	FuncCount
	FuncSum
	FuncAvg
	FuncMin
	FuncMax
	FuncStats
	FuncHist
	FuncLhist
	FuncTseries
	FuncPrintf
	FuncPrint
	FuncExit
	FuncClear
	FuncZero
	FuncDelete
	FuncTime
	FuncJoin
	FuncCat
	FuncSystem
	FuncSignal
	FuncOverride
	FuncStr
	FuncBuf
	FuncHash256
	FuncStrftime
	FuncUstack
	FuncUsym
	FuncUaddr
	FuncNtop
	FuncPton
	FuncKaddr
	FuncReg
	FuncSizeof
	FuncStrncmp
	FuncUptr
	FuncKptr
	FuncBswap
	FuncStrcontains
	FuncStrerror
	FuncKsym
	FuncKstack
	FuncPath
	FuncMacaddr
	FuncCgroupPath
	FuncSkboutput
	FuncCgroupid
	FuncDebugf
	FuncUnwatch
	FuncHasKey
	FuncSignalName
	FuncSyscallName
	FuncErrorf
	FuncWarnf
	FuncStrlen
	FuncNsecs
	FuncLen

	numBuiltins
)

// builtinClass is the namespace a builtin's name lives in.
type builtinClass int

const (
	classVar builtinClass = iota + 1
	classFunc
	classStackMode
)

// builtinSupport says what gotrace does with a builtin bpftrace 0.17 has.
type builtinSupport int

const (
	supported builtinSupport = iota
	// notSupported builtins need a kernel feature gotrace does without
	// (kprobes, the kernel's BTF, tracefs): the checker says "not
	// supported by gotrace".
	notSupported
)

// builtin is one row of the builtins table.
type builtin struct {
	name    string
	class   builtinClass
	support builtinSupport
	// numbered names are name followed by a number (argN, sargN);
	// oneDigit ones take one digit (sarg0 to sarg9), as bpftrace 0.17's
	// lexer does.
	numbered, oneDigit bool
	// unlexed names are plain identifiers to bpftrace 0.17's lexer
	// (stack), which its syntax errors show.
	unlexed bool

	// typ is a variable's type.
	typ Type

	// probes are the probe kinds the builtin may be used in, all when
	// zero; probeMsg is bpftrace's message for the others, with the
	// builtin's name as %[1]s, the probe kind's as %[2]s and its probe type's
	// (ProbeKind.TypeName: "special" for BEGIN and END) as %[3]s.
	probes   probeKindSet
	probeMsg string

	// A function takes from min to max arguments, any number from min
	// when max < 0. varargs functions word their arity errors as a range
	// ("at least", "up to") even when min == max, as bpftrace does for
	// strftime().
	min, max int
	varargs  bool
	// newerMax, when above max, is the most arguments a later bpftrace
	// takes (hist(v, bits)): calls with up to newerMax are accepted, and
	// the arity messages stay 0.17's.
	newerMax int
	// void functions produce no value: they are statements.
	void bool
	// agg is the aggregation kind of count(), sum() ...; KindNone
	// otherwise.
	agg Kind
	// unsafe functions need --unsafe.
	unsafe bool
	// args are the kinds of a function's leading arguments, for the
	// checker's generic checks (tableArgs); nil for the functions it
	// checks one by one.
	args []argKind
	// result is a function's type whatever its arguments; KindNone when
	// the checker computes it from them (str, buf, ustack, uaddr, uptr,
	// kptr, bswap).
	result Type
}

// argKind is what a function's argument must be.
type argKind int

const (
	// argAny is any value.
	argAny argKind = iota
	// argInt is an integer or a pointer.
	argInt
	// argString is a string.
	argString
	// argLiteral is a string literal.
	argLiteral
	// argConst is a constant integer.
	argConst
)

// probeKindSet is a set of probe kinds.
type probeKindSet uint32

// allows reports whether s, a builtin's probes, allows kind k.
func (s probeKindSet) allows(k ProbeKind) bool { return s == 0 || s&(1<<k) != 0 }

// allProbes is every probe kind.
const allProbes = ^probeKindSet(0)

// Probe restrictions that several builtins share. A set is written as
// 1<<kind | ..., a constant, so that the builtins table is data in the
// binary: a call in it (a function building the set) made the compiler
// build the whole table in lang's initialiser, 20 KB of code run at every
// start of gotrace (issue 24).
const (
	// userProbes are the probes that run in a user process: uaddr() and
	// reg() need one.
	userProbes = allProbes &^ (1<<ProbeBegin | 1<<ProbeEnd | 1<<ProbeInterval | 1<<ProbeProfile)
	// userProbeMsg is bpftrace's message for the others.
	userProbeMsg = `%[1]s can not be used with "%[2]s" probes`
)

// The argument kinds of the functions of one argument.
var (
	intArgs     = []argKind{argInt}
	literalArgs = []argKind{argLiteral}
)

// builtins is the table of builtins, indexed by id.
var builtins = [numBuiltins]builtin{
	VarPid:      {name: "pid", class: classVar, typ: Uint64},
	VarTid:      {name: "tid", class: classVar, typ: Uint64},
	VarUID:      {name: "uid", class: classVar, typ: Uint64},
	VarGID:      {name: "gid", class: classVar, typ: Uint64},
	VarCPU:      {name: "cpu", class: classVar, typ: Uint64},
	VarNsecs:    {name: "nsecs", class: classVar, typ: Uint64},
	VarElapsed:  {name: "elapsed", class: classVar, typ: Uint64},
	VarRand:     {name: "rand", class: classVar, typ: Uint64},
	VarCgroup:   {name: "cgroup", class: classVar, typ: Uint64},
	VarNumaid:   {name: "numaid", class: classVar, typ: Uint64},
	VarCpid:     {name: "cpid", class: classVar, typ: Type{Kind: KindInt, Size: 4}},
	VarComm:     {name: "comm", class: classVar, typ: Type{Kind: KindString, Size: 16}},
	VarProbe:    {name: "probe", class: classVar, typ: Type{Kind: KindProbe}},
	VarUsername: {name: "username", class: classVar, typ: Type{Kind: KindUsername}},
	VarUstack:   {name: "ustack", class: classVar, typ: Type{Kind: KindStack, StackFrames: DefaultStackFrames}},
	VarRetval: {name: "retval", class: classVar, typ: Uint64,
		probes:   1<<ProbeUretprobe | 1<<ProbeKretprobe | 1<<ProbeKretfunc,
		probeMsg: "The %[1]s builtin can only be used with 'kretprobe' and 'uretprobe' and 'kfunc' probes"},
	VarFunc: {name: "func", class: classVar, typ: Type{Kind: KindUsym},
		probes:   1<<ProbeUprobe | 1<<ProbeUretprobe | 1<<ProbeKprobe | 1<<ProbeKretprobe | 1<<ProbeKfunc | 1<<ProbeKretfunc,
		probeMsg: "The %[1]s builtin can not be used with '%[2]s' probes"},
	// USDT argN is unsigned as bpftrace 0.17 types it; codegen reads it
	// with the note's size and sign and widens.
	VarArg: {name: "arg", numbered: true, class: classVar, typ: Uint64,
		probes:   1<<ProbeUSDT | 1<<ProbeUprobe | 1<<ProbeKprobe,
		probeMsg: "The %[1]s builtin can only be used with 'kprobes', 'uprobes' and 'usdt' probes"},
	VarKstack:  {name: "kstack", class: classVar, typ: Type{Kind: KindStack, StackFrames: DefaultStackFrames, StackKernel: true}},
	VarStack:   {name: "stack", class: classVar, support: notSupported, unlexed: true},
	VarCurtask: {name: "curtask", class: classVar, typ: Uint64},
	VarCtx:     {name: "ctx", class: classVar, support: notSupported},
	// args is typed per probe from its tracepoints' records (argsType);
	// void * stands for a record Resolve did not find.
	VarArgs: {name: "args", class: classVar, typ: Type{Kind: KindPointer, Size: 8},
		probes:   1<<ProbeTracepoint | 1<<ProbeKfunc | 1<<ProbeKretfunc | 1<<ProbeUprobe,
		probeMsg: "The %[1]s builtin can only be used with tracepoint/kfunc/uprobeprobes (%[3]s used here)"},
	// sargN is the Nth 8-byte argument on the stack of the probed
	// function (above its return address on x86-64).
	VarSarg: {name: "sarg", numbered: true, oneDigit: true, class: classVar, typ: Uint64,
		probes:   1<<ProbeUprobe | 1<<ProbeKprobe,
		probeMsg: "The %[1]s builtin can only be used with 'kprobes' and 'uprobes' probes"},
	// jiffies is the kernel's jiffies counter (bpftrace 0.20).
	VarJiffies: {name: "jiffies", class: classVar, typ: Uint64},
	// ncpus is the number of possible CPUs, a constant of the run
	// (bpftrace 0.24).
	VarNcpus: {name: "ncpus", class: classVar, typ: Uint64},
	// usermode is 1 when the probe interrupted user-space code, else 0
	// (bpftrace 0.24).
	VarUsermode: {name: "usermode", class: classVar, typ: Type{Kind: KindInt, Size: 1}},
	// probetype is the kind of the attach point that fired, by name:
	// "special" for BEGIN and END (bpftrace 0.24).
	VarProbetype: {name: "probetype", class: classVar, typ: Type{Kind: KindString, Size: 16}},

	ModePerf:     {name: "perf", class: classStackMode},
	ModeBpftrace: {name: "bpftrace", class: classStackMode},

	FuncCount: {name: "count", class: classFunc, min: 0, max: 0, agg: KindCount},
	FuncSum:   {name: "sum", class: classFunc, min: 1, max: 1, agg: KindSum, args: intArgs},
	FuncAvg:   {name: "avg", class: classFunc, min: 1, max: 1, agg: KindAvg, args: intArgs},
	FuncMin:   {name: "min", class: classFunc, min: 1, max: 1, agg: KindMin, args: intArgs},
	FuncMax:   {name: "max", class: classFunc, min: 1, max: 1, agg: KindMax, args: intArgs},
	FuncStats: {name: "stats", class: classFunc, min: 1, max: 1, agg: KindStats, args: intArgs},
	// hist(v, bits) splits each power of two into 2^bits buckets
	// (bpftrace 0.20).
	FuncHist:  {name: "hist", class: classFunc, min: 1, max: 1, newerMax: 2, agg: KindHist, args: []argKind{argInt, argConst}},
	FuncLhist: {name: "lhist", class: classFunc, min: 4, max: 4, agg: KindLhist},
	// tseries(v, interval, n[, agg]) keeps v by interval of time, the
	// last n intervals (bpftrace 0.24).
	FuncTseries: {name: "tseries", class: classFunc, min: 3, max: 4, agg: KindTseries},
	FuncPrintf:  {name: "printf", class: classFunc, min: 1, max: -1, void: true},
	FuncPrint:   {name: "print", class: classFunc, min: 1, max: 3, void: true},
	FuncExit:    {name: "exit", class: classFunc, min: 0, max: 1, void: true, args: intArgs},
	FuncClear:   {name: "clear", class: classFunc, min: 1, max: 1, void: true},
	FuncZero:    {name: "zero", class: classFunc, min: 1, max: 1, void: true},
	// delete is a statement in bpftrace 0.17 and a bool (whether the
	// element was there) since 0.22; delete(@m, k...) is checked as
	// delete(@m[k...]), one argument (elementArgs).
	FuncDelete: {name: "delete", class: classFunc, min: 1, max: 1, result: Bool},
	FuncTime:   {name: "time", class: classFunc, min: 0, max: 1, void: true, args: literalArgs},
	FuncJoin:   {name: "join", class: classFunc, min: 1, max: 2, void: true},
	FuncCat:    {name: "cat", class: classFunc, min: 1, max: -1, void: true},
	FuncSystem: {name: "system", class: classFunc, min: 1, max: -1, void: true, unsafe: true},
	FuncSignal: {name: "signal", class: classFunc, min: 1, max: 1, void: true, unsafe: true,
		probes:   allProbes &^ (1<<ProbeBegin | 1<<ProbeEnd | 1<<ProbeInterval),
		probeMsg: userProbeMsg},
	FuncOverride: {name: "override", class: classFunc, min: 1, max: 1, void: true, unsafe: true,
		probes: 1 << ProbeKprobe, args: intArgs,
		probeMsg: "%[1]s can only be used with kprobes."},
	FuncStr: {name: "str", class: classFunc, min: 1, max: 2},
	FuncBuf: {name: "buf", class: classFunc, min: 1, max: 2},
	// hash256(p) is gotrace's: the 32 bytes at p as a Bitcoin hash.
	FuncHash256: {name: "hash256", class: classFunc, min: 1, max: 1, args: intArgs, result: Hash256},
	FuncStrftime: {name: "strftime", class: classFunc, min: 2, max: 2, varargs: true, result: Type{Kind: KindTimestamp},
		args: []argKind{argLiteral, argInt}},
	FuncUstack: {name: "ustack", class: classFunc, min: 0, max: 2},
	FuncUsym:   {name: "usym", class: classFunc, min: 1, max: 1, result: Type{Kind: KindUsym}},
	FuncUaddr: {name: "uaddr", class: classFunc, min: 1, max: 1, args: literalArgs,
		probes: userProbes, probeMsg: userProbeMsg},
	FuncNtop: {name: "ntop", class: classFunc, min: 1, max: 2, result: Type{Kind: KindInet}},
	// pton(s) is the address a literal IPv4 or IPv6 address names, in
	// network order; gotrace has it as ntop()'s argument.
	FuncPton:  {name: "pton", class: classFunc, min: 1, max: 1},
	FuncKaddr: {name: "kaddr", class: classFunc, min: 1, max: 1, result: Uint64, args: literalArgs},
	FuncReg: {name: "reg", class: classFunc, min: 1, max: 1, result: Uint64, args: literalArgs,
		probes: userProbes, probeMsg: userProbeMsg},
	FuncSizeof: {name: "sizeof", class: classFunc, min: 1, max: 1, result: Uint64},
	FuncStrncmp: {name: "strncmp", class: classFunc, min: 3, max: 3, result: Uint64,
		args: []argKind{argString, argString, argConst}},
	FuncUptr:        {name: "uptr", class: classFunc, min: 1, max: 1},
	FuncKptr:        {name: "kptr", class: classFunc, min: 1, max: 1},
	FuncBswap:       {name: "bswap", class: classFunc, min: 1, max: 1, args: intArgs},
	FuncStrcontains: {name: "strcontains", class: classFunc, min: 2, max: 2, result: Uint64, args: []argKind{argString, argString}},
	FuncStrerror:    {name: "strerror", class: classFunc, min: 1, max: 1, result: Type{Kind: KindErrno}, args: intArgs},
	FuncKsym:        {name: "ksym", class: classFunc, min: 1, max: 1, result: Type{Kind: KindKsym}},
	FuncKstack:      {name: "kstack", class: classFunc, min: 0, max: 2},
	FuncPath:        {name: "path", class: classFunc, support: notSupported},
	FuncMacaddr:     {name: "macaddr", class: classFunc, min: 1, max: 1, result: Type{Kind: KindMacaddr}},
	FuncCgroupPath:  {name: "cgroup_path", class: classFunc, min: 1, max: 2, result: Type{Kind: KindCgroupPath}, args: []argKind{argInt, argString}},
	FuncSkboutput:   {name: "skboutput", class: classFunc, support: notSupported},
	FuncCgroupid:    {name: "cgroupid", class: classFunc, min: 1, max: 1, result: Uint64, args: literalArgs},
	FuncDebugf:      {name: "debugf", class: classFunc, support: notSupported},
	FuncUnwatch:     {name: "unwatch", class: classFunc, support: notSupported},
	// has_key(@m, k...) is whether @m[k...] exists (bpftrace 0.22),
	// checked as has_key(@m[k...]) (elementArgs).
	FuncHasKey: {name: "has_key", class: classFunc, min: 1, max: 1, result: Bool},
	// signal_name(n) is the C library's description of signal n
	// (bpftrace 0.26).
	// errorf and warnf print a formatted message as a run-time error or
	// warning at the call's position (bpftrace 0.24, 0.25).
	FuncErrorf: {name: "errorf", class: classFunc, min: 1, max: -1, void: true},
	FuncWarnf:  {name: "warnf", class: classFunc, min: 1, max: -1, void: true},
	// strlen(s) is the number of bytes before the string's NUL (bpftrace
	// 0.24's standard library).
	// nsecs(clock) reads the clock named monotonic, boot or tai
	// (bpftrace 0.19); 0.17's lexer knows only the variable nsecs.
	FuncNsecs:      {name: "nsecs", class: classFunc, min: 0, max: 1, result: Uint64, unlexed: true},
	FuncStrlen:     {name: "strlen", class: classFunc, min: 1, max: 1, result: Uint64, args: []argKind{argString}},
	FuncSignalName: {name: "signal_name", class: classFunc, min: 1, max: 1, result: Type{Kind: KindSignal}, args: intArgs},
	// syscall_name(n) is the name of system call n of the architecture
	// gotrace is built for (bpftrace 0.25).
	FuncSyscallName: {name: "syscall_name", class: classFunc, min: 1, max: 1, result: Type{Kind: KindSyscall}, args: intArgs},

	// len(@m) is the number of elements of map @m (bpftrace 0.21), len(s)
	// the number of frames of stack s (0.23).
	FuncLen: {name: "len", class: classFunc, min: 1, max: 1, result: Int64},
}

// String returns the builtin's name ("argN" for VarArg).
func (id BuiltinID) String() string {
	if id <= BuiltinInvalid || id >= numBuiltins {
		return fmt.Sprintf("BuiltinID(%d)", int(id))
	}
	if b := &builtins[id]; b.numbered {
		return b.name + "N"
	}
	return builtins[id].name
}

// Aggregation returns the aggregation kind an aggregation function
// (count, sum ...) stores in its map, or KindNone.
func (id BuiltinID) Aggregation() Kind {
	if id <= BuiltinInvalid || id >= numBuiltins {
		return KindNone
	}
	return builtins[id].agg
}

// builtinKey names a builtin within its class.
type builtinKey struct {
	class builtinClass
	name  string
}

// builtinsByName indexes the builtins with plain names, built when a
// script first names one rather than at every start of gotrace.
var builtinsByName = sync.OnceValue(func() map[builtinKey]BuiltinID {
	m := map[builtinKey]BuiltinID{}
	for id := BuiltinInvalid + 1; id < numBuiltins; id++ {
		if b := &builtins[id]; !b.numbered {
			m[builtinKey{b.class, b.name}] = id
		}
	}
	return m
})

// lookupBuiltin returns the builtin of class called name, or
// BuiltinInvalid.
func lookupBuiltin(class builtinClass, name string) BuiltinID {
	if id, ok := builtinsByName()[builtinKey{class, name}]; ok {
		return id
	}
	for id := BuiltinInvalid + 1; id < numBuiltins; id++ {
		if b := &builtins[id]; b.numbered && b.class == class && numberAfter(name, b.name) >= 0 && (!b.oneDigit || len(name) == len(b.name)+1) {
			return id
		}
	}
	return BuiltinInvalid
}

// LookupVar returns the builtin variable called name (VarArg for any
// argN), or BuiltinInvalid. __builtin_NAME is NAME, as bpftrace 0.24's
// standard library names its builtins.
func LookupVar(name string) BuiltinID {
	return lookupBuiltin(classVar, strings.TrimPrefix(name, builtinPrefix))
}

// IsBuiltinVar says whether name is a builtin variable (LookupVar finds
// it): what a tool that reads the tracer's messages, not its programs,
// needs to know of the table.
func IsBuiltinVar(name string) bool { return LookupVar(name) != BuiltinInvalid }

// builtinPrefix starts the standard library's names of the builtin
// variables.
const builtinPrefix = "__builtin_"

// LookupFunc returns the function called name, or BuiltinInvalid.
func LookupFunc(name string) BuiltinID { return lookupBuiltin(classFunc, name) }

// Builtins returns the builtins the checker accepts, in id order: the
// ones codegen lowers (stack modes within ustack()), or refuses as
// unsupported (kaddr() and override(), which need the kernel's symbols
// and kprobes).
func Builtins() []BuiltinID {
	var ids []BuiltinID
	for id := BuiltinInvalid + 1; id < numBuiltins; id++ {
		if builtins[id].support == supported {
			ids = append(ids, id)
		}
	}
	return ids
}

// supportedNames lists the supported builtins of class with plain names,
// sorted: the candidates of "did you mean" hints.
func supportedNames(class builtinClass) []string {
	var names []string
	for id := BuiltinInvalid + 1; id < numBuiltins; id++ {
		if b := &builtins[id]; b.class == class && b.support == supported && !b.numbered {
			names = append(names, b.name)
		}
	}
	slices.Sort(names)
	return names
}

// lexClass says how bpftrace 0.17's lexer classes an identifier, which
// its syntax errors show: "builtin" for builtin variables, "call" for
// function names (whether or not a "(" follows), "call_builtin" for names
// that are both (kstack, ustack), "stack_mode" for ustack's modes, and
// "identifier" for the rest. Its numbered builtins take one digit (arg0 to
// arg9).
func lexClass(name string) string {
	var isVar, isFunc bool
	for id := BuiltinInvalid + 1; id < numBuiltins; id++ {
		b := &builtins[id]
		match := b.name == name
		if b.numbered {
			match = len(name) == len(b.name)+1 && strings.HasPrefix(name, b.name) && '0' <= name[len(b.name)] && name[len(b.name)] <= '9'
		}
		if !match || b.unlexed {
			continue
		}
		switch b.class {
		case classVar:
			isVar = true
		case classFunc:
			isFunc = true
		case classStackMode:
			return "stack_mode"
		}
	}
	switch {
	case isVar && isFunc:
		return "call_builtin"
	case isVar:
		return "builtin"
	case isFunc:
		return "call"
	}
	return "identifier"
}

// numberAfter returns N for a name that is prefix followed by a decimal
// number N without leading zeros, or -1.
func numberAfter(name, prefix string) int {
	digits, ok := strings.CutPrefix(name, prefix)
	if !ok || digits == "" || len(digits) > 1 && digits[0] == '0' {
		return -1
	}
	n, err := strconv.Atoi(digits)
	if err != nil || n < 0 {
		return -1
	}
	return n
}

// ArgIndex returns N for an argN or sargN builtin, or -1.
func (e *Builtin) ArgIndex() int {
	if e.ID <= BuiltinInvalid || e.ID >= numBuiltins || !builtins[e.ID].numbered {
		return -1
	}
	return numberAfter(strings.TrimPrefix(e.Name, builtinPrefix), builtins[e.ID].name)
}

// arityError returns bpftrace's message for a call of name with n
// arguments that the function b does not allow, or "".
func arityError(name string, b *builtin, n int) string {
	switch {
	case n >= b.min && n <= b.newerMax:
		return ""
	case b.min == b.max && n != b.min && !b.varargs:
		switch b.min {
		case 0:
			return fmt.Sprintf("%s() requires no arguments (%d provided)", name, n)
		case 1:
			return fmt.Sprintf("%s() requires one argument (%d provided)", name, n)
		}
		return fmt.Sprintf("%s() requires %d arguments (%d provided)", name, b.min, n)
	case n < b.min:
		if b.min == 1 {
			return fmt.Sprintf("%s() requires at least one argument (%d provided)", name, n)
		}
		return fmt.Sprintf("%s() requires at least %d arguments (%d provided)", name, b.min, n)
	case b.max >= 0 && n > b.max:
		if b.max == 1 {
			return fmt.Sprintf("%s() takes up to one argument (%d provided)", name, n)
		}
		return fmt.Sprintf("%s() takes up to %d arguments (%d provided)", name, b.max, n)
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
