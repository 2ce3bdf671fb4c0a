package capability

import (
	"encoding/binary"
	"fmt"
	"os"
	goruntime "runtime"
	"strconv"
	"sync/atomic"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/features"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/gotrace/gotrace/internal/memlock"
)

// Each try function returns whether the feature worked, what it did in
// words, and the error that stopped it (then the words say what failed).

// kernelFunction is the kernel function the kprobe and fentry probes
// attach to: every kernel has it, and it is what gotrace's tests trace.
const kernelFunction = "vfs_read"

// kprobePMU is the perf event source of a kernel built with kprobes, and
// kprobeEvents tracefs's older way to create them.
const (
	kprobePMU    = "/sys/bus/event_source/devices/kprobe"
	kprobeEvents = "/sys/kernel/tracing/kprobe_events"
)

func tryRingBuf() (bool, string, error) {
	if err := features.HaveMapType(ebpf.RingBuf); err != nil {
		return false, "creating a ring buffer map", err
	}
	return true, "a ring buffer map was created", nil
}

func tryUprobes() (bool, string, error) {
	b, err := os.ReadFile("/sys/bus/event_source/devices/uprobe/type")
	if err != nil {
		return false, "reading the uprobe perf event source", err
	}
	return true, fmt.Sprintf("perf event source type %s", trimNewline(b)), nil
}

func tryUprobeRefCtr() (bool, string, error) {
	const path = "/sys/bus/event_source/devices/uprobe/format/ref_ctr_offset"
	if _, err := os.Stat(path); err != nil {
		return false, "the uprobe perf event source has no ref_ctr_offset field", err
	}
	return true, "the uprobe perf event source has a ref_ctr_offset field", nil
}

func tryUprobeMulti() (bool, string, error) {
	if err := features.HaveBPFLinkUprobeMulti(); err != nil {
		return false, "creating a uprobe_multi link", err
	}
	return true, "a uprobe_multi link was created", nil
}

// tryKprobes attaches a program that does nothing to kernelFunction. A
// kernel without kprobes shows it without any privilege: it has neither
// the kprobe perf event source nor tracefs's kprobe_events.
func tryKprobes() (bool, string, error) {
	_, pmuErr := os.Stat(kprobePMU)
	_, eventsErr := os.Stat(kprobeEvents)
	if pmuErr != nil && eventsErr != nil {
		return false, "the kernel was built without CONFIG_KPROBES: there is no " + kprobePMU + " nor " + kprobeEvents, nil
	}
	prog, err := returnZero(ebpf.Kprobe, 0, "")
	if err != nil {
		return false, "loading a kprobe program", err
	}
	defer prog.Close()
	l, err := link.Kprobe(kernelFunction, prog, nil)
	if err != nil {
		return false, "attaching a kprobe to " + kernelFunction, err
	}
	l.Close()
	return true, "a kprobe on " + kernelFunction + " was attached", nil
}

// tryFentry loads and attaches an fentry program on kernelFunction: some
// kernels refuse to load them even to root (EPERM).
func tryFentry() (bool, string, error) {
	prog, err := returnZero(ebpf.Tracing, ebpf.AttachTraceFEntry, kernelFunction)
	if err != nil {
		return false, "loading an fentry program for " + kernelFunction, err
	}
	defer prog.Close()
	l, err := link.AttachTracing(link.TracingOptions{Program: prog})
	if err != nil {
		return false, "attaching an fentry program to " + kernelFunction, err
	}
	l.Close()
	return true, "an fentry program on " + kernelFunction + " was attached", nil
}

// returnZero loads a program of type typ that returns 0, with the memory
// lock limit removed as gotrace removes it before it loads anything.
func returnZero(typ ebpf.ProgramType, attach ebpf.AttachType, to string) (*ebpf.Program, error) {
	memlock.Raise()
	return ebpf.NewProgram(&ebpf.ProgramSpec{
		Type:         typ,
		AttachType:   attach,
		AttachTo:     to,
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 0), asm.Return()},
		License:      "GPL",
	})
}

func tryTracefs() (bool, string, error) {
	entries, err := os.ReadDir("/sys/kernel/tracing/events")
	if err != nil {
		return false, "listing tracepoints", err
	}
	return true, fmt.Sprintf("/sys/kernel/tracing/events lists %d categories", len(entries)), nil
}

