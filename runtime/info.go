package runtime

import (
	"fmt"
	"io"
	"os"
	goruntime "runtime"
	"runtime/debug"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/features"
	"golang.org/x/sys/unix"
)

// WriteInfo prints what gotrace finds on this system (--info): the
// kernel, its build and the kernel features gotrace uses, each probed
// for the way gotrace would use it.
func WriteInfo(w io.Writer, version string) {
	var u unix.Utsname
	_ = unix.Uname(&u)
	fmt.Fprintf(w, "System\n  OS: %s %s %s\n  Arch: %s\n",
		unix.ByteSliceToString(u.Sysname[:]), unix.ByteSliceToString(u.Release[:]),
		unix.ByteSliceToString(u.Version[:]), unix.ByteSliceToString(u.Machine[:]))

	fmt.Fprintf(w, "\nBuild\n  version: %s\n  Go: %s\n", version, goruntime.Version())
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, m := range bi.Deps {
			if m.Path == "github.com/cilium/ebpf" {
				fmt.Fprintf(w, "  cilium/ebpf: %s\n", m.Version)
			}
		}
	}

	fmt.Fprintf(w, "\nKernel features\n")
	yes := func(what string, ok bool, note string) {
		answer := "no"
		if ok {
			answer = "yes"
		}
		if note != "" {
			answer += " (" + note + ")"
		}
		fmt.Fprintf(w, "  %s: %s\n", what, answer)
	}
	has := func(path string) bool {
		_, err := os.Stat(path)
		return err == nil
	}
	ringbuf := features.HaveMapType(ebpf.RingBuf)
	yes("ring buffer maps", ringbuf == nil, errNote(ringbuf))
	yes("uprobes", has("/sys/bus/event_source/devices/uprobe"), "usdt, uprobe, uretprobe")
	yes("uprobe reference counter", has("/sys/bus/event_source/devices/uprobe/format/ref_ctr_offset"), "USDT semaphores")
	kernel := hostKernelProbes()
	yes("kprobes", kernel.kprobes, "gotrace does not attach them")
	yes("tracefs", kernel.tracefs, "gotrace does not attach tracepoints")
	yes("btf", has("/sys/kernel/btf/vmlinux"), "gotrace does not read it")
	raw := features.HaveProgramType(ebpf.RawTracepoint)
	yes("raw tracepoint programs", raw == nil, "BEGIN, END and interval run as these")
	perf := features.HaveProgramType(ebpf.PerfEvent)
	yes("perf event programs", perf == nil, "profile")
}

// errNote is the reason a feature probe gave, without the feature's name
// that cilium/ebpf puts first; "" for nil.
func errNote(err error) string {
	if err == nil {
		return ""
	}
	s := err.Error()
	if _, after, ok := strings.Cut(s, ": "); ok {
		return after
	}
	return s
}
