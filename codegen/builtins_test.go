package codegen

import (
	"errors"
	"strings"
	"testing"

	"github.com/cilium/ebpf/btf"

	"github.com/gotrace/gotrace/internal/testenv"
	"github.com/gotrace/gotrace/lang"
	"github.com/gotrace/gotrace/usdt"
)

// TestEveryBuiltinLowers compiles a script using each builtin the checker
// accepts: a builtin added to lang's registry without a lowering fails
// here. override() is checked as bpftrace checks it but needs kprobes'
// error injection, which gotrace does without.
func TestEveryBuiltinLowers(t *testing.T) {
	const python = "/usr/bin/python3.11"
	testenv.RequireFile(t, python)
	scripts := map[lang.BuiltinID]string{
		lang.VarPid:          `BEGIN { @ = pid; }`,
		lang.VarTid:          `BEGIN { @ = tid; }`,
		lang.VarUID:          `BEGIN { @ = uid; }`,
		lang.VarGID:          `BEGIN { @ = gid; }`,
		lang.VarCPU:          `BEGIN { @ = cpu; }`,
		lang.VarNsecs:        `BEGIN { @ = nsecs; }`,
		lang.VarElapsed:      `BEGIN { @ = elapsed; }`,
		lang.VarRand:         `BEGIN { @ = rand; }`,
		lang.VarCgroup:       `BEGIN { @ = cgroup; }`,
		lang.VarNumaid:       `BEGIN { @ = numaid; }`,
		lang.VarRetval:       `uretprobe:/bin/sh:main { @ = retval; }`,
		lang.VarCpid:         `BEGIN { @ = cpid; }`,
		lang.VarComm:         `BEGIN { @ = comm; }`,
		lang.VarProbe:        `BEGIN { @ = probe; }`,
		lang.VarFunc:         `uprobe:/bin/sh:main { @ = func; }`,
		lang.VarUsername:     `BEGIN { @ = username; }`,
		lang.VarUstack:       `uprobe:/bin/sh:main { @ = ustack; }`,
		lang.VarArg:          `uprobe:/bin/sh:main { @ = arg2; }`,
		lang.VarSarg:         `uprobe:/bin/sh:main { @ = sarg1; }`,
		lang.VarArgs:         `tracepoint:syscalls:sys_enter_openat { @ = args->dfd; }`,
		lang.ModePerf:        `uprobe:/bin/sh:main { @ = ustack(perf, 3); }`,
		lang.ModeBpftrace:    `uprobe:/bin/sh:main { @ = ustack(bpftrace); }`,
		lang.FuncCount:       `BEGIN { @ = count(); }`,
		lang.FuncSum:         `BEGIN { @ = sum(1); }`,
		lang.FuncAvg:         `BEGIN { @ = avg(1); }`,
		lang.FuncMin:         `BEGIN { @ = min(1); }`,
		lang.FuncMax:         `BEGIN { @ = max(1); }`,
		lang.FuncStats:       `BEGIN { @ = stats(1); }`,
		lang.FuncHist:        `BEGIN { @ = hist(1); @b[1] = hist(3000, 5); @c = hist(-1, 2); }`,
		lang.FuncLhist:       `BEGIN { @ = lhist(1, 0, 10, 1); }`,
		lang.FuncTseries:     `BEGIN { @ = tseries(1, 1s, 5); @k[1] = tseries(2, 100ms, 3, "avg"); @n = tseries(-1, 1ms, 2, "min"); }`,
		lang.FuncPrintf:      `BEGIN { printf("%d\n", 1); }`,
		lang.FuncPrint:       `BEGIN { @ = 1; print(@); print(2); }`,
		lang.FuncExit:        `BEGIN { exit(); }`,
		lang.FuncClear:       `BEGIN { @ = 1; clear(@); }`,
		lang.FuncZero:        `BEGIN { @ = 1; zero(@); }`,
		lang.FuncDelete:      `BEGIN { @[1] = 1; delete(@[1]); }`,
		lang.FuncTime:        `BEGIN { time(); }`,
		lang.FuncJoin:        `uprobe:/bin/sh:main { join(arg1); }`,
		lang.FuncCat:         `BEGIN { cat("/etc/hostname"); }`,
		lang.FuncSystem:      `BEGIN { system("true"); }`,
		lang.FuncSignal:      `uprobe:/bin/sh:main { signal("USR1"); }`,
		lang.FuncStr:         `uprobe:/bin/sh:main { @ = str(arg0); str(arg1, 4); }`,
		lang.FuncBuf:         `uprobe:/bin/sh:main { @ = buf(arg0, 8); }`,
		lang.FuncHash256:     `uprobe:/bin/sh:main { @[hash256(arg0)] = count(); }`,
		lang.FuncStrftime:    `BEGIN { @ = strftime("%H", nsecs); }`,
		lang.FuncUstack:      `uprobe:/bin/sh:main { @ = ustack(); }`,
		lang.FuncUsym:        `uprobe:/bin/sh:main { @ = usym(arg0); }`,
		lang.FuncUaddr:       `uprobe:` + python + `:main { @ = *uaddr("Py_DebugFlag"); }`,
		lang.FuncNtop:        `BEGIN { @ = ntop(0x0100007f); }`,
		lang.FuncPton:        `BEGIN { printf("%s %s", ntop(pton("127.0.0.1")), ntop(10, pton("::1"))); }`,
		lang.FuncKaddr:       `BEGIN { @ = kaddr("vfs_read"); }`,
		lang.FuncCgroupid:    `BEGIN { @ = cgroupid("/sys/fs/cgroup/unified"); }`,
		lang.FuncKsym:        `BEGIN { @ = ksym(kaddr("vfs_read")); }`,
		lang.VarKstack:       `profile:hz:99 { @[kstack] = count(); }`,
		lang.FuncKstack:      `profile:hz:99 { @[kstack(perf, 3)] = count(); }`,
		lang.FuncOverride:    `kprobe:f { override(1); }`,
		lang.FuncReg:         `uprobe:/bin/sh:main { @ = reg("ip"); }`,
		lang.FuncSizeof:      `BEGIN { @ = sizeof(uint32); }`,
		lang.VarCurtask:      `BEGIN { @ = curtask; }`,
		lang.FuncStrncmp:     `BEGIN { @ = strncmp("a", "b", 1); }`,
		lang.FuncUptr:        `uprobe:/bin/sh:main { @ = uptr(arg0); }`,
		lang.FuncKptr:        `uprobe:/bin/sh:main { @ = kptr(arg0); }`,
		lang.FuncBswap:       `BEGIN { @ = bswap((uint16)1); }`,
		lang.FuncStrcontains: `BEGIN { @ = strcontains("ab", "b"); }`,
		lang.FuncSignalName:  `BEGIN { @ = signal_name(2); }`,
		lang.FuncSyscallName: `BEGIN { @ = syscall_name(0); }`,
		lang.FuncNsecs:       `BEGIN { @ = nsecs(boot); @t = nsecs(tai); @s = nsecs(sw_tai); @m = nsecs(); }`,
		lang.FuncStrlen:      `BEGIN { @ = strlen("abc"); }`,
		lang.FuncErrorf:      `BEGIN { errorf("bad %d", 1); }`,
		lang.FuncWarnf:       `BEGIN { warnf("odd %s", "x"); }`,
		lang.VarProbetype:    `BEGIN { @ = probetype; }`,
		lang.VarJiffies:      `BEGIN { @ = jiffies; }`,
		lang.VarNcpus:        `BEGIN { @ = ncpus; }`,
		lang.VarUsermode:     `BEGIN { @ = usermode; } profile:hz:99 { @u = usermode; }`,
		lang.FuncHasKey:      `BEGIN { @[1] = 1; @b = has_key(@, 1); @d = delete(@, 1); }`,
		lang.FuncStrerror:    `BEGIN { @ = strerror(2); }`,
		lang.FuncCgroupPath:  `BEGIN { @[cgroup_path(cgroup)] = 1; @v = cgroup_path(1, "unified"); printf("%s\n", cgroup_path(cgroup, "cpu*")); }`,
		lang.FuncMacaddr:     `struct S { uint8_t m[6]; } uprobe:/bin/sh:main { @[macaddr(arg0)] = macaddr(((struct S *)arg0)->m); @b = macaddr(buf(arg0, 6)); }`,
		lang.FuncLen:         `BEGIN { @m[1] = 1; @ = len(@m); } uprobe:/bin/sh:main { @u = len(ustack(3)); @k = len(kstack); }`,
	}
	for _, id := range lang.Builtins() {
		src, ok := scripts[id]
		if !ok {
			t.Errorf("%v: no script", id)
			continue
		}
		delete(scripts, id)
		if !strings.Contains(src, strings.TrimSuffix(id.String(), "N")) {
			t.Errorf("%v: script %s does not use it", id, src)
		}
		p, err := lang.Parse("t.bt", src)
		if err != nil {
			t.Fatalf("parse %s: %v", src, err)
		}
		cfg := lang.Config{Unsafe: true, Child: true, Host: tracepointHost{&usdt.Host{}}, Kernel: symbolKernel{}}
		info, err := lang.Analyze(p, cfg, nil)
		if err != nil {
			t.Errorf("check %s: %v", src, err)
			continue
		}
		_, err = Compile(info.ResolvedProgram(p), info, Options{})
		switch id {
		case lang.FuncOverride:
			if !errors.Is(err, ErrUnsupported) {
				t.Errorf("compile %s: %v, want ErrUnsupported", src, err)
			}
		default:
			if err != nil {
				t.Errorf("compile %s: %v", src, err)
			}
		}
	}
	for id := range scripts {
		t.Errorf("%v: a script for a builtin gotrace does not implement", id)
	}
}