func tryBTF() (bool, string, error) {
	spec, err := btf.LoadKernelSpec()
	if err != nil {
		return false, "loading the kernel's BTF", err
	}
	if _, err := spec.AnyTypeByName("task_struct"); err != nil {
		return false, "finding task_struct in the kernel's BTF", err
	}
	return true, "the kernel's BTF was loaded and has task_struct", nil
}

// tryPMU opens a CPU cycle counter on this process: without a PMU (most
// virtual machines) the kernel refuses every hardware event.
func tryPMU() (bool, string, error) {
	attr := perfAttr(unix.PERF_TYPE_HARDWARE)
	attr.Config = unix.PERF_COUNT_HW_CPU_CYCLES
	attr.Bits |= unix.PerfBitDisabled
	fd, err := unix.PerfEventOpen(&attr, 0, -1, -1, unix.PERF_FLAG_FD_CLOEXEC)
	if err != nil {
		return false, "opening a CPU cycle counter", fmt.Errorf("perf_event_open: %w", err)
	}
	unix.Close(fd)
	return true, "a CPU cycle counter was opened", nil
}

// hwBreakpointW is HW_BREAKPOINT_W of <linux/hw_breakpoint.h>, which
// golang.org/x/sys/unix does not name: a breakpoint on writes.
const hwBreakpointW = 2

// breakpointTarget is the variable tryBreakpoints watches and writes.
var breakpointTarget atomic.Uint64

// tryBreakpoints opens a write breakpoint on breakpointTarget for this
// thread, writes the variable and reads the count. Some hypervisors let
// the breakpoint be opened but never deliver it: the count stays 0.
func tryBreakpoints() (bool, string, error) {
	goruntime.LockOSThread()
	defer goruntime.UnlockOSThread()
	attr := perfAttr(unix.PERF_TYPE_BREAKPOINT)
	attr.Bp_type = hwBreakpointW
	attr.Ext1 = uint64(uintptr(unsafe.Pointer(&breakpointTarget))) // bp_addr
	attr.Ext2 = 8                                                  // bp_len
	attr.Sample = 1
	attr.Bits |= unix.PerfBitExcludeKernel | unix.PerfBitExcludeHv
	fd, err := unix.PerfEventOpen(&attr, 0, -1, -1, unix.PERF_FLAG_FD_CLOEXEC)
	if err != nil {
		return false, "opening a write breakpoint on a variable of gotrace's", fmt.Errorf("perf_event_open: %w", err)
	}
	defer unix.Close(fd)
	breakpointTarget.Add(1)
	var count [8]byte
	if _, err := unix.Read(fd, count[:]); err != nil {
		return false, "reading the breakpoint's count", err
	}
	if n := binary.NativeEndian.Uint64(count[:]); n == 0 {
		return false, "a write breakpoint on a variable of gotrace's was opened, but writing the variable did not fire it: the CPU or its hypervisor does not deliver hardware breakpoints", nil
	}
	return true, "a write breakpoint on a variable of gotrace's fired when it was written", nil
}

// perfAttr is a perf event of type typ.
func perfAttr(typ uint32) unix.PerfEventAttr {
	return unix.PerfEventAttr{Type: typ, Size: uint32(unsafe.Sizeof(unix.PerfEventAttr{}))}
}

func tryRawTracepoint() (bool, string, error) {
	return haveProgramType(ebpf.RawTracepoint, "raw tracepoint")
}

func tryPerfEventProgs() (bool, string, error) {
	return haveProgramType(ebpf.PerfEvent, "perf event")
}

func tryForEachMapElem() (bool, string, error) {
	return haveHelper(asm.FnForEachMapElem)
}

func tryLoop() (bool, string, error) {
	return haveHelper(asm.FnLoop)
}

func tryLookupPercpu() (bool, string, error) {
	return haveHelper(asm.FnMapLookupPercpuElem)
}

// haveProgramType loads a program of type typ.
func haveProgramType(typ ebpf.ProgramType, name string) (bool, string, error) {
	if err := features.HaveProgramType(typ); err != nil {
		return false, "loading a " + name + " program", err
	}
	return true, "a " + name + " program was loaded", nil
}

