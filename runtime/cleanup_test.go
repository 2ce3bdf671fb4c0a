package runtime

import (
	"bufio"
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gotrace/gotrace/internal/testenv"
	"github.com/gotrace/gotrace/usdt"
)

// textByte returns the byte at file offset off of bin as process pid sees
// it in memory: a uprobe replaces the first byte of its instruction with
// int3 there.
func textByte(t *testing.T, pid int, bin string, off uint64) byte {
	t.Helper()
	return memAt(t, pid, bin, off, 1, true)[0]
}

// memAt reads n bytes of process pid's memory where bin's file offset off
// is mapped (in an executable mapping when exec is set, else a writable
// one).
func memAt(t *testing.T, pid int, bin string, off uint64, n int, exec bool) []byte {
	t.Helper()
	b, err := readMem(pid, bin, off, n, exec)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// readMem is memAt for callers that cannot fail the test themselves
// (other goroutines).
func readMem(pid int, bin string, off uint64, n int, exec bool) ([]byte, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	perm := "w"
	if exec {
		perm = "x"
	}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || fields[5] != bin || !strings.Contains(fields[1], perm) {
			continue
		}
		bounds := strings.SplitN(fields[0], "-", 2)
		start, _ := strconv.ParseUint(bounds[0], 16, 64)
		end, _ := strconv.ParseUint(bounds[1], 16, 64)
		mapOff, _ := strconv.ParseUint(fields[2], 16, 64)
		if off < mapOff || off >= mapOff+end-start {
			continue
		}
		mem, err := os.Open(fmt.Sprintf("/proc/%d/mem", pid))
		if err != nil {
			return nil, err
		}
		defer mem.Close()
		b := make([]byte, n)
		if _, err := mem.ReadAt(b, int64(start+off-mapOff)); err != nil {
			return nil, err
		}
		return b, nil
	}
	return nil, fmt.Errorf("offset %#x of %s is not mapped %s in process %d", off, bin, perm, pid)
}

// symbolAddr returns the address of the symbol called name in bin, from
// its symbol table or, for a stripped file, its dynamic one.
func symbolAddr(t *testing.T, bin, name string) uint64 {
	t.Helper()
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil && !errors.Is(err, elf.ErrNoSymbols) {
		t.Fatal(err)
	}
	dyn, _ := f.DynamicSymbols()
	for _, s := range append(syms, dyn...) {
		if s.Name == name {
			return s.Value
		}
	}
	t.Fatalf("%s has no symbol %s", bin, name)
	return 0
}

// symbolOffset returns the address and the file offset of a function
// symbol.
func symbolOffset(t *testing.T, bin, name string) (addr, off uint64) {
	t.Helper()
	addr = symbolAddr(t, bin, name)
	f, err := usdt.OpenFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	off, ok := f.Offset(addr, true)
	if !ok {
		t.Fatalf("address %#x is not in an executable segment of %s", addr, bin)
	}
	return addr, off
}

// startInt3 builds testdata/int3.c and starts it; the process is killed
// when t ends.
func startInt3(t *testing.T) (bin string, target *exec.Cmd) {
	t.Helper()
	gcc := testenv.RequireTool(t, "gcc")
	bin = filepath.Join(t.TempDir(), "int3")
	if out, err := exec.Command(gcc, "-O2", "-o", bin, "testdata/int3.c").CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	target, _ = startFixture(t, bin)
	return bin, target
}

// TestRunCleanupAfterFailedAttach makes the second of two uprobes fail
// to attach (the kernel refuses to probe an int3): Run must fail with
// the reason, and the first uprobe must be gone from the running target,
// its instruction restored, with no BPF file left open.
func TestRunCleanupAfterFailedAttach(t *testing.T) {
	testenv.RequireRoot(t)
	bin, target := startInt3(t)
	trapAddr, _ := symbolOffset(t, bin, "trap")
	_, workOff := symbolOffset(t, bin, "work")
	before := textByte(t, target.Process.Pid, bin, workOff)
	src := fmt.Sprintf(`uprobe:%[1]s:work { @work = count(); } uprobe:%[1]s:%#[2]x { @trap = count(); }`, bin, trapAddr)
	_, _, err := runScript(t, context.Background(), src, Options{})
	if err == nil || !strings.Contains(err.Error(), "trap") {
		t.Fatalf("error %v, want the failure to attach to the int3", err)
	}
	if after := textByte(t, target.Process.Pid, bin, workOff); after != before || after == 0xcc {
		t.Errorf("first byte of work is %#x after Run, was %#x: the uprobe was left behind", after, before)
	}
}
