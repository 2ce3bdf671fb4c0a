package codegen

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/cilium/ebpf"

	"github.com/gotrace/gotrace/codegen/layout"
	"github.com/gotrace/gotrace/internal/settings"
	"github.com/gotrace/gotrace/lang"
	"github.com/gotrace/gotrace/lang/attachpoint"
	"github.com/gotrace/gotrace/usdt"
)

// Options are the inputs of Compile besides the program.
type Options struct {
	// USDT holds, for every usdt attach point of the program as
	// lang.Resolve resolved it (Info.AttachPoints), the probes the plan
	// matched it to, with their locations and parsed args.
	USDT map[*lang.AttachPoint][]*usdt.Probe
	// Values are the trace's settings (internal/settings): StrLen only
	// bounds str() reads whose type says nothing else (the checker's types
	// decide the size of each string), MapKeysMax is the MaxEntries of
	// user maps, TimeMap the map tseries() reads its time from (bpftrace's
	// BPFTRACE_DUMMY_TS_MAP, with which its tests control the intervals).
	// Zero values mean the defaults.
	settings.Values
	// EventsSize and ControlSize are the byte sizes of the two ring
	// buffers (powers of two, at least a page). Defaults 16 MiB and 64 KiB.
	EventsSize  int
	ControlSize int
	// ChildPID is the PID of the -c command, the value of cpid; 0 without one.
	ChildPID uint32
	// CPUs is the number of possible CPUs, the value of ncpus.
	CPUs int
	// WatchLoader adds Spec.LoaderProgram, for a -c command that may load
	// libraries with the probes of the script later.
	WatchLoader bool
	// Family, for a -c trace, filters the usdt, uprobe and uretprobe
	// programs on the command's family, kept in the kernel by programs
	// that read these tracepoint records (family.go); nil: no filter.
	Family *FamilyRecords
	// Extends is a spec already loaded that the programs compiled now join,
	// sharing its maps: the new Spec's Events and Attachments begin with a
	// copy of Extends', so that event ids and probe numbers go on after
	// them, and its Collection holds only the new programs. The maps the
	// run's programs share (the rings, counters, start time, exited flag)
	// are taken from Extends as they were laid out: they exist already.
	Extends *Spec
	// PIDNamespace, when gotrace runs in a PID namespace of its own, is
	// that namespace: pid, tid and the process ids stored with user
	// stacks are then read as it numbers them. nil: the kernel's ids.
	PIDNamespace *PIDNamespace
	// Later is, with WatchLoader, the program whose probes may be
	// compiled later into Specs that extend this one (the usdt probes
	// without a path that a -c command's libraries may bring). The maps
	// the run's programs share are laid out for its probes as well as
	// for the program compiled now, since they cannot change once made.
	Later *lang.Program
}

// ErrUnsupported is wrapped by errors about constructs gotrace cannot
// compile (kprobes on a kernel without them, unknown functions).
var ErrUnsupported = errors.New("not supported")

// The names of the internal maps in Spec.Collection.Maps. User maps start
// with '@', so they never collide.
const (
	eventsMapName   = "events"
	controlMapName  = "control"
	countersMapName = "counters"
	startMapName    = "start"
	exitedMapName   = "exited"
	wakeMapName     = "wake"
)

// ScratchMapName, BigScratchMapName and ZerosMapName name the per-CPU
// scratch map, the scratch map of programs whose area is larger than a
// per-CPU value (an entry per CPU) and the zero source in
// Spec.Collection.Maps. Unlike the other internal maps they hold no state
// between program runs, so programs loaded later need not share them
// (PrivateMap).
const (
	ScratchMapName    = "scratch"
	BigScratchMapName = "bigscratch"
	ZerosMapName      = "zeros"
)

// PrivateMap reports whether the internal map name holds nothing between
// program runs, so that programs loaded later may have their own.
func PrivateMap(name string) bool {
	return name == ScratchMapName || name == BigScratchMapName || name == ZerosMapName
}

// MaxLoopIterations caps every while and for loop so that the verifier can prove
// it terminates; a loop stopped there is counted (Counters.LoopCapped).
const MaxLoopIterations = 1024

// maxScratch is the largest per-CPU array value the kernel allocates
// (PCPU_MIN_UNIT_SIZE); a larger scratch area is an entry per CPU of the
// big scratch map, at most maxBigScratch, the largest value the kernel
// allocates in one piece (KMALLOC_MAX_SIZE on x86-64).
const (
	maxScratch    = 32 << 10
	maxBigScratch = 4 << 20
)

// stackSize is the BPF stack of one program.
const stackSize = 512

