package runtime

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"golang.org/x/sys/unix"

	"github.com/gotrace/gotrace/codegen"
	"github.com/gotrace/gotrace/lang"
	"github.com/gotrace/gotrace/runtime/attach"
	"github.com/gotrace/gotrace/runtime/capture"
	"github.com/gotrace/gotrace/runtime/plan"
	"github.com/gotrace/gotrace/runtime/symbols"
)

// verifierTail is how many lines of a verifier log an error shows: enough
// to see the failing instruction and the state that led to it, never the
// million lines of a program that ran into the complexity limit.
const verifierTail = 20

// load creates the maps and programs of spec in the kernel, using the
// maps in replace instead of creating those. When the verifier rejects a
// program, the error names the script line the failing instruction came
// from.
func load(spec *ebpf.CollectionSpec, replace map[string]*ebpf.Map) (*ebpf.Collection, error) {
	if err := checkStackDepth(spec, maxStackFile); err != nil {
		return nil, err
	}
	reserveFiles(spec)
	coll, err := ebpf.NewCollectionWithOptions(withoutLineInfo(spec), ebpf.CollectionOptions{MapReplacements: replace})
	if err == nil {
		return coll, nil
	}
	if errors.Is(err, unix.EMFILE) {
		// The loader reports it as a rejected program, with the log of
		// the program's BTF.
		return nil, fmt.Errorf("load program: %d maps and %d programs need more file descriptors than this process may open (ulimit -n): %w", len(spec.Maps), len(spec.Programs), unix.EMFILE)
	}
	var ve *ebpf.VerifierError
	if !errors.As(err, &ve) {
		return nil, fmt.Errorf("load program: %w", err)
	}
	return nil, verifierError(spec, err, ve)
}

// loadSharing loads the programs of spec against the maps already
// created. Only the scratch areas and the zero source may differ in size
// (the first programs may not have needed them): those, private to each
// program run, are created anew; a user map or a ring must be shared.
func loadSharing(spec *ebpf.CollectionSpec, maps map[string]*ebpf.Map) (*ebpf.Collection, error) {
	replace := map[string]*ebpf.Map{}
	for name, ms := range spec.Maps {
		m, ok := maps[name]
		if ok && ms.Compatible(m) == nil {
			replace[name] = m
			continue
		}
		if !codegen.PrivateMap(name) {
			return nil, fmt.Errorf("map %s differs from the one loaded", name)
		}
	}
	return load(spec, replace)
}

// withoutLineInfo returns a copy of spec whose programs without
// callbacks carry no source comments. cilium/ebpf gives the kernel each
// comment as BTF line info, which costs a BTF object per program and,
// once per process, the probes of what the kernel's BTF supports: seven
// BPF_BTF_LOADs, about 1 ms of the 20 that BEGIN { exit(); } takes on
// this project's VMs. gotrace needs no line info in the kernel: a
// verifier error is placed from the comments of spec's own instructions
// (sourceAt). A program with callbacks loads BTF anyway, for the
// function information the kernel requires of it, and keeps its lines.
func withoutLineInfo(spec *ebpf.CollectionSpec) *ebpf.CollectionSpec {
	out := *spec
	out.Programs = make(map[string]*ebpf.ProgramSpec, len(spec.Programs))
	for name, ps := range spec.Programs {
		if slices.ContainsFunc(ps.Instructions, func(ins asm.Instruction) bool { return btf.FuncMetadata(&ins) != nil }) {
			out.Programs[name] = ps
			continue
		}
		bare := *ps
		bare.Instructions = make(asm.Instructions, len(ps.Instructions))
		for i, ins := range ps.Instructions {
			bare.Instructions[i] = ins.WithSource(nil)
		}
		out.Programs[name] = &bare
	}
	return &out
}

// maxStackFile holds kernel.perf_event_max_stack, the most frames the
// kernel walks and a stack trace map may hold.
const maxStackFile = "/proc/sys/kernel/perf_event_max_stack"