// TestUncheckedProgramPanics checks that what the checker refuses, given
// to Compile without checking, is an internal error: codegen asserts the
// checker's guarantees rather than checking the script again.
func TestUncheckedProgramPanics(t *testing.T) {
	a := newHandAST()
	a.info.Maps["@m"] = &lang.MapInfo{Name: "@m", Key: lang.Int64, Value: lang.Int64}
	for _, stmt := range []lang.Stmt{
		a.void("clear", a.mapExpr("@m", lang.Int64, a.intLit(1))),
		a.void("time", a.intLit(1)),
		a.void("printf", a.intLit(1)),
		a.void("signal", a.strLit("NOSUCH")),
		a.void("print", a.mapExpr("@m", lang.Int64), a.builtinVar("pid", lang.Uint64)),
	} {
		p := &lang.Program{
			File:   "test.bt",
			Probes: []*lang.Probe{probeBlock(beginAP(), nil, stmt)},
		}
		func() {
			defer func() {
				if msg, _ := recover().(string); !strings.HasPrefix(msg, "internal error: ") {
					t.Errorf("%s: recovered %q, want an internal error", stmt.(*lang.ExprStmt).X.(*lang.Call).Name, msg)
				}
			}()
			_, err := Compile(a.info.ResolvedProgram(p), a.info, Options{})
			t.Errorf("Compile returned %v", err)
		}()
	}
}