// Compile lowers a checked program, with what the checker recorded about
// it in info, into a Spec. p comes resolved (info.ResolvedProgram), as the
// plan hands it over: its probes attach to what lang.Resolve found. The
// same program, info and options always give the same Spec.
func Compile(p *lang.Program, info *lang.Info, opts Options) (*Spec, error) {
	if opts.StrLen <= 0 {
		opts.StrLen = settings.DefaultStrLen
	}
	if opts.MapKeysMax <= 0 {
		opts.MapKeysMax = settings.DefaultMapKeysMax
	}
	if opts.EventsSize <= 0 {
		opts.EventsSize = 16 << 20
	}
	if opts.ControlSize <= 0 {
		opts.ControlSize = 64 << 10
	}
	c := &compiler{prog: p, info: info, opts: opts, maps: map[string]mapShape{}, decls: map[string]*lang.MapDecl{}}
	for _, d := range p.MapDecls {
		c.decls[d.Name] = d
	}
	c.spec = &Spec{
		Collection: &ebpf.CollectionSpec{
			Maps:     map[string]*ebpf.MapSpec{},
			Programs: map[string]*ebpf.ProgramSpec{},
		},
		EventsMap:   eventsMapName,
		ControlMap:  controlMapName,
		CountersMap: countersMapName,
		StartMap:    startMapName,
		ExitedMap:   exitedMapName,
	}
	if err := c.layoutMaps(); err != nil {
		return nil, err
	}
	if err := c.layoutShared(p); err != nil {
		return nil, err
	}
	if e := opts.Extends; e != nil {
		c.events = slices.Clone(e.Events)
		c.spec.Attachments = slices.Clone(e.Attachments)
		c.spec.TimeFormats = slices.Clone(e.TimeFormats)
		c.spec.CgroupFilters = slices.Clone(e.CgroupFilters)
	}
	if !c.callsExit {
		c.spec.ExitedMap = ""
	}
	if opts.WatchLoader {
		c.addLoaderProgram()
	}
	if opts.Family != nil {
		c.addFamily(*opts.Family)
	}
	for _, probe := range p.Probes {
		for _, ap := range probe.Attach {
			if err := c.compileAttachPoint(probe, ap); err != nil {
				return nil, err
			}
		}
	}
	if c.writesEvents && !anyNode(p, writesEventsCall) {
		return nil, fmt.Errorf("compile: internal error: a program writes to the events ring through a call writesEventsCall does not name")
	}
	if err := c.internalMaps(); err != nil {
		return nil, err
	}
	c.spec.Events = c.events
	return c.spec, nil
}

// compiler holds the state of one Compile call.
type compiler struct {
	prog *lang.Program
	// info is what the checker learned about prog: every expression's
	// type and constant value, the maps, the symbols.
	info *lang.Info
	opts Options
	spec *Spec
	// lines are the script's lines, split once for snippet: splitting at
	// every statement made compiling 10,000 probes quadratic.
	lines []string
	// maps holds what layoutMaps worked out of each user map besides
	// its Map in spec.Maps: where that is, its key types and buckets.
	maps map[string]mapShape
	// decls are the script's map declarations by map name, indexed once
	// at the start so that laying out each map does not search the
	// program again.
	decls  map[string]*lang.MapDecl
	events []Event
	// scratchSize, bigScratchSize and zerosSize are the largest per-CPU
	// scratch area, big scratch area and zero source any program needs.
	scratchSize    int
	bigScratchSize int
	zerosSize      int
	// writesEvents is set when some program writes to the events ring.
	writesEvents bool
	// reserveEvents is set when a program compiled later, into a Spec
	// that extends this one, may write to the events ring (Options.Later),
	// or when the Spec this one extends has such a ring.
	reserveEvents bool
	// callsExit is set when the script calls exit() somewhere: only then
	// do programs check the exited flag, a memory access that costs tens
	// of ns a hit where the TLB is flushed at every kernel entry.
	callsExit bool
}

