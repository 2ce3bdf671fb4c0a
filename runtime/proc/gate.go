package proc

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// The -c child must be quiet until it execs the command: a probe that
// filters on cpid may see nothing of gotrace. A Go program cannot fork
// without exec, and a re-executed gotrace runs the Go runtime's start-up
// (cgroup files, its own binary, threads that wake up) where the probes
// can see it. So the child executes a gate instead: a static program of a
// few dozen instructions, made here from machine code for this
// architecture and executed from a sealed memfd. Its file descriptors:
//
//	gateFD    the read end of a pipe: one byte lets the command run; end of
//	          file (gotrace gave up before attaching) exits with status 1
//	reportFD  the write end of a pipe: "r" once the gate is waiting, then
//	          errno as 4 bytes if the command's execve fails (exit 127);
//	          end of file without them means the execve succeeded
//	selfFD    the gate program itself
//
// All three are made close-on-exec before "r" is written, so the command
// inherits none of them. Its arguments are the command's path, then the
// command's argv; the environment is passed on unchanged. Once "r" has
// been read, the gate is blocked in read(2): what a probe can see of the
// child after that is the read's return and then the execve of the
// command, as with bpftrace's forked child.
const (
	gateFD   = 3
	reportFD = 4
	selfFD   = 5
)

// gateReady is what the gate writes to reportFD once it waits on gateFD.
const gateReady = 'r'

// gateELF returns the gate program as a static ELF executable for
// machine: one loadable segment, readable and executable, holding its
// code, and a non-executable stack.
func gateELF(machine elf.Machine) ([]byte, error) {
	gateCode := gateCodes[machine]
	if gateCode == nil {
		return nil, fmt.Errorf("run a -c command: no gate program for %s", machine)
	}
	const (
		base     = 0x400000
		headSize = 64
		progSize = 56
		nprogs   = 2
		codeOff  = headSize + nprogs*progSize
	)
	size := uint64(codeOff + len(gateCode))
	var ident [elf.EI_NIDENT]byte
	copy(ident[:], elf.ELFMAG)
	ident[elf.EI_CLASS] = byte(elf.ELFCLASS64)
	ident[elf.EI_DATA] = byte(elf.ELFDATA2LSB)
	ident[elf.EI_VERSION] = byte(elf.EV_CURRENT)
	head := elf.Header64{
		Ident:     ident,
		Type:      uint16(elf.ET_EXEC),
		Machine:   uint16(machine),
		Version:   uint32(elf.EV_CURRENT),
		Entry:     base + codeOff,
		Phoff:     headSize,
		Ehsize:    headSize,
		Phentsize: progSize,
		Phnum:     nprogs,
	}
	progs := []elf.Prog64{{
		Type:   uint32(elf.PT_LOAD),
		Flags:  uint32(elf.PF_R | elf.PF_X),
		Vaddr:  base,
		Paddr:  base,
		Filesz: size,
		Memsz:  size,
		Align:  0x1000,
	}, {
		Type:  uint32(elf.PT_GNU_STACK),
		Flags: uint32(elf.PF_R | elf.PF_W),
		Align: 16,
	}}
	var b bytes.Buffer
	binary.Write(&b, binary.LittleEndian, head)
	binary.Write(&b, binary.LittleEndian, progs)
	b.Write(gateCode)
	return b.Bytes(), nil
}

// gateFile returns the gate program in a sealed memfd that anyone may
// execute (the child runs it after becoming the command's user).
func gateFile() (*os.File, error) {
	prog, err := gateELF(gateMachine)
	if err != nil {
		return nil, err
	}
	const flags = unix.MFD_CLOEXEC | unix.MFD_ALLOW_SEALING
	fd, err := unix.MemfdCreate("gotrace-gate", flags|unix.MFD_EXEC)
	if errors.Is(err, unix.EINVAL) {
		// Kernels before 6.3 know no MFD_EXEC; their memfds are executable.
		fd, err = unix.MemfdCreate("gotrace-gate", flags)
	}
	if err != nil {
		return nil, fmt.Errorf("create gate program: %w", err)
	}
	f := os.NewFile(uintptr(fd), "gotrace-gate")
	if _, err := f.Write(prog); err != nil {
		f.Close()
		return nil, fmt.Errorf("write gate program: %w", err)
	}
	if err := f.Chmod(0o555); err != nil {
		f.Close()
		return nil, fmt.Errorf("make gate program executable: %w", err)
	}
	const seals = unix.F_SEAL_SEAL | unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_WRITE
	if _, err := unix.FcntlInt(f.Fd(), unix.F_ADD_SEALS, seals); err != nil {
		f.Close()
		return nil, fmt.Errorf("seal gate program: %w", err)
	}
	return f, nil
}
