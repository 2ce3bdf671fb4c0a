package lang

import (
	"strings"
	"testing"
)

// isStackMode reports whether name is one of ustack()'s stack modes.
func isStackMode(name string) bool { return lookupBuiltin(classStackMode, name) != BuiltinInvalid }

// TestBuiltinTable checks every row of the builtins table: a name that
// looks up to its own id, and columns that agree with its class.
func TestBuiltinTable(t *testing.T) {
	if got := builtins[BuiltinInvalid]; got.name != "" || got.class != 0 {
		t.Errorf("BuiltinInvalid has a row: %+v", got)
	}
	for id := BuiltinInvalid + 1; id < numBuiltins; id++ {
		b := &builtins[id]
		if b.name == "" || b.class == 0 {
			t.Errorf("%d: no row in the builtins table", id)
			continue
		}
		name := b.name
		if b.numbered {
			name += "3"
		}
		if got := lookupBuiltin(b.class, name); got != id {
			t.Errorf("lookup of %s in class %d = %v, want %v", name, b.class, got, id)
		}
		if (b.probes == 0) != (b.probeMsg == "") {
			t.Errorf("%v: probes %b with message %q", id, b.probes, b.probeMsg)
		}
		isFunc := b.class == classFunc
		switch {
		case b.class == classVar && b.support == supported && b.typ.Kind == KindNone:
			t.Errorf("%v: a supported variable without a type", id)
		case !isFunc && (b.min != 0 || b.max != 0 || b.void || b.agg != KindNone || b.unsafe || b.result.Kind != KindNone || b.args != nil):
			t.Errorf("%v: function columns on a %d", id, b.class)
		case isFunc && b.typ.Kind != KindNone:
			t.Errorf("%v: a function with a variable's type", id)
		case isFunc && b.support == supported && (b.min < 0 || b.max >= 0 && (b.max < b.min || len(b.args) > max(b.max, b.newerMax))):
			t.Errorf("%v: arity %d..%d", id, b.min, b.max)
		case b.newerMax != 0 && (b.max < 0 || b.newerMax <= b.max):
			t.Errorf("%v: newer arity %d not above %d", id, b.newerMax, b.max)
		case isFunc && (b.agg != KindNone && (b.void || b.result.Kind != KindNone) || b.void && b.result.Kind != KindNone):
			t.Errorf("%v: more than one of aggregation, void and result", id)
		}
		if (b.agg != KindNone) != (id.Aggregation() != KindNone) || b.agg != KindNone && !(Type{Kind: b.agg}).IsAggregation() {
			t.Errorf("%v: aggregation %v, Aggregation() %v", id, b.agg, id.Aggregation())
		}
		if got := id.String(); strings.TrimSuffix(got, "N") != b.name {
			t.Errorf("%v.String() = %q", id, got)
		}
	}
	if got := BuiltinInvalid.String(); got != "BuiltinID(0)" {
		t.Errorf("BuiltinInvalid.String() = %q", got)
	}
	if got := len(Builtins()); got == 0 || got >= int(numBuiltins) {
		t.Errorf("Builtins() has %d of %d", got, numBuiltins)
	}
}

// TestBuiltinLookup checks lookups by name: the namespaces of variables,
// functions and stack modes, and the argN family.
func TestBuiltinLookup(t *testing.T) {
	for _, tt := range []struct {
		name       string
		vr, fn, md BuiltinID
	}{
		{"pid", VarPid, BuiltinInvalid, BuiltinInvalid},
		{"ustack", VarUstack, FuncUstack, BuiltinInvalid},
		{"kstack", VarKstack, FuncKstack, BuiltinInvalid},
		{"printf", BuiltinInvalid, FuncPrintf, BuiltinInvalid},
		{"perf", BuiltinInvalid, BuiltinInvalid, ModePerf},
		{"arg0", VarArg, BuiltinInvalid, BuiltinInvalid},
		{"arg17", VarArg, BuiltinInvalid, BuiltinInvalid},
		{"arg01", BuiltinInvalid, BuiltinInvalid, BuiltinInvalid},
		{"arg", BuiltinInvalid, BuiltinInvalid, BuiltinInvalid},
		{"args", VarArgs, BuiltinInvalid, BuiltinInvalid},
		{"sarg2", VarSarg, BuiltinInvalid, BuiltinInvalid},
		{"sarg10", BuiltinInvalid, BuiltinInvalid, BuiltinInvalid},
		{"nothing", BuiltinInvalid, BuiltinInvalid, BuiltinInvalid},
	} {
		if got := LookupVar(tt.name); got != tt.vr {
			t.Errorf("LookupVar(%q) = %v, want %v", tt.name, got, tt.vr)
		}
		if got := LookupFunc(tt.name); got != tt.fn {
			t.Errorf("LookupFunc(%q) = %v, want %v", tt.name, got, tt.fn)
		}
		if got := lookupBuiltin(classStackMode, tt.name); got != tt.md {
			t.Errorf("stack mode %q = %v, want %v", tt.name, got, tt.md)
		}
	}
	for _, b := range []*Builtin{{Name: "arg12", ID: VarArg}, {Name: "sarg7", ID: VarSarg}, {Name: "pid", ID: VarPid}} {
		want := map[string]int{"arg12": 12, "sarg7": 7, "pid": -1}[b.Name]
		if got := b.ArgIndex(); got != want {
			t.Errorf("%s's ArgIndex() = %d, want %d", b.Name, got, want)
		}
	}
}

// TestLexClass checks the classes bpftrace 0.17's lexer gives names, as
// its syntax errors show them ("unexpected builtin").
func TestLexClass(t *testing.T) {
	classes := map[string]string{
		"builtin": "pid tid uid gid nsecs elapsed numaid cpu curtask rand ctx comm retval func probe " +
			"username cgroup cpid args arg0 arg9 sarg0 sarg9",
		"call_builtin": "kstack ustack",
		"stack_mode":   "perf bpftrace",
		"call": "avg bswap buf cat cgroup_path cgroupid clear count debugf delete exit hist join kaddr " +
			"kptr ksym lhist macaddr max min ntop override path print printf reg signal sizeof " +
			"skboutput stats str strcontains strerror strftime strncmp sum system time uaddr unwatch " +
			"uptr usym zero",
		"identifier": "stack arg10 sarg10 arg sarg x uint32 BEGIN",
	}
	for want, names := range classes {
		for _, name := range strings.Fields(names) {
			if got := lexClass(name); got != want {
				t.Errorf("lexClass(%q) = %q, want %q", name, got, want)
			}
		}
	}
}
