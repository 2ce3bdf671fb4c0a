package symbols

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/gotrace/gotrace/runtime/proc"
)

// processKey tells one process from another that later got its pid: the
// pid and the start time the kernel gives it (field 22 of
// /proc/PID/stat, in clock ticks since boot).
type processKey struct {
	pid   int
	start uint64
}

// processes are the mappings of the processes a trace has seen, kept so
// that their addresses are named after they exit: a map printed at the
// end, at an interval or on SIGUSR1 holds stacks of processes that may be
// gone. The caller holds Symbolizer.mu.
type processes struct {
	// maps are the latest mappings read of each process.
	maps map[processKey]Mappings
	// latest is the last process seen under each pid.
	latest map[int]processKey
	// threads is the process (thread group) of each thread id seen: a
	// stack carries the id of the thread that recorded it.
	threads map[int]int
	// starts are the start times of the processes seen under each pid,
	// in the order they were first seen: more than one when the pid was
	// reused during the trace.
	starts map[int][]uint64
}

// readStat returns the thread group id and the start time of thread (or
// process) tid, from /proc/TID/status and /proc/TID/stat.
func readStat(tid int) (tgid int, start uint64, err error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", tid))
	if err != nil {
		return 0, 0, fmt.Errorf("read process start: %w", err)
	}
	// The command name in parentheses may hold blanks and parentheses:
	// the fields that follow start after the last ')'.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, 0, fmt.Errorf("read process start: no command name in /proc/%d/stat", tid)
	}
	// After ")": state is field 3, starttime field 22.
	fields := strings.Fields(string(stat[i+1:]))
	if len(fields) < 20 {
		return 0, 0, fmt.Errorf("read process start: /proc/%d/stat has %d fields", tid, len(fields)+2)
	}
	if start, err = strconv.ParseUint(fields[19], 10, 64); err != nil {
		return 0, 0, fmt.Errorf("read process start: %w", err)
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", tid))
	if err != nil {
		return 0, 0, fmt.Errorf("read thread group: %w", err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "Tgid:"); ok {
			if tgid, err = strconv.Atoi(strings.TrimSpace(v)); err != nil {
				return 0, 0, fmt.Errorf("read thread group: %w", err)
			}
			return tgid, start, nil
		}
	}
	return 0, 0, fmt.Errorf("read thread group: no Tgid in /proc/%d/status", tid)
}

// Capture reads the mappings of the process that thread (or process) tid
// belongs to, the ids of its threads and the symbol tables of the files it
// maps, and keeps them for after it exits. It reports whether the process
// could be read (false once it is gone).
func (s *Symbolizer) Capture(tid int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.capture(tid, true)
	return ok
}

// capture is Capture with s.mu held; it returns the mappings read. It
// lists the process's threads only when threads is set: a stack's own
// thread is recorded without it.
func (s *Symbolizer) capture(tid int, threads bool) (Mappings, bool) {
	tgid, start, err := readStat(tid)
	if err != nil {
		return nil, false
	}
	ms := ProcessMappings(tgid)
	if len(ms) == 0 {
		// Exiting, or a kernel thread: nothing to name by.
		return nil, false
	}
	key := processKey{pid: tgid, start: start}
	if tgid != tid {
		// tid's own start time is its thread's: the process's is tgid's.
		if _, pstart, err := readStat(tgid); err == nil {
			key.start = pstart
		}
	}
	if s.onMappings != nil && !slices.Equal(s.procs.maps[key], ms) {
		s.onMappings(tgid, ms)
	}
	if _, seen := s.procs.maps[key]; !seen {
		s.procs.starts[tgid] = append(s.procs.starts[tgid], key.start)
	}
	s.procs.maps[key] = ms
	s.procs.latest[tgid] = key
	for _, m := range ms {
		// The symbol tables are read now, while the files are the ones
		// the process ran.
		s.file(m.Path)
	}
	s.procs.threads[tid] = tgid
	if !threads {
		return ms, true
	}
	if tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", tgid)); err == nil {
		for _, task := range tasks {
			if id, err := strconv.Atoi(task.Name()); err == nil {
				s.procs.threads[id] = tgid
			}
		}
	}
	return ms, true
}

// Refresh captures again every process seen that still runs, for the
// libraries it loaded and the threads it started since, and the processes
// they started (a -c command's wrapper starts the program traced); a trace
// calls it now and then. It returns true, to be called again.
func (s *Symbolizer) Refresh() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	// The rings are emptied now and then, so that they keep room.
	s.drain()
	for _, pid := range slices.Collect(maps.Keys(s.procs.latest)) {
		if _, ok := s.capture(pid, true); !ok {
			continue
		}
		for _, child := range proc.Descendants(pid) {
			if _, seen := s.procs.latest[child]; !seen {
				s.capture(child, true)
			}
		}
	}
	return true
}