// layoutShared decides what the maps that every program of the run
// shares must hold: the exited flag, the counters of capped loops and cut
// bufs, an events ring fit for records. A Spec that extends another takes
// them as that one laid them out, since they are made already; the first
// lays them out for its own probes and for those Options.Later may bring.
func (c *compiler) layoutShared(p *lang.Program) error {
	if e := c.opts.Extends; e != nil {
		c.callsExit = e.ExitedMap != ""
		c.spec.Loops, c.spec.BufCuts = e.Loops, e.BufCuts
		_, c.reserveEvents = e.Collection.Maps[wakeMapName]
		switch {
		case !c.callsExit && anyNode(p, isExitCall):
			return laterError("an exit()")
		case !e.Loops && anyNode(p, isLoop):
			return laterError("a loop")
		case !e.BufCuts && anyNode(p, c.isLargeBuf):
			return laterError("a large buf()")
		}
		return nil
	}
	progs := []*lang.Program{p}
	if c.opts.Later != nil {
		progs = append(progs, c.opts.Later)
		c.reserveEvents = anyNode(c.opts.Later, writesEventsCall)
	}
	for _, q := range progs {
		c.callsExit = c.callsExit || anyNode(q, isExitCall)
		c.spec.Loops = c.spec.Loops || anyNode(q, isLoop)
		c.spec.BufCuts = c.spec.BufCuts || anyNode(q, c.isLargeBuf)
	}
	return nil
}

// laterError says that a probe compiled into a Spec extending another
// needs what the shared maps were not laid out for: a bug in what the
// first Spec was told of the probes to come (Options.Later).
func laterError(what string) error {
	return fmt.Errorf("compile: internal error: the maps the run's programs share were not laid out for %s in the probes compiled later", what)
}

// isLoop reports whether n is a while or for loop, which the counters
// map counts the stops of.
func isLoop(n lang.Node) bool {
	switch n.(type) {
	case *lang.WhileStmt, *lang.ForStmt:
		return true
	}
	return false
}

// isLargeBuf reports whether n is a buf() of more than 1024 bytes
// (largeBuf), whose cuts the counters map counts.
func (c *compiler) isLargeBuf(n lang.Node) bool {
	call, ok := n.(*lang.Call)
	return ok && call.ID == lang.FuncBuf && largeBuf(c.info.TypeOf(call))
}

// isExitCall reports whether n calls exit().
func isExitCall(n lang.Node) bool {
	call, ok := n.(*lang.Call)
	return ok && call.ID == lang.FuncExit
}

// writesEventsCall reports whether n is a call whose code may write a
// record to the events ring (events.go, deleteElem). It is what a Spec
// reserves that ring for before the probes that would write it are
// compiled (Options.Later); Compile fails when a program writes there
// through a call it does not name, so the list cannot fall behind.
func writesEventsCall(n lang.Node) bool {
	call, ok := n.(*lang.Call)
	if !ok {
		return false
	}
	switch call.ID {
	case lang.FuncPrintf, lang.FuncSystem, lang.FuncCat, lang.FuncErrorf, lang.FuncWarnf,
		lang.FuncPrint, lang.FuncClear, lang.FuncZero, lang.FuncTime, lang.FuncJoin, lang.FuncDelete:
		return true
	}
	return false
}

// anyNode reports whether a node of p's probes matches.
func anyNode(p *lang.Program, match func(lang.Node) bool) bool {
	found := false
	for _, probe := range p.Probes {
		lang.InspectProbe(probe, func(n lang.Node) {
			found = found || match(n)
		})
	}
	return found
}

