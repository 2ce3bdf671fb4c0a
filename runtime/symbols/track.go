package symbols

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/gotrace/gotrace/internal/pollfd"
)

// trackerRingPages is the data size of each CPU's ring, in pages (a power
// of two, as perf requires): a few thousand mapping records, drained at
// every Refresh and every lookup.
const trackerRingPages = 64

// tracker reads the mapping records of a dummy perf event, the way perf
// record keeps the memory maps of what it profiles: the kernel writes a
// record for every executable mapping, exec, fork and exit while they
// happen, so the mappings of a process that exits before anyone reads
// /proc/PID/maps are still known.
type tracker struct {
	// fds are the perf events; rings the ring of each CPU (the other
	// events of a CPU write into its first event's ring).
	fds   []int
	rings []*ring
	// wakers are non-blocking duplicates of each ring's event in Go's
	// poller: the kernel makes one readable when its ring is half full
	// (the watermark), and a goroutine drains the rings then, so that a
	// burst of processes between two Refreshes fills no ring.
	wakers []*os.File
}

// ring is one mmapped perf ring buffer.
type ring struct {
	mem  []byte
	meta *unix.PerfEventMmapPage
	data []byte
}

// trackedProcess is what the records told of one process.
type trackedProcess struct {
	maps Mappings
	// complete says the process forked or executed under tracking, so
	// maps hold all its code; otherwise they add to a capture from
	// /proc.
	complete bool
}

// Track starts keeping the mappings of process pid and the processes it
// starts from the kernel's mapping records (pid 0: every process). Its
// threads that run now are followed; those they start are inherited.
// Close stops it.
func (s *Symbolizer) Track(pid int) error {
	cpus, err := onlineCPUs()
	if err != nil {
		return err
	}
	targets := []int{-1}
	if pid != 0 {
		targets = threadsOf(pid)
	}
	tr := &tracker{}
	for _, cpu := range cpus {
		first := -1
		for _, target := range targets {
			fd, err := openMappingEvent(target, cpu, pid != 0)
			if err != nil {
				if errors.Is(err, unix.ESRCH) {
					// The thread ended since it was listed.
					continue
				}
				tr.close()
				return err
			}
			tr.fds = append(tr.fds, fd)
			if first < 0 {
				first = fd
				r, err := mapRing(fd)
				if err != nil {
					tr.close()
					return err
				}
				tr.rings = append(tr.rings, r)
				waker, err := pollfd.Dup(fd, "mapping records")
				if err != nil {
					tr.close()
					return err
				}
				tr.wakers = append(tr.wakers, waker)
				continue
			}
			if err := unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_SET_OUTPUT, first); err != nil {
				tr.close()
				return fmt.Errorf("share mapping record ring: %w", err)
			}
		}
	}
	for _, fd := range tr.fds {
		if err := unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_ENABLE, 0); err != nil {
			tr.close()
			return fmt.Errorf("enable mapping records: %w", err)
		}
	}
	// Without a target every process that runs now is a start state,
	// read after the events are on so that no mapping falls between:
	// only its mappings, the symbol tables when a frame is named (a -p
	// target's are read by Capture).
	var running map[int]Mappings
	if pid == 0 {
		running = runningProcesses()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tracker != nil {
		s.tracker.close()
	}
	s.tracker = tr
	for _, w := range tr.wakers {
		go s.drainWhenWoken(w)
	}
	for p, ms := range running {
		if _, ok := s.tracked[p]; !ok {
			s.tracked[p] = &trackedProcess{maps: ms}
			if s.onMappings != nil {
				s.onMappings(p, ms)
			}
		}
	}
	return nil
}

// runningProcesses returns the executable file mappings of every process
// that runs, by pid.
func runningProcesses() map[int]Mappings {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	running := map[int]Mappings{}
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ms := ProcessMappings(p); len(ms) > 0 {
			running[p] = ms
		}
	}
	return running
}

// Close stops tracking mappings; what was recorded is kept.
func (s *Symbolizer) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tracker != nil {
		s.drain()
		s.tracker.close()
		s.tracker = nil
	}
	return nil
}