// symbolKernel is a lang.Kernel that knows every symbol's address and no
// types.
type symbolKernel struct{}

func (symbolKernel) Types() (*btf.Spec, error)       { return nil, errors.New("no BTF") }
func (symbolKernel) Symbol(string) (uint64, error)   { return 0xffffffff81000000, nil }
func (symbolKernel) CgroupID(string) (uint64, error) { return 35, nil }

// tracepointHost is a lang.Host that knows one tracepoint,
// syscalls:sys_enter_openat, as this kernel's format file describes it.
type tracepointHost struct{ *usdt.Host }

func (tracepointHost) Tracepoints(category, name string) ([]*lang.Tracepoint, error) {
	if category != "syscalls" || name != "sys_enter_openat" {
		return nil, nil
	}
	return []*lang.Tracepoint{{Category: category, Name: name, Fields: []lang.TracepointField{
		{Name: "__syscall_nr", CType: "int", Offset: 8, Size: 4, Signed: true},
		{Name: "dfd", CType: "int", Offset: 16, Size: 8},
		{Name: "filename", CType: "const char *", Offset: 24, Size: 8},
		{Name: "flags", CType: "int", Offset: 32, Size: 8},
		{Name: "mode", CType: "umode_t", Offset: 40, Size: 8},
	}}}, nil
}

func (tracepointHost) IntTypedef(name string) (int, bool, bool) {
	return 2, false, name == "umode_t"
}
