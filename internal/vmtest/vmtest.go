// Package vmtest boots Debian's own kernels in emulated machines (qemu,
// TCG: no KVM is needed) to run gotrace where this machine cannot: on a
// kernel with kprobes and BPF trampolines (fentry), and on arm64. It owns
// the guest: an initramfs built here (busybox, the files a test gives, the
// cases as shell scripts and an /init that runs them), qemu's command
// line, and the serial console from which each case's output and exit
// status are read between markers. The kernels and busybox come from
// Debian's packages, fetched once into a cache by hack/vmtest.sh
// (docs/vmtest.md).
package vmtest

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Arch is a kind of guest machine: the Go and Debian architecture it runs
// and how qemu emulates it.
type Arch struct {
	// Name is the Debian architecture ("amd64", "arm64"), also GOARCH and
	// the name of the arch's directory in the cache.
	Name string
	// QEMU is the emulator's program.
	QEMU string
	// Machine are qemu's flags for the board and CPU.
	Machine []string
	// Console is the kernel's name of the serial port qemu connects to
	// its standard output.
	Console string
}

// The guests the harness boots.
var (
	// AMD64 is a PC (i440FX, qemu's default) with qemu's own 64-bit CPU
	// model, started at the kernel's PVH entry; the 8250 UART is the
	// console.
	AMD64 = Arch{Name: "amd64", QEMU: "qemu-system-x86_64", Machine: []string{"-M", "pc"}, Console: "ttyS0"}
	// ARM64 is qemu's virt board with a Cortex-A57: the kernel boots
	// straight from qemu's loader and the PL011 UART is the console. The
	// A57 (ARMv8.0) is chosen over -cpu max, whose pointer
	// authentication TCG emulates slowly.
	ARM64 = Arch{Name: "arm64", QEMU: "qemu-system-aarch64", Machine: []string{"-M", "virt", "-cpu", "cortex-a57"}, Console: "ttyAMA0"}
)

// Arches are the guests by name.
var Arches = map[string]Arch{AMD64.Name: AMD64, ARM64.Name: ARM64}

// ErrUnavailable is wrapped by the errors that say the machine lacks what
// a guest needs (qemu, or the cached kernel and busybox): hack/setup.sh
// was not run, which tests report through testenv.
var ErrUnavailable = errors.New("VM harness unavailable")

// CacheDir is where hack/vmtest.sh keeps the kernels and busybox:
// $GOTRACE_VMTEST_CACHE, or /var/cache/gotrace-vmtest.
func CacheDir() string {
	if d := os.Getenv("GOTRACE_VMTEST_CACHE"); d != "" {
		return d
	}
	return "/var/cache/gotrace-vmtest"
}

// Assets are the files a guest of one architecture boots from.
type Assets struct {
	// Kernel is Debian's kernel for the architecture, as qemu boots it
	// fastest: amd64's unpacked vmlinux (a PVH entry), arm64's Image.
	Kernel string
	// KernelRelease is its release ("6.1.0-57-amd64").
	KernelRelease string
	// Busybox is Debian's busybox-static for the architecture.
	Busybox string
	// QEMU is the emulator's path.
	QEMU string
}

// Find returns arch's assets from the cache, or an error wrapping
// ErrUnavailable naming what is missing.
func Find(arch Arch) (Assets, error) {
	var a Assets
	var err error
	if a.QEMU, err = exec.LookPath(arch.QEMU); err != nil {
		return a, fmt.Errorf("%w: %s is not installed (hack/setup.sh installs it): %v", ErrUnavailable, arch.QEMU, err)
	}
	dir := filepath.Join(CacheDir(), arch.Name)
	a.Kernel = filepath.Join(dir, "kernel")
	a.Busybox = filepath.Join(dir, "busybox")
	for _, p := range []string{a.Kernel, a.Busybox} {
		if _, err := os.Stat(p); err != nil {
			return a, fmt.Errorf("%w: %v (hack/vmtest.sh fetch puts it there)", ErrUnavailable, err)
		}
	}
	rel, err := os.ReadFile(filepath.Join(dir, "release"))
	if err != nil {
		return a, fmt.Errorf("%w: %v (hack/vmtest.sh fetch writes it)", ErrUnavailable, err)
	}
	a.KernelRelease = strings.TrimSpace(string(rel))
	return a, nil
}

// A Case is a shell script the guest's /init runs with busybox's sh, its
// standard output and error collected together.
type Case struct {
	// Name identifies the case in the results; letters, digits, '-',
	// '_' and '.'.
	Name string
	// Script is the script's text. It runs in / with PATH=/bin and a
	// tmpfs on /tmp.
	Script string
}

// Result is what a case did.
type Result struct {
	// Output is the case's standard output and error, one "\n" a line.
	Output string
	// Exit is the script's exit status; 137 when the guest's timeout
	// killed it.
	Exit int
}