// openMappingEvent opens a disabled dummy software event on cpu for thread
// tid (-1: every thread) that records mappings, execs, forks and exits,
// inherited by the children the thread starts when inherit is set.
func openMappingEvent(tid, cpu int, inherit bool) (int, error) {
	attr := unix.PerfEventAttr{
		Type:        unix.PERF_TYPE_SOFTWARE,
		Config:      unix.PERF_COUNT_SW_DUMMY,
		Size:        uint32(unsafe.Sizeof(unix.PerfEventAttr{})),
		Sample_type: unix.PERF_SAMPLE_TIME,
		Bits: unix.PerfBitDisabled | unix.PerfBitMmap | unix.PerfBitMmap2 | unix.PerfBitComm | unix.PerfBitCommExec |
			unix.PerfBitTask | unix.PerfBitSampleIDAll | unix.PerfBitWatermark,
		// Readable (tracker.wakers) once half the ring is written.
		Wakeup: uint32(trackerRingPages * os.Getpagesize() / 2),
	}
	if inherit {
		attr.Bits |= unix.PerfBitInherit
	}
	fd, err := unix.PerfEventOpen(&attr, tid, cpu, -1, unix.PERF_FLAG_FD_CLOEXEC)
	if err != nil {
		return -1, fmt.Errorf("open mapping records of thread %d on CPU %d: %w", tid, cpu, err)
	}
	return fd, nil
}

// mapRing maps the ring buffer of perf event fd.
func mapRing(fd int) (*ring, error) {
	page := os.Getpagesize()
	mem, err := unix.Mmap(fd, 0, (1+trackerRingPages)*page, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("map mapping record ring: %w", err)
	}
	return &ring{mem: mem, meta: (*unix.PerfEventMmapPage)(unsafe.Pointer(&mem[0])), data: mem[page:]}, nil
}

// read appends the records waiting in r to recs and frees their room; a
// record that does not parse is skipped and counted in bad.
func (r *ring) read(recs []perfRecord, bad *int) []perfRecord {
	head := atomic.LoadUint64(&r.meta.Data_head)
	tail := r.meta.Data_tail
	size := uint64(len(r.data))
	var buf []byte
	for tail < head {
		// A record may wrap around the end of the ring: its header first,
		// then the whole record, are copied out.
		hdr := r.copyOut(buf[:0], tail, recordHeaderSize)
		n := uint64(hdr[6]) | uint64(hdr[7])<<8
		if n < recordHeaderSize || n > head-tail || n > size {
			// A corrupt header: the rest cannot be framed.
			*bad++
			tail = head
			break
		}
		buf = r.copyOut(hdr[:0], tail, n)
		if rec, err := parseRecord(buf); err != nil {
			*bad++
		} else if rec.kind != recordOther {
			recs = append(recs, rec)
		}
		tail += n
	}
	atomic.StoreUint64(&r.meta.Data_tail, tail)
	return recs
}

// copyOut appends the n bytes of the ring at position pos to buf.
func (r *ring) copyOut(buf []byte, pos, n uint64) []byte {
	size := uint64(len(r.data))
	start := pos % size
	if start+n <= size {
		return append(buf, r.data[start:start+n]...)
	}
	buf = append(buf, r.data[start:]...)
	return append(buf, r.data[:n-(size-start)]...)
}

// close unmaps the rings and closes the events.
func (tr *tracker) close() {
	// First the wakers: their goroutines return, and none drains a ring
	// unmapped below.
	for _, w := range tr.wakers {
		w.Close()
	}
	for _, r := range tr.rings {
		unix.Munmap(r.mem)
	}
	for _, fd := range tr.fds {
		unix.Close(fd)
	}
	tr.rings, tr.fds, tr.wakers = nil, nil, nil
}

// drainWhenWoken drains the rings each time the kernel makes waker
// readable (a ring reached its watermark), until waker is closed.
func (s *Symbolizer) drainWhenWoken(waker *os.File) {
	conn, err := waker.SyscallConn()
	if err != nil {
		return
	}
	for {
		woken := false
		err := conn.Read(func(uintptr) bool {
			// The first call comes before any wait: wait.
			done := woken
			woken = true
			return done
		})
		if err != nil {
			return
		}
		s.Drain()
	}
}