// haveHelper loads a raw tracepoint program that calls helper fn.
func haveHelper(fn asm.BuiltinFunc) (bool, string, error) {
	if err := features.HaveProgramHelper(ebpf.RawTracepoint, fn); err != nil {
		return false, fmt.Sprintf("loading a raw tracepoint program calling %v", fn), err
	}
	return true, fmt.Sprintf("a raw tracepoint program calling %v was loaded", fn), nil
}

// initPIDNamespaceInode is the inode of the initial PID namespace's
// /proc/PID/ns/pid, fixed by the kernel (PROC_PID_INIT_INO).
const initPIDNamespaceInode = 0xEFFFFFFC

// OwnPIDNamespace returns gotrace's PID namespace, by the device and
// inode of /proc/self/ns/pid, and whether it is the initial one, whose
// ids the kernel's programs read. The device is as the kernel encodes it
// inside (major << 20 | minor), which bpf_get_ns_current_pid_tgid
// compares, not as stat(2) gives it: the two differ for a minor above 255.
func OwnPIDNamespace() (dev, ino uint64, initial bool, err error) {
	var st unix.Stat_t
	if err := unix.Stat("/proc/self/ns/pid", &st); err != nil {
		return 0, 0, false, fmt.Errorf("read gotrace's PID namespace: %w", err)
	}
	dev = uint64(unix.Major(st.Dev))<<20 | uint64(unix.Minor(st.Dev))
	return dev, st.Ino, st.Ino == initPIDNamespaceInode, nil
}

// tryNamespacePIDs runs, in a PID namespace of gotrace's own, a program
// that reads the current process's id as that namespace numbers it
// (bpf_get_ns_current_pid_tgid), as codegen reads pid, and checks that it
// is gotrace's own. In the initial namespace the kernel's ids are its
// own, and nothing is tried.
func tryNamespacePIDs() (bool, string, error) {
	dev, ino, initial, err := OwnPIDNamespace()
	switch {
	case err != nil:
		return false, "reading /proc/self/ns/pid", err
	case initial:
		return true, "gotrace runs in the initial PID namespace, whose ids the kernel's programs read", nil
	}
	// The ids must be those /proc gives, where gotrace reads what it
	// knows of a process: a /proc mounted for another namespace (unshare
	// --pid without --mount-proc) names processes by that one's ids.
	if self, err := os.Readlink("/proc/self"); err != nil || self != strconv.Itoa(os.Getpid()) {
		return false, fmt.Sprintf("/proc is mounted for another PID namespace (/proc/self is %q, gotrace is process %d in its own)", self, os.Getpid()), err
	}
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Type:    ebpf.RawTracepoint,
		License: "GPL",
		Instructions: asm.Instructions{
			asm.LoadImm(asm.R1, int64(dev), asm.DWord),
			asm.LoadImm(asm.R2, int64(ino), asm.DWord),
			asm.Mov.Reg(asm.R3, asm.RFP),
			asm.Add.Imm(asm.R3, -8),
			asm.Mov.Imm(asm.R4, 8),
			asm.FnGetNsCurrentPidTgid.Call(),
			asm.JNE.Imm(asm.R0, 0, "failed"),
			// struct bpf_pidns_info { u32 pid; u32 tgid; }
			asm.LoadMem(asm.R0, asm.RFP, -4, asm.Word),
			asm.Return(),
			asm.Mov.Imm(asm.R0, 0).WithSymbol("failed"),
			asm.Return(),
		},
	})
	if err != nil {
		return false, "loading a program calling bpf_get_ns_current_pid_tgid", err
	}
	defer prog.Close()
	got, err := prog.Run(&ebpf.RunOptions{})
	if err != nil {
		return false, "running a program calling bpf_get_ns_current_pid_tgid", err
	}
	if int(got) != os.Getpid() {
		return false, fmt.Sprintf("bpf_get_ns_current_pid_tgid gave process %d for gotrace's %d in PID namespace %d", got, os.Getpid(), ino), nil
	}
	return true, fmt.Sprintf("bpf_get_ns_current_pid_tgid gave gotrace's own process %d in PID namespace %d", got, ino), nil
}

// trimNewline drops the newline that ends a sysfs file.
func trimNewline(b []byte) string {
	if n := len(b); n > 0 && b[n-1] == '\n' {
		b = b[:n-1]
	}
	return string(b)
}