// checkStackDepth refuses a ustack deeper than the limit in the file
// limitFile, which the kernel would refuse with a bare "invalid argument"
// when creating its stack map. Without the file the kernel decides. A
// program without stack maps reads nothing: every start of gotrace would
// pay for the file's opening (issue 24).
func checkStackDepth(spec *ebpf.CollectionSpec, limitFile string) error {
	if !hasStackMap(spec) {
		return nil
	}
	b, err := os.ReadFile(limitFile)
	if err != nil {
		return nil
	}
	limit, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return nil
	}
	for _, name := range slices.Sorted(maps.Keys(spec.Maps)) {
		m := spec.Maps[name]
		if frames := int(m.ValueSize / 8); m.Type == ebpf.StackTrace && frames > limit {
			return fmt.Errorf("%sa stack (ustack, kstack) of %d frames: the kernel walks at most %d (kernel.perf_event_max_stack); raise the limit with sysctl kernel.perf_event_max_stack=%d",
				referenceSource(spec, name), frames, limit, frames)
		}
	}
	return nil
}

// hasStackMap says whether spec has a stack map (ustack, kstack).
func hasStackMap(spec *ebpf.CollectionSpec) bool {
	for _, m := range spec.Maps {
		if m.Type == ebpf.StackTrace {
			return true
		}
	}
	return false
}

// referenceSource returns "FILE:LINE:COL: " of the first instruction that
// uses map name, or "" when none has a source comment.
func referenceSource(spec *ebpf.CollectionSpec, name string) string {
	for _, prog := range slices.Sorted(maps.Keys(spec.Programs)) {
		insns := spec.Programs[prog].Instructions
		iter := insns.Iterate()
		for iter.Next() {
			if iter.Ins.Reference() != name {
				continue
			}
			if loc, _, ok := strings.Cut(sourceAt(insns, int(iter.Offset)), " "); ok {
				return loc + " "
			}
		}
	}
	return ""
}

// reserveFiles raises the process's limit of open files (RLIMIT_NOFILE)
// to what loading spec takes: a descriptor for each map and two for each
// program (the program and its link), on top of those open. A script of
// 10,000 probes needs 30,000, above the usual hard limit, which root may
// raise; without that privilege the soft limit goes up to the hard one,
// and load says so if that is not enough.
func reserveFiles(spec *ebpf.CollectionSpec) {
	open, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return
	}
	need := uint64(len(open) + len(spec.Maps) + 2*len(spec.Programs))
	var lim unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &lim) != nil || lim.Cur >= need {
		return
	}
	if unix.Setrlimit(unix.RLIMIT_NOFILE, &unix.Rlimit{Cur: need, Max: max(lim.Max, need)}) != nil {
		_ = unix.Setrlimit(unix.RLIMIT_NOFILE, &unix.Rlimit{Cur: lim.Max, Max: lim.Max})
	}
}

// VerifierError is the kernel's verifier rejecting a program. Its message
// names the script position of the failing instruction, when the code
// generator left one, and quotes the end of the verifier log.
type VerifierError struct {
	// Program is the rejected program's name in the collection.
	Program string
	// Source is the "FILE:LINE:COL: ..." comment of the failing
	// instruction, or "" when none was found.
	Source string
	// Log is the verifier log's last lines.
	Log []string
	// Err is the error from the loader.
	Err error
}

func (e *VerifierError) Error() string {
	var b strings.Builder
	if e.passed() {
		// The verifier accepted the program and something after it
		// refused, such as a JIT that does not know an instruction
		// (arm64's before 6.6 and the long jump: "bpf_jit: unknown
		// opcode 06" in the kernel's log); its log ends in the count.
		fmt.Fprintf(&b, "the kernel refused program %s after its verifier accepted it (%v; the kernel's log, dmesg, may say why)", e.Program, errnoOf(e.Err))
	} else if e.Source != "" {
		loc, what, _ := strings.Cut(e.Source, " ")
		fmt.Fprintf(&b, "%s the kernel's verifier rejected the code for %q in program %s", loc, strings.TrimSpace(what), e.Program)
	} else {
		fmt.Fprintf(&b, "the kernel's verifier rejected program %s", e.Program)
	}
	b.WriteString("; the end of its log:")
	for _, l := range e.Log {
		b.WriteString("\n  ")
		b.WriteString(l)
	}
	return b.String()
}

func (e *VerifierError) Unwrap() error { return e.Err }

// passed reports whether the verifier's log ends in the summary it
// prints when it accepts a program ("processed N insns ...").
func (e *VerifierError) passed() bool {
	return e.Source == "" && len(e.Log) > 0 && strings.HasPrefix(strings.TrimSpace(e.Log[len(e.Log)-1]), "processed ")
}