// layoutMaps fills Spec.Maps and the user map specs from Info.Maps.
func (c *compiler) layoutMaps() error {
	for _, name := range slices.Sorted(maps.Keys(c.info.Maps)) {
		checked := c.info.Maps[name]
		info, err := c.storedInfo(checked)
		if err != nil {
			return err
		}
		m := Map{Name: name, Kind: mapKinds[info.Value.Kind]}
		if m.Kind == layout.MapValue {
			m.Value = field(info.Value)
		}
		switch m.Kind {
		case layout.MapLhist:
			m.Lhist = layout.Lhist(info.Lhist)
		case layout.MapHist:
			m.HistBits = info.HistBits
		case layout.MapTseries:
			m.Tseries = layout.Tseries(info.Tseries)
		}
		// The key's elements as the checker split them, each stored as
		// storedType says: a struct key is one element, its record.
		keys := keyTypes(checked)
		for i, k := range keys {
			if keys[i], err = c.storedType(k); err != nil {
				return fmt.Errorf("compile map %s: %w", name, err)
			}
		}
		shape := mapShape{index: len(c.spec.Maps), info: info, keyTypes: keys, buckets: bucketCount(info)}
		keyless := len(shape.keyTypes) == 0
		m.KeyFields, m.KeySize = Layout(shape.keyTypes...)
		bucketed := m.Kind.Bucketed()
		if bucketed || m.KeySize == 0 {
			m.KeySize += 8
		}
		switch info.Value.Kind {
		case lang.KindCount, lang.KindSum, lang.KindHist, lang.KindLhist:
			m.ValueSize, m.PerCPU = 8, true
		case lang.KindMin, lang.KindMax, lang.KindAvg, lang.KindStats:
			m.ValueSize, m.PerCPU = 16, true
		case lang.KindTseries:
			m.ValueSize, m.PerCPU = tseriesValueSize, true
		default:
			m.ValueSize = sizeOf(info.Value)
		}
		if m.ValueSize == 0 {
			return fmt.Errorf("compile map %s: value type %s: %w", name, info.Value, ErrUnsupported)
		}
		maxEntries := c.opts.MapKeysMax
		if keyless && !bucketed {
			maxEntries = 1
		}
		typ := ebpf.Hash
		if m.PerCPU {
			typ = ebpf.PerCPUHash
		}
		if d := c.decls[name]; d != nil && !keyless {
			maxEntries = d.Entries
			switch {
			case d.LRU() && m.PerCPU:
				typ = ebpf.LRUCPUHash
			case d.LRU():
				typ = ebpf.LRUHash
			}
		}
		if keyless && info.Value.Kind == lang.KindCount {
			// A key-less count() is one per-CPU array element, as in
			// bpftrace: the verifier inlines an array lookup, so a hit
			// costs no hashing.
			typ, m.Array, m.KeySize = ebpf.PerCPUArray, true, 4
		}
		if n := shape.buckets; keyless && n > 0 && n <= maxArrayBuckets && info.Value.Kind != lang.KindTseries {
			// A key-less hist or lhist: an array indexed by bucket, for
			// the same reason, plus an element that records whether the
			// map holds a histogram (see Map.Array).
			typ, m.Array, m.KeySize = ebpf.PerCPUArray, true, 4
			maxEntries = int(n) + 1
		}
		c.spec.Collection.Maps[name] = &ebpf.MapSpec{
			Name:       kernelName("AT_" + strings.TrimPrefix(name, "@")),
			Type:       typ,
			KeySize:    uint32(m.KeySize),
			ValueSize:  uint32(m.ValueSize),
			MaxEntries: uint32(maxEntries),
		}
		c.spec.Maps = append(c.spec.Maps, m)
		c.maps[name] = shape
	}
	return nil
}

// mapShape is what layoutMaps works out of a user map besides its Map,
// once, for the code that reads and writes the map: the index of its
// Map in Spec.Maps (and of its counter in the CountersMap), what the
// checker found of it with its key and value as the map stores them
// (storedInfo), the types of its key's elements (keyTypes) and its bucket
// count (bucketCount).
type mapShape struct {
	index    int
	info     *lang.MapInfo
	keyTypes []lang.Type
	buckets  int64
}

// storedInfo returns info with its key and value types as the map stores
// them (storedType): a copy when they differ, info itself otherwise.
func (c *compiler) storedInfo(info *lang.MapInfo) (*lang.MapInfo, error) {
	key, err := c.storedType(info.Key)
	if err != nil {
		return nil, fmt.Errorf("compile map %s: %w", info.Name, err)
	}
	value, err := c.storedType(info.Value)
	if err != nil {
		return nil, fmt.Errorf("compile map %s: %w", info.Name, err)
	}
	if key.Equal(info.Key) && value.Equal(info.Value) {
		return info, nil
	}
	stored := *info
	stored.Key, stored.Value = key, value
	return &stored, nil
}

// storedType is the type a value of type t is stored as in a map's key or
// value, or in the record print() writes: a struct as the record of its
// members, each read as the script's s.member reads it (a nested struct a
// record too), which prints as bpftrace prints a struct,
// { .m = 2, .n = 3 }; an array of integers as its bytes, which print as
// [2,3]; a tuple with its elements so; t itself otherwise. Where the
// script has a struct or an array, the code holds its address in the
// traced program or the kernel, which is no value to store.
func (c *compiler) storedType(t lang.Type) (lang.Type, error) {
	switch t.Kind {
	case lang.KindStruct:
		sd := c.info.StructDef(c.prog, t.Struct)
		if sd == nil {
			return lang.Type{}, fmt.Errorf("struct %s: its definition is unknown: %w", t.Struct, ErrUnsupported)
		}
		rec := lang.Type{Kind: lang.KindTuple}
		for _, m := range sd.Fields {
			mt, err := c.storedType(m.Type)
			if err != nil {
				return lang.Type{}, fmt.Errorf("struct %s: member %s: %w", t.Struct, m.Name, err)
			}
			rec.Elems = append(rec.Elems, mt)
			rec.Names = append(rec.Names, m.Name)
		}
		return rec, nil
	case lang.KindArray:
		// An array of integers is stored as its bytes, printed [2,3];
		// of anything else, not at all.
		if t.Elem == nil || t.Elem.Kind != lang.KindInt {
			return lang.Type{}, fmt.Errorf("an array of %v: %w", t.Elem, ErrUnsupported)
		}
		return lang.Type{Kind: lang.KindIntArray, Elem: t.Elem, Len: t.Len, Size: t.Size}, nil
	case lang.KindTuple:
		out := t
		out.Elems = nil
		for _, e := range t.Elems {
			st, err := c.storedType(e)
			if err != nil {
				return lang.Type{}, err
			}
			out.Elems = append(out.Elems, st)
		}
		return out, nil
	}
	return t, nil
}

