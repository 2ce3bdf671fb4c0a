package lang

import (
	"errors"
	"strings"
	"testing"
)

// fakeTracepoints is a Host that knows two tracepoints, with fields as
// this kernel's format files declare them.
type fakeTracepoints struct{}

func (fakeTracepoints) FindTarget(name string) (string, error) { return "", errors.New("no files") }

func (fakeTracepoints) ObjectSymbol(path, name string) (uint64, uint64, error) {
	return 0, 0, errors.New("no files")
}

var fakeTracepointList = []*Tracepoint{
	{Category: "sched", Name: "sched_process_exec", Fields: []TracepointField{
		{Name: "filename", CType: "char", Offset: 8, Size: 4, DataLoc: true},
		{Name: "pid", CType: "pid_t", Offset: 12, Size: 4, Signed: true},
	}},
	{Category: "sched", Name: "sched_switch", Fields: []TracepointField{
		{Name: "prev_comm", CType: "char", Offset: 8, Size: 16, Signed: true, ArrayLen: 16},
		{Name: "prev_pid", CType: "pid_t", Offset: 24, Size: 4, Signed: true},
		{Name: "prev_state", CType: "long", Offset: 32, Size: 8, Signed: true},
	}},
	{Category: "syscalls", Name: "sys_enter_openat", Fields: []TracepointField{
		{Name: "__syscall_nr", CType: "int", Offset: 8, Size: 4, Signed: true},
		{Name: "dfd", CType: "int", Offset: 16, Size: 8},
		{Name: "filename", CType: "const char *", Offset: 24, Size: 8},
		{Name: "fd", CType: "unsigned int", Offset: 32, Size: 8},
		{Name: "mode", CType: "umode_t", Offset: 40, Size: 8},
		{Name: "argv", CType: "const char *const *", Offset: 48, Size: 8},
		{Name: "weird", CType: "struct foo", Offset: 56, Size: 3},
	}},
}

func (fakeTracepoints) Tracepoints(category, name string) ([]*Tracepoint, error) {
	var tps []*Tracepoint
	for _, tp := range fakeTracepointList {
		if starMatch(category, tp.Category) && starMatch(name, tp.Name) {
			c := *tp
			c.Fields = append([]TracepointField(nil), tp.Fields...)
			tps = append(tps, &c)
		}
	}
	return tps, nil
}

// starMatch matches a pattern whose only wildcard is a trailing *.
func starMatch(pattern, s string) bool {
	if p, ok := strings.CutSuffix(pattern, "*"); ok {
		return strings.HasPrefix(s, p)
	}
	return pattern == s
}

func (fakeTracepoints) IntTypedef(name string) (int, bool, bool) {
	return 2, false, name == "umode_t"
}

// TestTracepointArgs checks the types of args' fields, as bpftrace 0.17
// gives them on this kernel, and its messages for what is wrong.
func TestTracepointArgs(t *testing.T) {
	tests := []struct {
		src, want string
	}{
		{`t:syscalls:sys_enter_openat { @ = args->dfd; }`, "int64"},
		{`t:syscalls:sys_enter_openat { @ = args->__syscall_nr; }`, "int32"},
		{`t:syscalls:sys_enter_openat { @ = args->fd; }`, "uint64"},
		{`t:syscalls:sys_enter_openat { @ = args->mode; }`, "uint16"},
		{`t:syscalls:sys_enter_openat { @ = args->filename; }`, "int8 *"},
		{`t:syscalls:sys_enter_openat { @ = args->argv; }`, "void *"},
		{`t:syscalls:sys_enter_openat { @ = args.dfd; }`, "int64"},
		{`t:sched:sched_switch { @ = args->prev_comm; }`, "string[16]"},
		{`t:sched:sched_switch { @ = args->prev_pid; }`, "int32"},
		{`t:sched:sched_process_exec { @ = args->filename; }`, "uint64"},
		{`tracepoint:sched:sched_s* { @ = args->prev_pid; }`, "int32"},
	}
	for _, tt := range tests {
		p, info := resolveAndCheck(t, tt.src, nil)
		got := info.TypeOf(p.Probes[0].Body.Stmts[0].(*AssignStmt).RHS).String()
		if got != tt.want {
			t.Errorf("%s: args field of type %s, want %s", tt.src, got, tt.want)
		}
	}
}

// TestTracepointErrors checks bpftrace 0.17's messages.
func TestTracepointErrors(t *testing.T) {
	tests := []struct {
		src, want string
	}{
		{`tracepoint:nosuch:foo { exit(); }`, "1:1-22: tracepoint not found: nosuch:foo"},
		{`tracepoint:syscalls:sys_enter_openat { @[args->nosuch] = count(); }`,
			"1:40-54: Struct/union of type 'struct _tracepoint_syscalls_sys_enter_openat' does not contain a field named 'nosuch'"},
		{`tracepoint:sched:sched_* { @ = args->pid; }`,
			"1:32-41: Struct/union of type 'struct _tracepoint_sched_sched_switch' does not contain a field named 'pid'"},
		{`tracepoint:sched:sched_switch { print(args); }`,
			"1:33-44: (ctx) struct _tracepoint_sched_sched_switch * type passed to print() is not printable"},
	}
	for _, tt := range tests {
		var errs ErrorList
		resolveAndCheck(t, tt.src, &errs)
		if len(errs) == 0 || errs[0].Error() != tt.want {
			t.Errorf("%s: errors %v, want %q", tt.src, errs, tt.want)
		}
	}
}

// resolveAndCheck resolves src against fakeTracepoints and checks it;
// errors go to errs, or fail the test when errs is nil.
func resolveAndCheck(t *testing.T, src string, errs *ErrorList) (*Program, *Info) {
	t.Helper()
	p := mustParse(t, src)
	cfg := Config{Host: fakeTracepoints{}}
	info, err := Analyze(p, cfg, nil)
	switch {
	case err != nil && errs == nil:
		t.Fatalf("%s: %v", src, err)
	case err != nil:
		if !errors.As(err, errs) {
			t.Fatalf("%s: %v is not an ErrorList", src, err)
		}
	}
	return p, info
}
