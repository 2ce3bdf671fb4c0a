package unwind

import (
	"debug/elf"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"
)

// TestWalkCxxChain checks the tables do what they are for: it stops
// cxxchain, built at -O2 -fomit-frame-pointer, at the entry of its
// deepest function under ptrace, then walks the stack in Go exactly as
// the in-kernel unwinder is to (find the mapping and its table, look up
// the rule, compute the CFA, read the return address at CFA-8 and the
// saved rbp) and expects every function of the chain, reach included (a
// frame-pointer walk misses it), main, then libc's frames (libc has no
// symbols here: unnamed) down to _start, whose undefined return address
// ends the walk. It is x86-64's (this file's name): ptrace's registers are
// the host's.
func TestWalkCxxChain(t *testing.T) {
	// -no-pie: the program's symbols are its addresses; libc's bias comes
	// from /proc/PID/maps, as the unwinder's will.
	bin := buildCxxChain(t, "g++", "-fomit-frame-pointer", "-no-pie")
	syms := functionSymbols(t, bin)
	entry, ok := syms.addr("_ZN5chain6detail6bottomEi")
	if !ok {
		t.Fatalf("%s has no chain::detail::bottom", bin)
	}

	// Every ptrace request must come from the thread that started the
	// tracee.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	tr := startTraced(t, bin)
	tr.breakAt(entry)
	regs := tr.cont()
	if regs.Rip-1 != entry {
		t.Fatalf("stopped at %#x, not at bottom's entry %#x", regs.Rip-1, entry)
	}
	maps := executableMappings(t, tr.pid)

	var (
		cache      Cache
		got        []string
		pc, sp, fp = entry, regs.Rsp, regs.Rbp
	)
	for frame := 0; ; frame++ {
		if frame > 64 {
			t.Fatalf("no end after 64 frames: %q", got)
		}
		m, ok := maps.find(pc)
		if !ok {
			t.Fatalf("frame %d: pc %#x is in no executable mapping (walk so far %q)", frame, pc, got)
		}
		name := "?"
		if m.path == bin {
			name = syms.name(pc)
		}
		got = append(got, name)
		table, err := cache.Open(m.path)
		if err != nil {
			t.Fatal(err)
		}
		// Past the first frame pc is a return address: the call is the
		// instruction before it, whose rule is the one that applies.
		at := pc - m.bias
		if frame > 0 {
			at--
		}
		rule, ok := table.Lookup(at)
		if rule.CFAReg == RegUndefined {
			break // the outermost frame
		}
		var cfa uint64
		switch {
		case !ok:
			t.Fatalf("frame %d (%s, pc %#x): no rule", frame, name, pc)
		case rule.CFAReg == RegSP:
			cfa = sp + uint64(int64(rule.CFAOffset))
		case rule.CFAReg == RegFP:
			cfa = fp + uint64(int64(rule.CFAOffset))
		default:
			t.Fatalf("frame %d (%s, pc %#x): rule %+v", frame, name, pc, rule)
		}
		if rule.FPOffset != 0 {
			fp = tr.read8(cfa + uint64(int64(rule.FPOffset)))
		}
		pc, sp = tr.read8(cfa-8), cfa
	}
	// got is the chain, main, one or more libc frames, then _start.
	chain := []string{"bottom", "reach", "descend", "step", "walk", "check", "decode", "run", "main"}
	n := len(chain)
	if len(got) < n+2 || strings.Join(got[:n], " ") != strings.Join(chain, " ") ||
		got[n] != "?" || got[len(got)-1] != "_start" {
		t.Errorf("walk found %q, want %q, libc's frames (?), then _start", got, chain)
	}
	t.Logf("walk: %q", got)
}

// mapping is one executable mapping of a process: its range, its file
// and the load bias that turns the file's addresses into the process's.
type mapping struct {
	start, end, bias uint64
	path             string
}

// mappings are a process's executable mappings.
type mappings []mapping

// find returns the mapping holding pc.
func (ms mappings) find(pc uint64) (mapping, bool) {
	for _, m := range ms {
		if m.start <= pc && pc < m.end {
			return m, true
		}
	}
	return mapping{}, false
}

// executableMappings reads /proc/PID/maps: each executable mapping of a
// file, with its bias from the file's program headers (the mapping's start
// is the segment's address plus the bias, at the file offset it maps).
func executableMappings(t *testing.T, pid int) mappings {
	t.Helper()
	text, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		t.Fatal(err)
	}
	var ms mappings
	for _, line := range strings.Split(strings.TrimSpace(string(text)), "\n") {
		f := strings.Fields(line)
		if len(f) < 6 || !strings.Contains(f[1], "x") || !strings.HasPrefix(f[5], "/") {
			continue
		}
		var m mapping
		var off uint64
		if _, err := fmt.Sscanf(f[0]+" "+f[2], "%x-%x %x", &m.start, &m.end, &off); err != nil {
			t.Fatalf("/proc/%d/maps line %q: %v", pid, line, err)
		}
		m.path = f[5]
		m.bias = m.start - fileAddress(t, m.path, off)
		ms = append(ms, m)
	}
	return ms
}