// Drain applies the mapping records waiting in the rings now, without
// reading /proc again as Refresh does: a listener (OnMappings) then learns
// a new process's mappings sooner. It returns true, to be called again.
func (s *Symbolizer) Drain() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.drain()
	return true
}

// drain applies the records waiting in every ring, in the order they
// happened (a process moves between CPUs). The caller holds s.mu.
func (s *Symbolizer) drain() {
	if s.tracker == nil {
		return
	}
	var recs []perfRecord
	for _, r := range s.tracker.rings {
		recs = r.read(recs, &s.badRecords)
	}
	slices.SortStableFunc(recs, func(a, b perfRecord) int { return cmp.Compare(a.time, b.time) })
	for _, rec := range recs {
		s.apply(rec)
	}
	if s.onMappings == nil {
		return
	}
	changed := map[int]bool{}
	for _, rec := range recs {
		if rec.kind == recordExec || rec.kind == recordFork && rec.pid != rec.ppid || rec.kind == recordMmap {
			changed[rec.pid] = true
		}
	}
	for _, pid := range slices.Sorted(maps.Keys(changed)) {
		var captured Mappings
		if key, ok := s.procs.latest[pid]; ok {
			captured = s.procs.maps[key]
		}
		ms, _ := s.trackedMappings(pid, captured)
		s.onMappings(pid, ms)
	}
}

// apply keeps what record rec says of its process. The caller holds s.mu.
func (s *Symbolizer) apply(rec perfRecord) {
	switch rec.kind {
	case recordLost:
		s.lostRecords += rec.lost
	case recordExec:
		// The process runs a new program: its old mappings are gone, and
		// the records that follow map all of the new one's code.
		s.keepEarlier(rec.pid)
		s.tracked[rec.pid] = &trackedProcess{complete: true}
		s.procs.threads[rec.tid] = rec.pid
	case recordFork:
		s.procs.threads[rec.tid] = rec.pid
		if rec.pid == rec.ppid {
			// A new thread of the same process.
			return
		}
		// A new process starts with its parent's mappings.
		parent, tracked := s.tracked[rec.ppid]
		var captured Mappings
		if key, ok := s.procs.latest[rec.ppid]; ok {
			captured = s.procs.maps[key]
		}
		child := &trackedProcess{complete: tracked || captured != nil}
		if tracked {
			child.maps = slices.Clone(parent.maps)
		}
		if !tracked || !parent.complete {
			child.maps = append(child.maps, captured...)
		}
		// A process that had the pid before is gone: the stacks it
		// recorded keep its mappings.
		s.keepEarlier(rec.pid)
		s.tracked[rec.pid] = child
	case recordMmap:
		s.procs.threads[rec.tid] = rec.pid
		if rec.prot&unix.PROT_EXEC == 0 || !isFilePath(rec.mapping.Path) {
			return
		}
		m, ok := s.openMapped(rec.pid, rec.mapping)
		if !ok {
			return
		}
		tp, ok := s.tracked[rec.pid]
		if !ok {
			tp = &trackedProcess{}
			s.tracked[rec.pid] = tp
		}
		// A new mapping replaces what it overlaps.
		tp.maps = slices.DeleteFunc(tp.maps, func(old Mapping) bool { return old.Start < m.End && m.Start < old.End })
		tp.maps = append(tp.maps, m)
	}
}

// maxEarlier is how many generations of mappings before the tracked one
// are kept of a pid (Symbolizer.earlier): a shell's child is a copy of
// the shell until it executes its program, and a pid comes back only
// after pid_max others.
const maxEarlier = 4

