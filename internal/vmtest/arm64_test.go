package vmtest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gotrace/gotrace/internal/fixture"
	"github.com/gotrace/gotrace/internal/regtest"
	"github.com/gotrace/gotrace/internal/testenv"
)

// netmsgScript is scripts/netmsg.bt with the header the differential
// test gives it (testdata/diff/scripts/netmsg.header): the fixture's
// arguments and the masks of its timestamps.
func netmsgScript(t *testing.T) *fixture.Script {
	t.Helper()
	root, err := regtest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(root, "scripts", "netmsg.bt")
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	header, err := os.ReadFile(filepath.Join(root, "testdata", "diff", "scripts", "netmsg.header"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := fixture.ParseHeader(path, string(header))
	if err != nil {
		t.Fatal(err)
	}
	s.Source = string(src)
	return s
}

// TestARM64 runs gotrace in an emulated arm64 with Debian's arm64 kernel:
// scripts/netmsg.bt on the fixture cross-built for arm64 must print what
// it prints on this x86-64 machine, timestamps masked. The whole suite
// adds the kernel probe cases, on arm64's pt_regs.
func TestARM64(t *testing.T) {
	t.Parallel()
	Require(t, ARM64)
	testenv.RequireRoot(t) // the x86-64 reference run
	s := netmsgScript(t)
	guestFixture := "/tmp/fixture.out"
	cases := []vmCase{{
		Case:  Case{Name: "netmsg", Script: "cd /work && gotrace -c '" + s.Command("--output", guestFixture) + "' netmsg.bt 2>/tmp/netmsg.err || { cat /tmp/netmsg.err; exit 1; }"},
		smoke: true,
	}, {
		Case: Case{Name: "list-usdt", Script: "gotrace -l 'usdt:/work/bitcoind:net:*'; gotrace -e 'usdt:/work/bitcoind:net:inbound_message { printf(\"%d %s %d\\n\", (int64)arg0, str(arg3), reg(\"r0\") == arg0); exit(); }' -c /work/bitcoind"},
		want: []string{`usdt:/work/bitcoind:net:inbound_message`, `usdt:/work/bitcoind:net:outbound_message`, `[0-9]+ [a-z]+ 1`},
	}}
	for _, c := range kernelCases {
		c.smoke = false
		if c.Name == "kfunc" || c.Name == "kfunc-wildcard" {
			// Debian's arm64 6.1 has no BPF trampolines (arm64 got
			// them with direct calls in 6.4): gotrace must say so.
			c.want = []string{`ERROR: attach kfunc:do_sys_open[a-z0-9]*: the kernel refuses fentry/fexit programs: .*`}
			c.exit = 1
		}
		cases = append(cases, c)
	}
	libs := append(arm64Libs(t),
		File(t, fixture.BuildARM64(t, s.Variant), "/work/bitcoind"),
		Entry{Path: "/work/netmsg.bt", Mode: 0o644, Data: []byte(s.Source)},
	)
	if All() {
		// The builtin cases' fixtures: the smoke set builds none.
		o0, nopie := fixture.BuildARM64(t, "bitcoind-O0"), fixture.BuildARM64(t, "bitcoind-nopie")
		cases = append(cases, arm64BuiltinCases(t, nopie)...)
		libs = append(libs, File(t, o0, "/work/o0/bitcoind"), File(t, nopie, "/work/nopie/bitcoind"))
	}
	b := runCases(t, ARM64, cases, libs...)

	guest := b.Result(t, "netmsg")
	if guest.Exit != 0 {
		t.Fatalf("netmsg.bt in the arm64 guest: exit %d:\n%s", guest.Exit, guest.Output)
	}
	host := hostNetmsg(t, s)
	if g, h := s.Normalize(guest.Output), s.Normalize(host); g != h {
		t.Errorf("netmsg.bt on arm64 and on x86-64 differ, timestamps masked:\n--- arm64\n%s\n--- x86-64\n%s", g, h)
	}
	for _, e := range s.Expect {
		n := 0
		for _, l := range strings.Split(guest.Output, "\n") {
			if e.Re.MatchString(l) {
				n++
			}
		}
		if n != e.Count {
			t.Errorf("arm64 output has %d lines matching %v, want %d", n, e.Re, e.Count)
		}
	}
}

// arm64BuiltinCases check the builtins that depend on the architecture in
// the arm64 guest, each by its markers: uaddr against the symbol table of
// the arm64 build at nopie (read here with debug/elf), ustack, usym and
// func on the -O0 fixture (frame records everywhere but in leaf
// functions), sargN at arm64's stack pointer, reg() by arm64's names,
// tracepoint args with arm64's system call numbers named by
// syscall_name(), and kstack in a kprobe.
func arm64BuiltinCases(t *testing.T, nopie string) []vmCase {
	blocks, gotUSR1 := symbolValue(t, nopie, "blocks"), symbolValue(t, nopie, "got_usr1")
	// The fixture's command with its own lines out of the case's output;
	// its argc is 7 (sarg).
	run := func(bin string) string {
		return `-c "` + bin + ` --rounds 1 --blocks 2 --output /tmp/fixture.out"`
	}
	return []vmCase{{
		// Data symbols at their link-time addresses, read through.
		Case: Case{Name: "uaddr", Script: `gotrace -e 'usdt:/work/nopie/bitcoind:validation:block_connected { printf("%p %p %d\n", uaddr("blocks"), uaddr("got_usr1"), *uaddr("got_usr1")); exit(); }' ` + run("/work/nopie/bitcoind")},
		want: []string{fmt.Sprintf("0x%x 0x%x 0", blocks, gotUSR1)},
	}, {
		// A frame for each caller down to _start, but for the leaf's
		// (tp_block_connected): arm64's gcc keeps no frame record in a
		// leaf function, and the kernel's unwinder follows frame
		// records only, not the link register.
		Case: Case{Name: "ustack", Script: `gotrace -e 'usdt:/work/o0/bitcoind:validation:block_connected { printf("%s|\n", ustack); exit(); }' ` + run("/work/o0/bitcoind")},
		want: []string{
			`        emit_validation_block_connected\+[0-9]+`,
			`        CChainState::ConnectBlock\(CBlock const&, BlockValidationState&, CBlockIndex\*, CCoinsViewCache&, CChainParams const&, bool\)\+[0-9]+`,
			`        phase_blocks\+[0-9]+`, `        run\+[0-9]+`, `        main\+[0-9]+`,
			`        __libc_start_main\+[0-9]+`, `        _start\+[0-9]+`,
		},
	}, {
		// At -O2 too: arm64's gcc keeps frame records in the functions
		// that call others although -fomit-frame-pointer is on at -O2,
		// where x86-64's stack from this probe is its first frame
		// alone. ConnectBlock and run are inlined there.
		Case: Case{Name: "ustack-O2", Script: `gotrace -e 'usdt:/work/bitcoind:validation:block_connected { printf("%s|\n", ustack); exit(); }' ` + run("/work/bitcoind")},
		want: []string{
			`        emit_validation_block_connected\+[0-9]+`, `        phase_blocks\+[0-9]+`, `        main\+[0-9]+`,
			`        __libc_start_main\+[0-9]+`, `        _start\+[0-9]+`,
		},
	}, {
		// A jump past more than 32767 instructions needs the long jump
		// (BPF_JMP32 | BPF_JA), which arm64's JIT learnt in 6.6: 6.1's
		// verifier accepts the program and its JIT refuses it
		// (ENOTSUPP), which gotrace must say as such. nsecs keeps the
		// verifier from pruning the jump as dead.
		Case: Case{Name: "long-jump", Script: `gotrace -e 'BEGIN { $n = 0; if (nsecs > 0) { ` + strings.Repeat("unroll(100) { $n = $n * 3 + 1; $n = $n * 3 + 1; $n = $n * 3 + 1; } ", 24) + `} printf("%d\n", $n); exit(); }'`},
		want: []string{`ERROR: the kernel refused program prog0 after its verifier accepted it \(errno 524; the kernel's log, dmesg, may say why\); the end of its log:`},
		exit: 1,
	}, {
		// main's return value, read from x0 at the return.
		Case: Case{Name: "uretprobe", Script: `gotrace -e 'uretprobe:/work/o0/bitcoind:main { printf("main returned %d\n", retval); }' ` + run("/work/o0/bitcoind")},
		want: []string{`main returned 0`},
	}, {
		// At a function's first instruction pc is the function, x30 its
		// return address in the caller, sp 16-byte aligned; r0 is arg0.
		Case: Case{Name: "reg-func-usym", Script: `gotrace -e 'uprobe:/work/o0/bitcoind:phase_blocks { printf("%s %s %s %d %d\n", func, usym(reg("pc")), usym(reg("r30")), reg("r0") == arg0, reg("sp") % 16); exit(); }' ` + run("/work/o0/bitcoind")},
		want: []string{`phase_blocks phase_blocks run 1 0`},
	}, {
		// x86-64's names are no arm64 register.
		Case: Case{Name: "reg-unknown", Script: `gotrace -e 'uprobe:/work/bitcoind:main { print(reg("ax")); exit(); }'`},
		want: []string{`stdin:1:[0-9]+-[0-9]+: ERROR: 'ax' is not a valid register on this architecture \(aarch64\)`},
		exit: 1,
	}, {
		// _start calls __libc_start_main with the stack as the kernel
		// left it: argc at sp, stack_end (x6) equal to sp. sarg0 is
		// read at sp itself on arm64 (above the return address on
		// x86-64).
		Case: Case{Name: "sarg", Script: `gotrace -e 'uprobe:/lib/aarch64-linux-gnu/libc.so.6:__libc_start_main { printf("sarg0 %d argc %d %d\n", sarg0, arg1, arg6 - reg("sp")); exit(); }' ` + run("/work/bitcoind")},
		want: []string{`sarg0 7 argc 7 0`},
	}, {
		// openat is 56 on arm64 (257 on x86-64), close 57. The int
		// dfd's 8-byte slot holds the register as the C library set
		// it: arm64's glibc sign-extends AT_FDCWD, x86-64's does not
		// (4294967196 there).
		Case: Case{Name: "tracepoint-syscalls", Script: writeMarker + `gotrace -e 'tracepoint:syscalls:sys_enter_openat /comm == "cat"/ { printf("openat %s %d\n", str(args->filename), args->dfd); } tracepoint:raw_syscalls:sys_enter /comm == "cat"/ { @[syscall_name(args->id)] = count(); @n[args->id] = count(); }' ` + catMarker},
		want: []string{`openat ` + marker + ` -100`, `gotrace-vm-marker-text`, `@\[openat\]: [0-9]+`, `@\[close\]: [0-9]+`, `@n\[56\]: [0-9]+`},
	}, {
		// do_sys_openat2+0 is reached from invoke_syscall: the
		// syscall's wrapper and do_sys_open end in tail calls, which
		// leave no frame.
		Case: Case{Name: "kstack", Script: writeMarker + `gotrace -e 'kprobe:do_sys_openat2 /comm == "cat"/ { printf("%s|\n", kstack); exit(); }' ` + catMarker},
		want: []string{`\s+do_sys_openat2\+0`, `\s+invoke_syscall\+[0-9]+`, `\s+el0_svc\+[0-9]+`, `\s+el0t_64_sync\+[0-9]+`},
	}}
}

// arm64Libs are the guest's C library, from Debian's cross toolchain, at
// the paths an arm64 Debian has them: the fixture is linked against it.
func arm64Libs(t *testing.T) []Entry {
	return []Entry{
		File(t, "/usr/aarch64-linux-gnu/lib/ld-linux-aarch64.so.1", "/lib/ld-linux-aarch64.so.1"),
		File(t, "/usr/aarch64-linux-gnu/lib/libc.so.6", "/lib/aarch64-linux-gnu/libc.so.6"),
	}
}

// hostNetmsg runs netmsg.bt with gotrace on this machine on the x86-64
// fixture, in a directory of its own, and returns its standard output.
func hostNetmsg(t *testing.T, s *fixture.Script) string {
	t.Helper()
	dir := t.TempDir()
	gt := Gotrace(t, "amd64")
	if err := os.WriteFile(filepath.Join(dir, "gotrace"), gt.Data, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := fixture.Copy(fixture.Build(t, s.Variant), dir); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "netmsg.bt"), []byte(s.Source), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(dir, "gotrace"), "-c", s.Command("--output", filepath.Join(dir, "fixture.out")), "netmsg.bt")
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("netmsg.bt on this machine: %v\n%s", err, stderr.String())
	}
	return strings.TrimRight(string(out), "\n") + "\n"
}