// A Guest is one boot: a machine, the files it holds and the cases it runs
// in order.
type Guest struct {
	Arch Arch
	// Files are put into the initramfs beside busybox and the cases.
	Files []Entry
	// Cases run one after another, each given CaseTimeout.
	Cases []Case
	// CaseTimeout bounds each case inside the guest (busybox's timeout);
	// 0 means five minutes.
	CaseTimeout time.Duration
	// Memory is the guest's RAM in MiB; 0 means 1024.
	Memory int
	// Console, when not nil, gets everything the serial console prints,
	// as it prints it.
	Console io.Writer
}

// Boot is what one boot produced.
type Boot struct {
	// Results are the cases' results by name; a case the guest never
	// finished has none.
	Results map[string]Result
	// Console is the whole serial console, "\r" removed.
	Console string
	// ToBoot is the time from starting qemu to /init's first line.
	ToBoot time.Duration
	// GuestUptime is the guest kernel's uptime at that line, in seconds.
	GuestUptime float64
	// Total is the time from starting qemu to its exit.
	Total time.Duration
}

var caseName = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)

// Run boots g, runs its cases and returns their results once the guest has
// powered itself off. ctx bounds the whole boot: qemu is killed when it
// ends, and when Run returns for any reason. An error says the guest did
// not finish its cases; a case that failed is a Result with its exit
// status, not an error.
func Run(ctx context.Context, g Guest) (*Boot, error) {
	a, err := Find(g.Arch)
	if err != nil {
		return nil, err
	}
	for _, c := range g.Cases {
		if !caseName.MatchString(c.Name) {
			return nil, fmt.Errorf("boot %s guest: case name %q: want letters, digits, '-', '_', '.'", g.Arch.Name, c.Name)
		}
	}
	dir, err := os.MkdirTemp("", "gotrace-vmtest-")
	if err != nil {
		return nil, fmt.Errorf("boot %s guest: %w", g.Arch.Name, err)
	}
	defer os.RemoveAll(dir)

	nonce := make([]byte, 8)
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("boot %s guest: %w", g.Arch.Name, err)
	}
	m := markers{tag: "@@vmtest-" + hex.EncodeToString(nonce)}
	busybox, err := os.ReadFile(a.Busybox)
	if err != nil {
		return nil, fmt.Errorf("boot %s guest: %w", g.Arch.Name, err)
	}
	entries := append(baseEntries(busybox, m.initScript(g)), g.Files...)
	for _, c := range g.Cases {
		entries = append(entries, Entry{Path: "/cases/" + c.Name, Mode: 0o755, Data: []byte(c.Script)})
	}
	initrd := filepath.Join(dir, "initrd.cpio")
	f, err := os.Create(initrd)
	if err != nil {
		return nil, fmt.Errorf("boot %s guest: %w", g.Arch.Name, err)
	}
	err = WriteCPIO(f, entries)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("boot %s guest: %w", g.Arch.Name, err)
	}

	mem := g.Memory
	if mem == 0 {
		mem = 1024
	}
	args := append([]string{}, g.Arch.Machine...)
	args = append(args,
		"-m", strconv.Itoa(mem), "-smp", "1",
		// No default devices (network card, VGA, disks): less to probe
		// at boot, and the serial port is the guest's only output.
		"-nodefaults", "-display", "none", "-serial", "stdio", "-no-reboot",
		"-kernel", a.Kernel, "-initrd", initrd,
		// quiet and loglevel=1 keep kernel messages off the console the
		// markers are read from; panic=-1 with -no-reboot ends qemu on a
		// panic instead of hanging until the deadline.
		"-append", "console="+g.Arch.Console+" quiet loglevel=1 panic=-1")

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cmd := exec.CommandContext(ctx, a.QEMU, args...)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("boot %s guest: %w", g.Arch.Name, err)
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("boot %s guest: start %s: %w", g.Arch.Name, a.QEMU, err)
	}
	b := &Boot{Results: map[string]Result{}}
	done, readErr := m.read(out, g.Console, b, start)
	waitErr := cmd.Wait()
	b.Total = time.Since(start)
	switch {
	case ctx.Err() != nil:
		return b, fmt.Errorf("boot %s guest: stopped after %v (%w); console:\n%s", g.Arch.Name, b.Total.Round(time.Second), context.Cause(ctx), tail(b.Console))
	case readErr != nil:
		return b, fmt.Errorf("boot %s guest: read console: %w", g.Arch.Name, readErr)
	case !done:
		return b, fmt.Errorf("boot %s guest: qemu ended (%v) before the cases did; stderr: %s; console:\n%s", g.Arch.Name, waitErr, stderr.String(), tail(b.Console))
	case waitErr != nil:
		return b, fmt.Errorf("boot %s guest: qemu: %w; stderr: %s", g.Arch.Name, waitErr, stderr.String())
	}
	return b, nil
}

