package runtime

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/gotrace/gotrace/codegen"
	"github.com/gotrace/gotrace/internal/capability"
	"github.com/gotrace/gotrace/internal/testenv"
	"github.com/gotrace/gotrace/lang"
	"github.com/gotrace/gotrace/runtime/attach"
	"github.com/gotrace/gotrace/runtime/plan"
)

// compileKernel parses, resolves, checks and compiles src with the
// running kernel's BTF, without the runtime's check that the kernel can
// attach its probes.
func compileKernel(t *testing.T, src string) *codegen.Spec {
	t.Helper()
	p, info := checkScript(t, src, lang.Config{Host: NewHost(0, ""), Kernel: NewKernel()})
	spec, err := codegen.Compile(info.ResolvedProgram(p), info, codegenOptions(Options{}))
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	return spec
}

// TestKprobeProgramsLoad loads kprobe and kretprobe programs that use
// every builtin particular to them: the verifier accepts them, though
// this project's kernels cannot attach them; attaching then names the
// kernel's refusal, or succeeds where the kernel has kprobes.
func TestKprobeProgramsLoad(t *testing.T) {
	testenv.RequireRoot(t)
	spec := compileKernel(t, `
kprobe:vfs_read {
	@calls[func, comm] = count();
	@sizes = hist(arg2);
	printf("%d %s %d %d\n", arg0, str(arg1), sarg0, reg("ip"));
	@task[curtask->pid] = count();
	@stack[kstack] = count();
}
kretprobe:vfs_read { @ret[func] = hist(retval); }`)
	coll, err := load(spec.Collection, nil)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	defer coll.Close()
	for _, a := range spec.Attachments {
		links, err := attach.KernelFunc(plan.Site{Attachment: &a}, coll.Programs[a.Program])
		switch {
		case err == nil:
			closeLinks(links)
		case !capability.Of(capability.Kprobes).Available:
			if !strings.Contains(err.Error(), "kprobes are not available: ") {
				t.Errorf("attach %s: %v; want the kernel's lack of kprobes named", a.ProbeName, err)
			}
		default:
			t.Errorf("attach %s: %v", a.ProbeName, err)
		}
	}
}

// TestKfuncPrograms runs kfunc and kretfunc probes reading BTF-typed
// arguments and the return value: where the kernel loads and attaches
// fentry/fexit programs they print a read's size and result; where it
// refuses (this project's kernels, with EPERM even to root) the error is
// at the attach point and says so. Which of the two happens must be what
// the capability table says of fentry.
func TestKfuncPrograms(t *testing.T) {
	testenv.RequireRoot(t)
	src := `kfunc:vfs_read /args->count > 0/ { @count = max(args->count); @f[func] = count(); }
kretfunc:vfs_read { @ret = max(retval); if (retval > 0) { exit(); } }`
	p, info := checkScript(t, src, lang.Config{Host: NewHost(0, ""), Kernel: NewKernel()})
	out := newSyncBuffer("")
	err := Run(context.Background(), p, info, Options{Out: out, Err: out})
	checkNoBPFFiles(t)
	fentry := capability.Of(capability.Fentry)
	if err == nil {
		if !fentry.Available {
			t.Fatalf("kfunc probes ran, but the capability table says fentry is not available: %s", fentry.Evidence)
		}
		return
	}
	if fentry.Available {
		t.Fatalf("Run: %v; the capability table says fentry works here (%s)", err, fentry.Evidence)
	}
	var list lang.ErrorList
	if !errors.As(err, &list) || !strings.Contains(err.Error(), "the kernel refuses to load fentry/fexit programs (kfunc, kretfunc): ") ||
		list[0].Span.Start.Line != 1 && list[0].Span.Start.Line != 2 {
		t.Fatalf("Run: %v; want the kernel's refusal at a kfunc attach point", err)
	}
}

// TestListKprobes lists kprobes from tracefs's traceable functions where
// the kernel has kprobes, and says it has none elsewhere (bpftrace 0.17
// aborts reading the list on this project's kernels).
func TestListKprobes(t *testing.T) {
	testenv.RequireRoot(t)
	var out strings.Builder
	kernel, err := ListKernel(&out, "kprobe:vfs_rea*", true, false)
	if !kernel {
		t.Fatalf("kprobe:vfs_rea* is not a kernel pattern")
	}
	if capability.Of(capability.Kprobes).Available {
		if err != nil || !strings.Contains(out.String(), "kprobe:vfs_read\n") {
			t.Errorf("listed %q, %v; want kprobe:vfs_read", out.String(), err)
		}
		return
	}
	if err == nil || !strings.Contains(err.Error(), "kprobes are not available: ") || out.Len() != 0 {
		t.Errorf("listed %q, %v; want no kprobes named", out.String(), err)
	}
}
