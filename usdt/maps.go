package usdt

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
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

// MappedObjects returns the executable and every shared object that process
// pid has mapped, read from /proc/PID/maps: each file that has at least one
// executable mapping, once, in address order. Deleted files and anonymous
// mappings are left out.
func MappedObjects(pid int) ([]MappedObject, error) {
	if pid <= 0 {
		return nil, fmt.Errorf("read mapped objects of process %d: not a process id", pid)
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		return nil, fmt.Errorf("read mapped objects of process %d: %w", pid, err)
	}
	objs, err := parseMaps(data, pid)
	if err != nil {
		return nil, fmt.Errorf("read mapped objects of process %d: %w", pid, err)
	}
	return objs, nil
}

// parseMaps parses the text of /proc/PID/maps.
func parseMaps(data []byte, pid int) ([]MappedObject, error) {
	root := "/proc/" + strconv.Itoa(pid) + "/root"
	var objs []MappedObject
	seen := make(map[string]bool)
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for line := 1; sc.Scan(); line++ {
		// address perms offset dev inode [path]; the path may contain
		// spaces, so it is what follows the fifth field.
		text := sc.Text()
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
		if fields[4] == "" || len(fields[1]) != 4 {
			return nil, fmt.Errorf("maps line %d: malformed: %q", line, text)
		}
		path := strings.TrimLeft(rest, " ")
		if fields[1][2] != 'x' || !strings.HasPrefix(path, "/") || strings.HasSuffix(path, " (deleted)") {
			continue
		}
		if seen[path] {
			continue
		}
		seen[path] = true
		objs = append(objs, MappedObject{Path: path, OpenPath: root + path})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return objs, nil
}

// AddressMapped reports whether virtual address addr is in a mapping of
// process pid, read from /proc/PID/maps.
func AddressMapped(pid int, addr uint64) (bool, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		return false, fmt.Errorf("read the mappings of process %d: %w", pid, err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		span, _, _ := strings.Cut(line, " ")
		lo, hi, ok := strings.Cut(span, "-")
		if !ok {
			continue
		}
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 == nil && err2 == nil && addr >= start && addr < end {
			return true, nil
		}
	}
	return false, nil
}