// keyTypes returns the types of the elements of a map's key: one per
// tuple element, none for a map without keys.
func keyTypes(info *lang.MapInfo) []lang.Type {
	switch info.Key.Kind {
	case lang.KindNone:
		return nil
	case lang.KindTuple:
		return info.Key.Elems
	}
	return []lang.Type{info.Key}
}

// maxArrayBuckets bounds the histograms kept in an array: a map needs
// one per-CPU allocation per bucket, and a wide lhist is better hashed.
const maxArrayBuckets = 1024

// bucketCount is the number of buckets of a hist or lhist map and of
// intervals of a tseries map, 0 for other maps (and an lhist with bad
// bounds, which the program refuses).
func bucketCount(info *lang.MapInfo) int64 {
	switch info.Value.Kind {
	case lang.KindHist:
		return layout.HistBucketsOf(info.HistBits)
	case lang.KindLhist:
		return layout.Lhist(info.Lhist).Buckets()
	case lang.KindTseries:
		return info.Tseries.Intervals
	}
	return 0
}

// internalMaps adds the ring buffers, counters and scratch maps.
func (c *compiler) internalMaps() error {
	ms := c.spec.Collection.Maps
	if e := c.opts.Extends; e != nil {
		// The shared maps exist already: they are declared as they were
		// made, and a program that needs what they lack is a bug in the
		// layout of the Spec extended (Options.Later).
		if c.writesEvents && !c.reserveEvents {
			return laterError("the records")
		}
		for _, name := range []string{eventsMapName, wakeMapName, controlMapName, countersMapName, startMapName, exitedMapName} {
			if m, ok := e.Collection.Maps[name]; ok {
				ms[name] = m.Copy()
			}
		}
		c.spec.EventsMap = e.EventsMap
	} else {
		// A ring buffer costs a map, its pages (all resident once user
		// space maps them), a poller and a reader: a trace whose programs
		// write no printf-like record, and whose probes compiled later
		// may write none either, has no events ring at all.
		if c.writesEvents || c.reserveEvents {
			ms[eventsMapName] = &ebpf.MapSpec{Name: "gt_events", Type: ebpf.RingBuf, MaxEntries: uint32(c.opts.EventsSize)}
			ms[wakeMapName] = &ebpf.MapSpec{Name: "gt_wake", Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: 1}
		} else {
			c.spec.EventsMap = ""
		}
		ms[controlMapName] = &ebpf.MapSpec{Name: "gt_control", Type: ebpf.RingBuf, MaxEntries: uint32(c.opts.ControlSize)}
		ms[countersMapName] = &ebpf.MapSpec{Name: "gt_counters", Type: ebpf.Array, KeySize: 4, ValueSize: uint32(c.spec.countersSize()), MaxEntries: 1}
		ms[startMapName] = &ebpf.MapSpec{Name: "gt_start", Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: 1}
		if c.callsExit {
			ms[exitedMapName] = &ebpf.MapSpec{Name: "gt_exited", Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: 1}
		}
	}
	if c.scratchSize > 0 {
		ms[ScratchMapName] = &ebpf.MapSpec{Name: "gt_scratch", Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: uint32(c.scratchSize), MaxEntries: 1}
	}
	if c.bigScratchSize > 0 {
		cpus, err := ebpf.PossibleCPU()
		if err != nil {
			return fmt.Errorf("size big scratch map: %w", err)
		}
		ms[BigScratchMapName] = &ebpf.MapSpec{Name: "gt_bigscratch", Type: ebpf.Array, KeySize: 4, ValueSize: uint32(c.bigScratchSize), MaxEntries: uint32(cpus)}
	}
	if c.zerosSize > 0 {
		ms[ZerosMapName] = &ebpf.MapSpec{Name: "gt_zeros", Type: ebpf.Array, KeySize: 4, ValueSize: uint32(c.zerosSize), MaxEntries: 1}
	}
	return nil
}