// keepEarlier keeps the mappings the records told of process pid, which
// is about to execute another program or whose pid goes to a new
// process, among its earlier generations. The caller holds s.mu.
func (s *Symbolizer) keepEarlier(pid int) {
	if _, ok := s.tracked[pid]; !ok {
		return
	}
	var captured Mappings
	if key, ok := s.procs.latest[pid]; ok {
		captured = s.procs.maps[key]
	}
	ms, ok := s.trackedMappings(pid, captured)
	if !ok {
		return
	}
	earlier := append(s.earlier[pid], ms)
	s.earlier[pid] = earlier[max(0, len(earlier)-maxEarlier):]
}

// isFilePath tells a mapped file's path from the names the kernel gives
// anonymous mappings ("[vdso]", "//anon").
func isFilePath(path string) bool {
	return len(path) > 1 && path[0] == '/' && path[1] != '/'
}

// openMapped reads the symbol table of the file that mapping m of process
// pid maps, now, while it most likely still is at its path. The file at
// the path must be the one mapped (same device and inode): otherwise,
// while the process runs, the mapped file itself is read through
// /proc/PID/map_files; failing that the mapping is not kept (its frames
// print as addresses rather than with another file's names).
func (s *Symbolizer) openMapped(pid int, m Mapping) (Mapping, bool) {
	if m.Ino == 0 || sameFile(m.Path, m) {
		return m, s.file(m.Path) != nil
	}
	m.Path = fmt.Sprintf("/proc/%d/map_files/%x-%x", pid, m.Start, m.End)
	if !sameFile(m.Path, m) {
		return m, false
	}
	return m, s.file(m.Path) != nil
}

// sameFile reports whether path is the file of mapping m.
func sameFile(path string, m Mapping) bool {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return false
	}
	return st.Ino == m.Ino && st.Dev == m.Dev
}

// trackedMappings returns the mappings of process pid the records told,
// on top of capture (what /proc showed when it was last read, if ever).
// The caller holds s.mu.
func (s *Symbolizer) trackedMappings(pid int, capture Mappings) (Mappings, bool) {
	tp, ok := s.tracked[pid]
	if !ok {
		return capture, len(capture) > 0
	}
	if tp.complete {
		return tp.maps, len(tp.maps) > 0
	}
	// Records first: they are newer than the capture.
	ms := append(slices.Clone(tp.maps), capture...)
	return ms, len(ms) > 0
}

// onlineCPUs returns the CPUs perf events can be opened on.
func onlineCPUs() ([]int, error) {
	text, err := os.ReadFile("/sys/devices/system/cpu/online")
	if err != nil {
		return nil, fmt.Errorf("read online CPUs: %w", err)
	}
	cpus, err := parseCPUList(string(text))
	if err != nil {
		return nil, fmt.Errorf("read online CPUs: %w", err)
	}
	return cpus, nil
}

// parseCPUList parses a kernel CPU list ("0-3,5").
func parseCPUList(text string) ([]int, error) {
	var cpus []int
	for _, part := range strings.Split(strings.TrimSpace(text), ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		first, err := strconv.Atoi(lo)
		if err != nil {
			return nil, fmt.Errorf("parse CPU list %q: %w", text, err)
		}
		last := first
		if isRange {
			if last, err = strconv.Atoi(hi); err != nil {
				return nil, fmt.Errorf("parse CPU list %q: %w", text, err)
			}
		}
		if last < first || last-first > 1<<16 {
			return nil, fmt.Errorf("parse CPU list %q: bad range %s", text, part)
		}
		for c := first; c <= last; c++ {
			cpus = append(cpus, c)
		}
	}
	if len(cpus) == 0 {
		return nil, fmt.Errorf("parse CPU list %q: no CPU", text)
	}
	return cpus, nil
}

// threadsOf returns the thread ids of process pid, or pid alone when they
// cannot be listed.
func threadsOf(pid int) []int {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return []int{pid}
	}
	var tids []int
	for _, task := range tasks {
		if id, err := strconv.Atoi(task.Name()); err == nil {
			tids = append(tids, id)
		}
	}
	if len(tids) == 0 {
		return []int{pid}
	}
	return tids
}

// LostRecords returns how many mapping records the kernel dropped because
// a ring was full: the processes they told of may be named wrongly or not
// at all once they exit.
func (s *Symbolizer) LostRecords() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.drain()
	return s.lostRecords
}
