package usdt

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// MappedObject is an ELF object (the executable or a shared object) that a
// process has mapped.
type MappedObject struct {
	// Path is the object's path as the process sees it, in its own mount
	// namespace: "/usr/lib/x86_64-linux-gnu/libc.so.6".
	Path string
	// OpenPath opens the same file from outside the process's mount
	// namespace: "/proc/PID/root" followed by Path.
	OpenPath string
}

// Mapping is one line of /proc/PID/maps: an address range of a process
// and what is mapped there.
type Mapping struct {
	// Start and End bound the mapped addresses; Offset is the file offset
	// mapped at Start.
	Start, End, Offset uint64
	// Perms are the mapping's permissions as the kernel writes them:
	// "r-xp".
	Perms string
	// Dev and Ino are the mapped file's device and inode, 0 for an
	// anonymous mapping.
	Dev, Ino uint64
	// Path is the mapped file's path in the process's mount namespace,
	// with " (deleted)" after it when the file is gone, a name in
	// brackets ("[heap]", "[vdso]") or "" for an anonymous mapping.
	Path string
}

// Executable reports whether the mapping's code may run.
func (m Mapping) Executable() bool { return len(m.Perms) > 2 && m.Perms[2] == 'x' }

// File reports whether a file is mapped, one that still exists.
func (m Mapping) File() bool {
	return strings.HasPrefix(m.Path, "/") && !strings.HasSuffix(m.Path, " (deleted)")
}

// Contains reports whether address addr is in the mapping.
func (m Mapping) Contains(addr uint64) bool { return addr >= m.Start && addr < m.End }

// ReadMappings reads every mapping of process (or thread) pid from
// /proc/PID/maps, in address order: the one reader of that file, which the
// plan, the listing of a process's probes and the symbolizer share.
func ReadMappings(pid int) ([]Mapping, error) {
	if pid <= 0 {
		return nil, fmt.Errorf("read the mappings of process %d: not a process id", pid)
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		return nil, fmt.Errorf("read the mappings of process %d: %w", pid, err)
	}
	ms, err := ParseMappings(data)
	if err != nil {
		return nil, fmt.Errorf("read the mappings of process %d: %w", pid, err)
	}
	return ms, nil
}

// ParseMappings parses the text of /proc/PID/maps. A line that is not
// "start-end perms offset major:minor inode [path]" is an error naming it.
func ParseMappings(data []byte) ([]Mapping, error) {
	var ms []Mapping
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for line := 1; sc.Scan(); line++ {
		m, ok := parseMapping(sc.Text())
		if !ok {
			return nil, fmt.Errorf("maps line %d: malformed: %q", line, sc.Text())
		}
		ms = append(ms, m)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return ms, nil
}

// parseMapping parses one line of /proc/PID/maps. The path may contain
// spaces, so it is all that follows the fifth field.
func parseMapping(text string) (Mapping, bool) {
	rest := text
	var fields [5]string
	for i := range fields {
		rest = strings.TrimLeft(rest, " ")
		end := strings.IndexByte(rest, ' ')
		if end < 0 {
			end = len(rest)
		}
		fields[i], rest = rest[:end], rest[end:]
	}
	lo, hi, ok1 := strings.Cut(fields[0], "-")
	major, minor, ok2 := strings.Cut(fields[3], ":")
	if !ok1 || !ok2 || len(fields[1]) != 4 {
		return Mapping{}, false
	}
	start, err1 := strconv.ParseUint(lo, 16, 64)
	end, err2 := strconv.ParseUint(hi, 16, 64)
	off, err3 := strconv.ParseUint(fields[2], 16, 64)
	maj, err4 := strconv.ParseUint(major, 16, 32)
	mnr, err5 := strconv.ParseUint(minor, 16, 32)
	ino, err6 := strconv.ParseUint(fields[4], 10, 64)
	if errors.Join(err1, err2, err3, err4, err5, err6) != nil {
		return Mapping{}, false
	}
	return Mapping{
		Start: start, End: end, Offset: off, Perms: fields[1],
		Dev: unix.Mkdev(uint32(maj), uint32(mnr)), Ino: ino,
		Path: strings.TrimLeft(rest, " "),
	}, true
}

// MappedObjects returns the executable and every shared object that process
// pid has mapped, read from /proc/PID/maps: each file that has at least one
// executable mapping, once, in address order. Deleted files and anonymous
// mappings are left out.
func MappedObjects(pid int) ([]MappedObject, error) {
	ms, err := ReadMappings(pid)
	if err != nil {
		return nil, fmt.Errorf("read mapped objects of process %d: %w", pid, err)
	}
	return Objects(ms, pid), nil
}

// Objects returns the objects among ms, the mappings of process pid, as
// MappedObjects does.
func Objects(ms []Mapping, pid int) []MappedObject {
	root := "/proc/" + strconv.Itoa(pid) + "/root"
	var objs []MappedObject
	seen := make(map[string]bool)
	for _, m := range ms {
		if !m.Executable() || !m.File() || seen[m.Path] {
			continue
		}
		seen[m.Path] = true
		objs = append(objs, MappedObject{Path: m.Path, OpenPath: root + m.Path})
	}
	return objs
}

// AddressMapped reports whether virtual address addr is in one of ms.
func AddressMapped(ms []Mapping, addr uint64) bool {
	for _, m := range ms {
		if m.Contains(addr) {
			return true
		}
	}
	return false
}