// kernelName turns s into a name the kernel accepts for a map or program:
// only [A-Za-z0-9_.], at most 15 characters.
func kernelName(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r == '_' || r == '.' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
			b.WriteRune(r)
		}
		if b.Len() == 15 {
			break
		}
	}
	return b.String()
}

// compileAttachPoint adds the programs and attachments of one attach
// point of a probe block.
func (c *compiler) compileAttachPoint(probe *lang.Probe, ap *lang.AttachPoint) error {
	switch ap.Kind {
	case lang.ProbeBegin, lang.ProbeEnd:
		name := "BEGIN"
		if ap.Kind == lang.ProbeEnd {
			name = "END"
		}
		return c.addProgram(probe, ap, &target{kind: ap.Kind, probeName: name}, Attachment{Kind: ap.Kind})
	case lang.ProbeInterval:
		period, err := intervalPeriod(ap)
		if err != nil {
			return err
		}
		name := fmt.Sprintf("interval:%s:%d", ap.Unit, ap.Freq)
		return c.addProgram(probe, ap, &target{kind: ap.Kind, probeName: name}, Attachment{Kind: ap.Kind, Period: period})
	case lang.ProbeProfile:
		att := Attachment{Kind: ap.Kind}
		if ap.Unit == "hz" {
			att.Frequency = ap.Freq
		} else {
			period, err := intervalPeriod(ap)
			if err != nil {
				return err
			}
			att.Period = period
		}
		name := fmt.Sprintf("profile:%s:%d", ap.Unit, ap.Freq)
		return c.addProgram(probe, ap, &target{kind: ap.Kind, probeName: name}, att)
	case lang.ProbeUprobe, lang.ProbeUretprobe:
		fn := ap.Func
		if fn == "" {
			fn = fmt.Sprintf("%#x", ap.Address)
		}
		t := &target{kind: ap.Kind, probeName: ap.Kind.String() + ":" + ap.Target + ":" + fn, path: ap.Target}
		if len(ap.Tracepoints) == 1 {
			// The function's parameters, which args reads (lang.Resolve
			// found them for a probe that reads it).
			t.tracepoint = ap.Tracepoints[0]
		}
		return c.addProgram(probe, ap, t, Attachment{Kind: ap.Kind, Path: ap.Target, Symbol: ap.Func, Address: ap.Address})
	case lang.ProbeSoftware, lang.ProbeHardware:
		// lang.Resolve found the event; an attach point it did not
		// resolve has none.
		ev := ap.PerfEvent
		if ev.Name == "" {
			return c.errorAt(ap.Loc, "compile %s: %s is not a %s probe", ap.Raw, ap.Func, ap.Kind)
		}
		count := ap.Freq
		if count == 0 {
			count = ev.DefaultCount
		}
		name := fmt.Sprintf("%s:%s:%d", ap.Kind, ap.Func, count)
		att := Attachment{Kind: ap.Kind, PerfConfig: ev.Config, Count: count}
		return c.addProgram(probe, ap, &target{kind: ap.Kind, probeName: name}, att)
	case lang.ProbeWatchpoint:
		name := fmt.Sprintf("watchpoint:%#x:%d:%s", ap.Address, ap.Len, ap.Mode)
		att := Attachment{Kind: ap.Kind, Address: ap.Address, WatchLen: ap.Len, WatchAccess: ap.WatchAccess}
		return c.addProgram(probe, ap, &target{kind: ap.Kind, probeName: name}, att)
	case lang.ProbeKprobe, lang.ProbeKretprobe:
		t := &target{kind: ap.Kind, probeName: ap.Kind.String() + ":" + ap.Func}
		return c.addProgram(probe, ap, t, Attachment{Kind: ap.Kind, Symbol: ap.Func})
	case lang.ProbeKfunc, lang.ProbeKretfunc:
		if len(ap.Tracepoints) == 0 {
			return c.errorAt(ap.Loc, "compile %s: no kernel function matched", ap.Raw)
		}
		for _, fn := range ap.Tracepoints {
			t := &target{kind: ap.Kind, probeName: ap.Kind.String() + ":" + fn.Name, tracepoint: fn}
			if err := c.addProgram(probe, ap, t, Attachment{Kind: ap.Kind, Symbol: fn.Name}); err != nil {
				return err
			}
		}
		return nil
	case lang.ProbeTracepoint:
		if len(ap.Tracepoints) == 0 {
			return c.errorAt(ap.Loc, "compile %s: no tracepoint matched", ap.Raw)
		}
		for _, tp := range ap.Tracepoints {
			t := &target{kind: ap.Kind, probeName: "tracepoint:" + tp.Category + ":" + tp.Name, tracepoint: tp}
			if err := c.addProgram(probe, ap, t, Attachment{Kind: ap.Kind, Tracepoint: tp}); err != nil {
				return err
			}
		}
		return nil
	case lang.ProbeUSDT:
		probes := c.opts.USDT[ap]
		if len(probes) == 0 {
			return c.errorAt(ap.Loc, "compile %s: no USDT probe matched", ap.Raw)
		}
		for _, up := range probes {
			t, sites := usdtTarget(up)
			att := Attachment{Kind: ap.Kind, Path: up.Path, USDT: up, Sites: sites}
			if err := c.addProgram(probe, ap, t, att); err != nil {
				return err
			}
		}
		return nil
	}
	return c.errorAt(ap.Loc, "compile %s: this probe type is %w on this system", ap.Raw, ErrUnsupported)
}