// fileAddress returns the address at which path's loadable segment holding
// file offset off puts it.
func fileAddress(t *testing.T, path string, off uint64) uint64 {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD && p.Off&^0xfff <= off && off < p.Off+p.Filesz {
			return p.Vaddr - p.Off + off
		}
	}
	t.Fatalf("%s: no loadable segment at offset %#x", path, off)
	return 0
}

// symbols are a file's functions by address.
type symbols []elf.Symbol

// functionSymbols reads path's function symbols.
func functionSymbols(t *testing.T, path string) symbols {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	all, err := f.Symbols()
	if err != nil {
		t.Fatalf("read the symbols of %s: %v", path, err)
	}
	var funcs symbols
	for _, s := range all {
		if elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Value != 0 {
			funcs = append(funcs, s)
		}
	}
	return funcs
}

// addr returns the address of the function called name.
func (s symbols) addr(name string) (uint64, bool) {
	for _, sym := range s {
		if sym.Name == name {
			return sym.Value, true
		}
	}
	return 0, false
}

// name returns a short name of the function holding pc: the last
// component of its mangled name's qualified name ("bottom" for
// _ZN5chain6detail6bottomEi), main as itself, or pc in hex.
func (s symbols) name(pc uint64) string {
	for _, sym := range s {
		if sym.Value <= pc && pc < sym.Value+sym.Size {
			return shortName(sym.Name)
		}
	}
	return fmt.Sprintf("%#x", pc)
}

// shortName is the last name of a mangled nested name: the length-prefixed
// components after "_ZN" (or "_ZNK"), up to "E".
func shortName(mangled string) string {
	rest, ok := strings.CutPrefix(mangled, "_ZN")
	if !ok {
		return mangled
	}
	rest = strings.TrimPrefix(rest, "K")
	last := mangled
	for len(rest) > 0 && rest[0] >= '0' && rest[0] <= '9' {
		n, i := 0, 0
		for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
			n = n*10 + int(rest[i]-'0')
			i++
		}
		if i+n > len(rest) {
			break
		}
		last, rest = rest[i:i+n], rest[i+n:]
		// A template's arguments (IiE) follow its name.
		if strings.HasPrefix(rest, "I") {
			if end := strings.IndexByte(rest, 'E'); end >= 0 {
				rest = rest[end+1:]
			}
		}
	}
	return last
}

// tracee is a process started under ptrace, stopped between requests.
type tracee struct {
	t   *testing.T
	pid int
}

// startTraced starts bin stopped at its exec under ptrace and kills it
// when the test ends.
func startTraced(t *testing.T, bin string) *tracee {
	t.Helper()
	cmd := exec.Command(bin)
	cmd.SysProcAttr = &syscall.SysProcAttr{Ptrace: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s under ptrace: %v", bin, err)
	}
	tr := &tracee{t: t, pid: cmd.Process.Pid}
	t.Cleanup(func() {
		cmd.Process.Kill()
		var ws syscall.WaitStatus
		wait4(tr.pid, &ws)
	})
	tr.wait()
	return tr
}

// wait waits for the tracee's next stop, which must be a SIGTRAP.
func (tr *tracee) wait() {
	tr.t.Helper()
	var ws syscall.WaitStatus
	if err := wait4(tr.pid, &ws); err != nil {
		tr.t.Fatalf("wait for the tracee: %v", err)
	}
	if !ws.Stopped() || ws.StopSignal() != syscall.SIGTRAP {
		tr.t.Fatalf("the tracee did not stop at a trap: status %#x", uint32(ws))
	}
}

// breakAt writes an int3 at addr.
func (tr *tracee) breakAt(addr uint64) {
	tr.t.Helper()
	word := make([]byte, 8)
	if _, err := syscall.PtracePeekText(tr.pid, uintptr(addr), word); err != nil {
		tr.t.Fatalf("read the tracee's code at %#x: %v", addr, err)
	}
	word[0] = 0xcc
	if _, err := syscall.PtracePokeText(tr.pid, uintptr(addr), word); err != nil {
		tr.t.Fatalf("write a breakpoint at %#x: %v", addr, err)
	}
}

// cont resumes the tracee until its next trap and returns its registers.
func (tr *tracee) cont() syscall.PtraceRegs {
	tr.t.Helper()
	if err := syscall.PtraceCont(tr.pid, 0); err != nil {
		tr.t.Fatalf("resume the tracee: %v", err)
	}
	tr.wait()
	var regs syscall.PtraceRegs
	if err := syscall.PtraceGetRegs(tr.pid, &regs); err != nil {
		tr.t.Fatalf("read the tracee's registers: %v", err)
	}
	return regs
}

// read8 reads the tracee's 8-byte word at addr.
func (tr *tracee) read8(addr uint64) uint64 {
	tr.t.Helper()
	b := make([]byte, 8)
	if _, err := syscall.PtracePeekData(tr.pid, uintptr(addr), b); err != nil {
		tr.t.Fatalf("read the tracee's stack at %#x: %v", addr, err)
	}
	return binary.LittleEndian.Uint64(b)
}

// wait4 waits for pid's next change of state, again when a signal (the Go
// runtime's preemption, say) interrupts the wait.
func wait4(pid int, ws *syscall.WaitStatus) error {
	for {
		_, err := syscall.Wait4(pid, ws, 0, nil)
		if err != syscall.EINTR {
			return err
		}
	}
}