// errnoOf is the system error inside err, or err itself without one.
func errnoOf(err error) error {
	var errno unix.Errno
	if errors.As(err, &errno) {
		return errno
	}
	return err
}

// insnLine matches a verifier log line about an instruction, "17: (85)
// call ...". It is compiled when a program is rejected, not at every
// start of gotrace.
var insnLine = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(\d+): \(`) })

// programName finds the rejected program in the loader's error, which
// reads "program NAME: ...".
func programName(spec *ebpf.CollectionSpec, err error) string {
	msg := err.Error()
	rest, ok := strings.CutPrefix(msg, "program ")
	if !ok {
		return ""
	}
	name, _, _ := strings.Cut(rest, ":")
	if _, ok := spec.Programs[name]; !ok {
		return ""
	}
	return name
}

func verifierError(spec *ebpf.CollectionSpec, err error, ve *ebpf.VerifierError) *VerifierError {
	e := &VerifierError{Program: programName(spec, err), Err: err}
	log := ve.Log
	for len(log) > 0 && strings.TrimSpace(log[len(log)-1]) == "" {
		log = log[:len(log)-1]
	}
	if len(log) > verifierTail {
		e.Log = log[len(log)-verifierTail:]
	} else {
		e.Log = log
	}
	failed := -1
	for i := len(log) - 1; i >= 0; i-- {
		if m := insnLine().FindStringSubmatch(log[i]); m != nil {
			failed, _ = strconv.Atoi(m[1])
			break
		}
	}
	if ps := spec.Programs[e.Program]; ps != nil && failed >= 0 {
		e.Source = sourceAt(ps.Instructions, failed)
	}
	return e
}

// sourceAt returns the last source comment at or before raw instruction
// offset off.
func sourceAt(insns asm.Instructions, off int) string {
	src := ""
	iter := insns.Iterate()
	for iter.Next() {
		if int(iter.Offset) > off {
			break
		}
		if c, ok := iter.Ins.Source().(asm.Comment); ok {
			src = string(c)
		}
	}
	return src
}

// kernelFuncLoadError turns the kernel's refusal to load the program of a
// kfunc or kretfunc attach point into an error at that attach point,
// saying that it is fentry/fexit programs the kernel refuses (this
// project's kernels refuse them with EPERM, even to root); other errors
// are returned as they are.
func kernelFuncLoadError(spec *codegen.Spec, err error) error {
	for _, a := range spec.Attachments {
		if (a.Kind == lang.ProbeKfunc || a.Kind == lang.ProbeKretfunc) && strings.Contains(err.Error(), "program "+a.Program+":") {
			return lang.ErrorList{{Span: a.ProbePos, Msg: fmt.Sprintf("%s: the kernel refuses to load fentry/fexit programs (kfunc, kretfunc): %v", a.ProbeName, err)}}
		}
	}
	return err
}

// loadPlan is the run's load stage: the plan's spec becomes the
// collection of programs and maps, with the unwind tables and the
// symbolizer they read, the ring readers opened, the capture's header
// written, the start time stored, the -c command put in its family and
// the objects its probes were looked for in (objs) recorded, their
// unwind tables built. Nothing is attached: it returns what the attach
// mechanisms need of the run (attachTarget), the uprobes' mode chosen by
// what the kernel takes (attach.Loadable).
func (t *tracer) loadPlan(pl *plan.Plan, objs []string) (attach.Target, error) {
	t.spec = pl.Spec
	t.familyRecs, t.noFamily = pl.Family, pl.NoFamily
	if t.opts.Compiled != nil {
		t.opts.Compiled()
	}
	if err := t.checkMetrics(); err != nil {
		return attach.Target{}, err
	}
	if len(pl.Sites) == 0 && t.spec.LoaderProgram == "" {
		return attach.Target{}, plan.ErrNoProbes
	}
	t.syms = symbols.New(t.pid, siteSymbols(pl.Sites), t.files)
	if t.opts.NoCppDemangle {
		t.syms.KeepMangled()
	}
	// The unwind tables follow the mappings symbols learns, from the
	// start of tracking: the maps exist before the collection.
	var err error
	if t.unwind, err = newUnwindTables(t.spec.Collection, t.verbosef); err != nil {
		return attach.Target{}, err
	}
	if t.unwind != nil {
		t.syms.OnMappings(t.unwind.setProcess)
	}
	// Read once, before the readers start: the spec grows under them
	// when the -c command loads a library (loadedObjects).
	t.namesUser = namesUserAddresses(t.spec)
	if t.namesUser {
		// Before the command runs (it is held at its gate): the kernel's
		// mapping records keep the maps of processes that exit before
		// /proc is read. Without them /proc is read as before.
		if err := t.syms.Track(t.pid); err != nil && t.opts.Verbose {
			fmt.Fprintf(t.opts.Err, "symbols: %v; memory maps are read from /proc only\n", err)
		}
	}
	mode, loadable := attach.Loadable(t.spec, t.opts.NoUprobeMulti, pl.UprobePID(), t.notes())
	if t.coll, err = load(loadable, t.unwind.replacements()); err != nil {
		return attach.Target{}, kernelFuncLoadError(t.spec, err)
	}
	if err := t.startCapture(); err != nil {
		return attach.Target{}, err
	}
	if err := t.storeStart(); err != nil {
		return attach.Target{}, err
	}
	target := t.attachTarget(mode, pl.UprobePID())
	if err := t.keepFamily(); err != nil {
		return attach.Target{}, err
	}
	t.searchedAtStart(objs)
	t.unwind.preload(objs)
	// No events ring: EventsMap is "", and the map nil.
	if err := t.loop.openRings(t.coll.Maps[t.spec.EventsMap], t.coll.Maps[t.spec.ControlMap]); err != nil {
		return attach.Target{}, err
	}
	return target, nil
}

// storeStart records the start time for the elapsed builtin, on the clock
// of bpf_ktime_get_ns.
func (t *tracer) storeStart() error {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return fmt.Errorf("read the clock: %w", err)
	}
	t.bootWall = time.Now().Add(-time.Duration(ts.Nano()))
	t.recordUint64(capture.Clock, uint64(t.bootWall.UnixNano()))
	m := t.coll.Maps[t.spec.StartMap]
	if m == nil {
		return nil
	}
	if err := m.Put(uint32(0), uint64(ts.Nano())); err != nil {
		return fmt.Errorf("store start time: %w", err)
	}
	return nil
}

// attachTarget returns what the attach mechanisms need of the run: the
// programs of usdt, uprobe and uretprobe probes attached as mode says,
// for process uprobePID (0: every process), those a kernel refuses as
// uprobe_multi links loaded again from the plan's spec (perfReload).
func (t *tracer) attachTarget(mode attach.Mode, uprobePID int) attach.Target {
	return attach.Target{
		Mode:      mode,
		Execs:     attach.NewExecutables(t.files),
		UprobePID: uprobePID,
		PID:       t.pid,
		Child:     t.child != nil,
		Warn:      t.warnings(),
		Verbose:   t.notes(),
		Reload:    t.perfReload(t.spec.Collection),
	}
}

// perfReload returns what loads a program of spec again, by its name, for
// perf-event uprobes (attach.Target.Reload), sharing the maps of the
// run's collection; what it loads is kept in t.later.
func (t *tracer) perfReload(spec *ebpf.CollectionSpec) func(name string) (*ebpf.Program, error) {
	return func(name string) (*ebpf.Program, error) {
		one := spec.Copy()
		for other := range one.Programs {
			if other != name {
				delete(one.Programs, other)
			}
		}
		coll, err := loadSharing(one, t.coll.Maps)
		if err != nil {
			return nil, err
		}
		t.later.keep(coll)
		return coll.Programs[name], nil
	}
}

// laterCollections are the collections a run loads after the plan's: the
// programs of a perf-event fallback, the probes of a library the -c
// command loads (loadedObjects, on a reader goroutine: mu guards colls).
// close closes them, once the links are gone.
type laterCollections struct {
	mu    sync.Mutex
	colls []*ebpf.Collection
}

// keep adds c to those close closes.
func (l *laterCollections) keep(c *ebpf.Collection) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.colls = append(l.colls, c)
}

// close closes the collections kept; detach comes first.
func (l *laterCollections) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range l.colls {
		c.Close()
	}
	l.colls = nil
}