// intervalPeriod converts interval:UNIT:N (or profile:UNIT:N, UNIT not
// hz) into a duration; the parser refused an N whose period is none
// (attachpoint.ParseFreq).
func intervalPeriod(ap *lang.AttachPoint) (time.Duration, error) {
	period, ok := attachpoint.Period(ap.Unit, ap.Freq)
	if !ok {
		return 0, fmt.Errorf("compile %s: %d %s is no period", ap.Raw, ap.Freq, ap.Unit)
	}
	return period, nil
}

// target is what a program runs for: the probe kind, the text of the
// probe builtin and, for USDT, the argument layouts.
type target struct {
	// index is the program's index in Spec.Attachments: the value of the
	// probe builtin.
	index     int
	kind      lang.ProbeKind
	probeName string
	// path is the ELF file of a USDT or uprobe target.
	path    string
	usdt    *usdt.Probe
	layouts []argLayout
	// tracepoint is the tracepoint a tracepoint program runs for.
	tracepoint *lang.Tracepoint
}

// kernelFunc reports whether the program runs at a kernel function's
// entry or return (kprobe, kretprobe, kfunc, kretfunc).
func (t *target) kernelFunc() bool {
	switch t.kind {
	case lang.ProbeKprobe, lang.ProbeKretprobe, lang.ProbeKfunc, lang.ProbeKretfunc:
		return true
	}
	return false
}

// argLayout is one way the locations of a USDT probe pass their args.
type argLayout struct {
	args    []usdt.Arg
	argsErr error
	pc      uint64
}

// usdtTarget groups the locations of a probe by argument layout: a site's
// cookie is the index of its layout. Locations whose args are %rip
// relative depend on their own PC and get a layout each.
func usdtTarget(up *usdt.Probe) (*target, []Site) {
	t := &target{
		kind:      lang.ProbeUSDT,
		probeName: "usdt:" + up.Path + ":" + up.Provider + ":" + up.Name,
		path:      up.Path,
		usdt:      up,
	}
	index := map[string]int{}
	var sites []Site
	for _, loc := range up.Locations {
		key := loc.ArgString
		if strings.Contains(key, "(%rip)") {
			key = fmt.Sprintf("%s@%#x", key, loc.PC)
		}
		i, ok := index[key]
		if !ok {
			i = len(t.layouts)
			index[key] = i
			t.layouts = append(t.layouts, argLayout{args: loc.Args, argsErr: loc.ArgsErr, pc: loc.PC})
		}
		sites = append(sites, Site{Offset: loc.Offset, SemaphoreOffset: loc.SemaphoreOffset, Cookie: uint64(i)})
	}
	return t, sites
}