// baseEntries are the members every guest has: busybox, the console
// device the kernel opens for /init, the mount points and the files
// gotrace reads about users.
func baseEntries(busybox []byte, init string) []Entry {
	return []Entry{
		{Path: "/init", Mode: 0o755, Data: []byte(init)},
		{Path: "/bin/busybox", Mode: 0o755, Data: busybox},
		{Path: "/dev/console", Mode: fs.ModeDevice | fs.ModeCharDevice | 0o600, Major: 5, Minor: 1},
		{Path: "/proc", Mode: fs.ModeDir | 0o555},
		{Path: "/sys", Mode: fs.ModeDir | 0o555},
		{Path: "/tmp", Mode: fs.ModeDir | fs.ModeSticky | 0o777},
		{Path: "/etc/passwd", Mode: 0o644, Data: []byte("root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n")},
		{Path: "/etc/group", Mode: 0o644, Data: []byte("root:x:0:\nnogroup:x:65534:\n")},
	}
}

// markers are the lines /init prints around each case: a tag with a
// random part, so that no case's output can be taken for one.
type markers struct{ tag string }

// initScript is the guest's /init: mount what gotrace reads, say that the
// guest is up, run each case between its markers, and power off.
func (m markers) initScript(g Guest) string {
	timeout := g.CaseTimeout
	if timeout == 0 {
		timeout = 5 * time.Minute
	}
	var s strings.Builder
	fmt.Fprintf(&s, `#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin HOME=/ TERM=dumb
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tmpfs tmpfs /tmp
mount -t tracefs tracefs /sys/kernel/tracing
mount -t debugfs debugfs /sys/kernel/debug
ulimit -l unlimited
echo "%s booted $(cut -d' ' -f1 /proc/uptime)"
`, m.tag)
	for _, c := range g.Cases {
		// The output goes to a file and then to the console, after the
		// case: the console is also the kernel's, and a message it
		// prints cannot fall into the middle of a case's line. It
		// reaches the file through a pipe: were the file the case's
		// standard output, a -c command such as coreutils' cat, which
		// writes with copy_file_range(2), would write at a file position
		// that write(2) from gotrace moves at the same time, and one
		// would overwrite the other (seen under load; a pipe has no
		// position).
		fmt.Fprintf(&s, "echo '%s begin %s'\n", m.tag, c.Name)
		fmt.Fprintf(&s, "{ timeout -s KILL %d sh /cases/%s 2>&1 </dev/null; echo $? >/tmp/case.rc; } | cat >/tmp/case.out; rc=$(cat /tmp/case.rc)\n", int(timeout.Seconds()), c.Name)
		fmt.Fprintf(&s, "cat /tmp/case.out\necho\necho \"%s end %s $rc\"\n", m.tag, c.Name)
	}
	fmt.Fprintf(&s, "echo '%s done'\nsync\npoweroff -f\n", m.tag)
	return s.String()
}

// read follows the console until qemu closes it, filling b, and reports
// whether /init said it was done.
func (m markers) read(r io.Reader, console io.Writer, b *Boot, start time.Time) (bool, error) {
	var all strings.Builder
	var cur *strings.Builder
	var name string
	done := false
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		all.WriteString(line)
		all.WriteByte('\n')
		if console != nil {
			fmt.Fprintln(console, line)
		}
		rest, isMarker := strings.CutPrefix(line, m.tag+" ")
		// A kernel message or escape sequence may precede a marker on
		// its line.
		if !isMarker {
			if i := strings.Index(line, m.tag+" "); i >= 0 {
				rest, isMarker = line[i+len(m.tag)+1:], true
			}
		}
		if !isMarker {
			if cur != nil {
				cur.WriteString(line)
				cur.WriteByte('\n')
			}
			continue
		}
		f := strings.Fields(rest)
		switch {
		case len(f) == 2 && f[0] == "booted":
			b.ToBoot = time.Since(start)
			b.GuestUptime, _ = strconv.ParseFloat(f[1], 64)
		case len(f) == 2 && f[0] == "begin":
			name, cur = f[1], &strings.Builder{}
		case len(f) == 3 && f[0] == "end" && cur != nil && f[1] == name:
			rc, _ := strconv.Atoi(f[2])
			// The echo after cat ends an output without a newline; it
			// is not the case's.
			out := strings.TrimSuffix(cur.String(), "\n")
			b.Results[name] = Result{Output: out, Exit: rc}
			cur = nil
		case len(f) == 1 && f[0] == "done":
			done = true
		}
	}
	b.Console = all.String()
	return done, sc.Err()
}

// tail is the end of a console log, for an error message.
func tail(s string) string {
	const keep = 4000
	if len(s) > keep {
		return "..." + s[len(s)-keep:]
	}
	return s
}