// mappings returns the mappings of the process of thread tid: read now
// while it runs (and kept), else the last ones captured.
func (s *Symbolizer) mappings(tid int) (Mappings, bool) {
	if ms, ok := s.capture(tid, false); ok {
		return ms, true
	}
	// Gone: what the mapping records told (after an exec they replace
	// the /proc capture, which for -c may show the gate program), else
	// the last capture.
	s.drain()
	tgid, ok := s.procs.threads[tid]
	if !ok {
		tgid = tid
	}
	if ms, ok := s.capture(tgid, false); ok {
		// The thread is gone, its process runs.
		return ms, true
	}
	var captured Mappings
	if key, ok := s.procs.latest[tgid]; ok {
		captured = s.procs.maps[key]
	}
	return s.trackedMappings(tgid, captured)
}

// UserFrames returns the frame namer FormatStack takes for a user stack
// that thread tid recorded: through its process's mappings, read now or
// kept from when it ran. A frame of a process whose mappings were never
// read counts in Unmapped.
func (s *Symbolizer) UserFrames(tid int) func(addr uint64) (sym, file string, ok bool) {
	s.mu.Lock()
	ms, mapped := s.mappings(tid)
	s.mu.Unlock()
	return s.namer(ms, mapped)
}

// StackFrames returns the frame namer FormatStack takes for the user
// stack addrs that thread tid recorded, as UserFrames does, but through
// the mappings of the process that recorded it when tid's pid has had
// several: a pid reused during the trace, or a process that executed
// another program, leaves generations of mappings (kept by start time
// from /proc, and from the kernel's records), and the stack value holds
// only the thread id. The generation that maps the most of addrs is
// taken, the newest of those that map as many: address space layout
// randomisation places two processes' code apart, so the addresses of a
// stack fall in the mappings of the process that recorded it and seldom
// in another's.
func (s *Symbolizer) StackFrames(tid int, addrs []uint64) func(addr uint64) (sym, file string, ok bool) {
	s.mu.Lock()
	var best Mappings
	bestScore := -1
	for _, ms := range s.generations(tid) {
		if score := mappedCount(ms, addrs); score > bestScore {
			best, bestScore = ms, score
		}
	}
	s.mu.Unlock()
	return s.namer(best, len(best) > 0)
}

// mappedCount is how many of the frames addrs (up to the first 0) ms
// maps.
func mappedCount(ms Mappings, addrs []uint64) int {
	n := 0
	for _, addr := range addrs {
		if addr == 0 {
			break
		}
		if _, _, ok := ms.Find(addr); ok {
			n++
		}
	}
	return n
}

// generations returns the mappings the process of thread tid had, the
// newest first: as mappings reads them (now, or the last kept), then
// those of each earlier process under its pid read from /proc, then
// those the kernel's records told of before an exec or a reuse of the
// pid. The caller holds s.mu.
func (s *Symbolizer) generations(tid int) []Mappings {
	// The records of the processes that had the pid before.
	s.drain()
	var gens []Mappings
	if ms, ok := s.mappings(tid); ok {
		gens = append(gens, ms)
	}
	tgid, ok := s.procs.threads[tid]
	if !ok {
		tgid = tid
	}
	starts := s.procs.starts[tgid]
	for i := len(starts) - 1; i >= 0; i-- {
		gens = append(gens, s.procs.maps[processKey{pid: tgid, start: starts[i]}])
	}
	earlier := s.earlier[tgid]
	for i := len(earlier) - 1; i >= 0; i-- {
		gens = append(gens, earlier[i])
	}
	return gens
}

// namer names the frames of a process with mappings ms; mapped false says
// they were never read, and each frame counts in Unmapped.
func (s *Symbolizer) namer(ms Mappings, mapped bool) func(addr uint64) (sym, file string, ok bool) {
	return func(addr uint64) (string, string, bool) {
		s.mu.Lock()
		defer s.mu.Unlock()
		if !mapped {
			s.unmapped++
			return "", "", false
		}
		return s.frame(ms, addr)
	}
}

// Unmapped returns how many user frames printed as addresses because the
// mappings of their process could not be read (it exited before the trace
// saw it).
func (s *Symbolizer) Unmapped() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.unmapped
}