// addProgram compiles one probe block for one target and records where
// it attaches.
func (c *compiler) addProgram(probe *lang.Probe, ap *lang.AttachPoint, t *target, att Attachment) error {
	t.index = len(c.spec.Attachments)
	key := fmt.Sprintf("prog%d", t.index)
	f := newFn(c, t)
	insns, err := f.compile(probe)
	if err != nil {
		return err
	}
	typ, attachType, attachTo := ebpf.RawTracepoint, ebpf.AttachNone, ""
	switch t.kind {
	case lang.ProbeUSDT, lang.ProbeUprobe, lang.ProbeUretprobe, lang.ProbeKprobe, lang.ProbeKretprobe:
		typ = ebpf.Kprobe
	case lang.ProbeKfunc:
		// The loader finds the function's BTF id by name in the
		// kernel's BTF.
		typ, attachType, attachTo = ebpf.Tracing, ebpf.AttachTraceFEntry, t.tracepoint.Name
	case lang.ProbeKretfunc:
		typ, attachType, attachTo = ebpf.Tracing, ebpf.AttachTraceFExit, t.tracepoint.Name
	case lang.ProbeTracepoint:
		typ = ebpf.TracePoint
	case lang.ProbeProfile, lang.ProbeSoftware, lang.ProbeHardware, lang.ProbeWatchpoint:
		// Its context, struct bpf_perf_event_data, starts with the
		// interrupted task's pt_regs, as a uprobe's is pt_regs.
		typ = ebpf.PerfEvent
	}
	c.spec.Collection.Programs[key] = &ebpf.ProgramSpec{
		Name:         kernelName("gt_" + key),
		Type:         typ,
		AttachType:   attachType,
		AttachTo:     attachTo,
		License:      "GPL",
		Instructions: insns,
	}
	att.Program = key
	att.Probe, att.ProbePos = ap.Raw, ap.Loc
	att.ProbeName = t.probeName
	c.spec.Attachments = append(c.spec.Attachments, att)
	switch {
	case f.scratchMax > maxBigScratch:
		return c.errorAt(probe.Loc, "compile %s: its strings, tuples and records need %d bytes of scratch space, more than the %d a map value holds", t.probeName, f.scratchMax, maxBigScratch)
	case f.bigScratch():
		c.bigScratchSize = max(c.bigScratchSize, f.scratchMax)
	case !f.scratchOnStack():
		c.scratchSize = max(c.scratchSize, f.scratchMax)
	}
	c.zerosSize = max(c.zerosSize, f.zerosMax)
	return nil
}

// Error is a compile error about a place in the script. errors.As also
// turns it into a lang.ErrorList, so the command line prints it the way
// it prints the checker's diagnostics.
type Error struct {
	File string
	Span lang.Span
	Err  error
}

// Error formats the error as FILE:LINE:COL: message.
func (e *Error) Error() string {
	return fmt.Sprintf("%s:%d:%d: %v", e.File, e.Span.Start.Line, e.Span.Start.Col, e.Err)
}

// Unwrap returns the underlying error (ErrUnsupported, say).
func (e *Error) Unwrap() error { return e.Err }

// As sets a *lang.ErrorList target to a one-diagnostic list.
func (e *Error) As(target any) bool {
	l, ok := target.(*lang.ErrorList)
	if ok {
		*l = lang.ErrorList{{Span: e.Span, Msg: e.Err.Error()}}
	}
	return ok
}

// errorAt returns an *Error about span s.
func (c *compiler) errorAt(s lang.Span, format string, args ...any) error {
	return &Error{File: c.prog.File, Span: s, Err: fmt.Errorf(format, args...)}
}

// errorf returns an *Error about node n.
func (c *compiler) errorf(n lang.Node, format string, args ...any) error {
	return c.errorAt(n.Span(), format, args...)
}

// assert panics when cond, which holds in every program the checker
// accepts, does not: the checker should have reported an error in the
// script, so this is a bug in gotrace. go/types asserts the same way.
func assert(cond bool, n lang.Node, what string) {
	if !cond {
		panic(fmt.Sprintf("internal error: %d:%d: %s", n.Span().Start.Line, n.Span().Start.Col, what))
	}
}

// typeOf returns the type the checker recorded for e. Every expression
// codegen lowers is one the checker typed, or one lang made and typed for
// it (lang.Info.MemberOf): one without a type is a bug in gotrace, not a
// zero type to lower.
func (f *fn) typeOf(e lang.Expr) lang.Type {
	t, ok := f.c.info.LookupType(e)
	assert(ok, e, "an expression without a type")
	return t
}

// snippet returns the first line of n's source text, shortened, for
// instruction comments.
func (c *compiler) snippet(n lang.Node) string {
	if c.lines == nil {
		c.lines = strings.Split(c.prog.Source, "\n")
	}
	lines := c.lines
	s := n.Span()
	if s.Start.Line < 1 || int(s.Start.Line) > len(lines) {
		return ""
	}
	line := lines[s.Start.Line-1]
	start := min(max(int(s.Start.Col)-1, 0), len(line))
	end := len(line)
	if last := int(s.End.Col) - 1; s.End.Line == s.Start.Line && last >= start && last <= len(line) {
		end = last
	}
	text := strings.TrimSpace(line[start:end])
	if len(text) > 40 {
		text = text[:37] + "..."
	}
	// The kernel's line info refuses NUL bytes: keep the text printable.
	return strings.Map(func(r rune) rune {
		if unicode.IsPrint(r) {
			return r
		}
		return '?'
	}, text)
}
