// Package plan owns the probe plan: one stage, before anything is
// loaded, that turns a checked program and the host (its files, the -p
// process, the -c command's objects, the kernel's capabilities) into a
// plain list of sites, the concrete places its programs attach to, each
// with why it was chosen. It reads the host once (host.go: each file
// opened once), then applies every rule of attach-point resolution once
// to what it read (resolve.go: kernel support and watchpoint addresses,
// usdt probes, uprobe and kprobe wildcards, bare and C++ names; the
// uprobes' places, offsets and instruction boundaries in boundary.go;
// the -p mapping checks and the missing-probe policy in missing.go; the
// -c command's family filter in family.go); the code generator then
// compiles what the rules decided (compile), and the sites say where
// each program goes: the file, the file offset, the semaphore, the
// cookie. gotrace's own sites, which keep a -c command's family and
// watch its library loads, are planned apart from the script's (own.go,
// Plan.Own) and count as no probe. The plan carries its choices to the
// runtime (Plan.Family), which creates what they say.
//
// The package never loads a program nor attaches one: the runtime's
// attach files execute the sites without resolving anything again.
package plan

import (
	"errors"
	"fmt"
	"io"

	"github.com/gotrace/gotrace/codegen"
	"github.com/gotrace/gotrace/internal/settings"
	"github.com/gotrace/gotrace/lang"
	"github.com/gotrace/gotrace/usdt"
)

// ErrNoProbes is returned when no attach point of the script matches
// anything: bpftrace's wording.
var ErrNoProbes = errors.New("No probes to attach")

// Input is what a plan is made from besides the program: the host as
// the run sees it and the run's options that decide what is attached.
type Input struct {
	// Files opens the ELF files the plan reads, once; they stay open for
	// attaching.
	Files *usdt.Files
	// Objects are the objects an attach point without a path looks in:
	// those the -c command loads at start. Nil with PID set, the plan
	// reads those the -p process maps, when an attach point needs them.
	Objects []string
	// PID is the -p process, 0 for none.
	PID int
	// Command is the -c command, "" for none: its usdt probes without a
	// path may be in a library it loads later, which is then watched.
	Command string
	// ChildPID is the -c command's PID, the value of cpid (0 before it
	// is started).
	ChildPID int
	// Unsafe (--unsafe) attaches uprobes at addresses whose instruction
	// boundary cannot be checked, after a warning.
	Unsafe bool
	// MissingProbes says what an attach point that names one usdt probe
	// or function the file does not have does to the run.
	MissingProbes settings.MissingProbes
	// Warnings receives the plan's warnings; nil drops them
	// (--no-warnings).
	Warnings io.Writer
	// Verbose receives what -v says of the plan's choices; nil for none.
	Verbose io.Writer
	// FamilyRecords reads where the kernel's fork and exit records hold
	// what the family programs read: with it, the plan chooses whether a
	// -c trace (ChildPID set) with probes in user files filters on the
	// command's family. Nil when there is nothing to choose, such as
	// when planning the libraries the command loads later (Loaded),
	// whose filter the run's plan chose (Codegen.Family).
	FamilyRecords func() (*codegen.FamilyRecords, error)
	// Codegen are the code generator's options for the run; the plan
	// adds the usdt probes that matched, the child's PID and whether the
	// command's library loads are watched.
	Codegen codegen.Options

	// open opens the files the plan reads, Files.Open when nil; has
	// answers the capability table, capability.Of when nil; readMaps
	// reads a process's mappings, usdt.ReadMappings when nil. Tests count
	// the opens and reads, or fix the answers.
	open     opener
	has      capabilityOf
	readMaps func(pid int) ([]usdt.Mapping, error)
}

// Plan is a run's plan: the compiled program and every site its programs
// attach to.
type Plan struct {
	Spec *codegen.Spec
	// Sites are the sites of the script's probes: what "Attaching N
	// probes..." counts.
	Sites []Site
	// Own are gotrace's own sites (Site.Own), which no probe of the
	// script asked for and which are counted as none: the tracepoints
	// that keep a -c command's family, the uprobe that watches its
	// library loads. They are attached before BEGIN, after the script's
	// sites that are, in this order.
	Own []Site
	// Passes are Sites and Own in the passes the run attaches them in.
	Passes Passes
	// Waiting are the usdt attach points without a path that matched no
	// probe in the -c command's objects at start, whose library loads are
	// watched: they wait for a library it loads later, and each counts
	// as one probe in "Attaching N probes...".
	Waiting []*lang.AttachPoint
	// PID is the process the uprobes and usdt probes are filtered on (-p,
	// or the -c command's), 0 for every process.
	PID int
	// Family, for a -c trace with probes in user files, says where the
	// kernel's records hold what the programs that keep the command's
	// family read: the programs then count only that family's hits.
	// Nil without the filter; NoFamily then says why a -c trace with
	// such probes has none, and its probes attach for the command's
	// process alone.
	Family   *codegen.FamilyRecords
	NoFamily error
}

// Make computes the plan of p, which has been through lang.Analyze
// (info is what the checker found) and is handed over resolved
// (info.ResolvedProgram, done once by the caller, as Run does at its top),
// for a run on in, in the order read, decide, compile: it reads the host
// once (gatherHost), applies the rules to what it read (resolve),
// compiles what matched (compile), and plans the sites of the compiled
// attachments. The uprobes' function fields come parsed: lang.Resolve
// parsed each once (AttachPoint.Function).
func Make(p *lang.Program, info *lang.Info, in Input) (*Plan, error) {
	h := gatherHost(p, in)
	r, err := resolve(p, h, in)
	if err != nil {
		return nil, err
	}
	spec, err := compile(r, info, in)
	if err != nil {
		return nil, err
	}
	sites, err := planSites(spec, r.places, h, in.Unsafe)
	if err != nil {
		return nil, err
	}
	own, err := ownSites(spec, h, in)
	if err != nil {
		return nil, err
	}
	pid := in.PID
	if in.ChildPID != 0 {
		pid = in.ChildPID
	}
	return &Plan{Spec: spec, Sites: sites, Own: own, Passes: passesOf(sites, own), Waiting: r.waitingNow(), PID: pid, Family: r.family, NoFamily: r.noFamily}, nil
}

// Compile resolves the attach points of p for a run on in and compiles
// what they match, as Make does, without planning the sites. p is
// resolved, as for Make.
func Compile(p *lang.Program, info *lang.Info, in Input) (*codegen.Spec, error) {
	h := gatherHost(p, in)
	r, err := resolve(p, h, in)
	if err != nil {
		return nil, err
	}
	return compile(r, info, in)
}

// compile runs the code generator on what r matched, with info, the
// checker's record of the program: with the usdt probes it matched, the
// -c command's PID, whether its library loads are watched and the family
// filter chosen. It decides nothing: the rules have run.
func compile(r *resolution, info *lang.Info, in Input) (*codegen.Spec, error) {
	copts := in.Codegen
	copts.USDT, copts.ChildPID, copts.WatchLoader, copts.Family = r.probes, uint32(in.ChildPID), r.watch, r.family
	copts.PIDNamespace = r.pidns
	if r.watch {
		copts.Later = r.waiting
	}
	return codegen.Compile(r.matched, info, copts)
}

// waitingNow returns the usdt attach points without a path that matched
// nothing at start in a trace whose -c command's loads are watched: those
// that wait for a library (Plan.Waiting).
func (r *resolution) waitingNow() []*lang.AttachPoint {
	if !r.watch {
		return nil
	}
	var aps []*lang.AttachPoint
	for _, pr := range r.waiting.Probes {
		for _, ap := range pr.Attach {
			if len(r.probes[ap]) == 0 {
				aps = append(aps, ap)
			}
		}
	}
	return aps
}

// waitingPoints maps each attach point of p to itself if it is a usdt
// attach point without a path, which Loaded looks for in the objects a
// -c command loads later, and to nothing otherwise: with matchedProgram,
// the program of the probes that may be compiled then.
func waitingPoints(p *lang.Program) map[*lang.AttachPoint][]*lang.AttachPoint {
	wild := map[*lang.AttachPoint][]*lang.AttachPoint{}
	for _, pr := range p.Probes {
		for _, ap := range pr.Attach {
			wild[ap] = nil
			if ap.Kind == lang.ProbeUSDT && WildcardPath(ap.Target) {
				wild[ap] = []*lang.AttachPoint{ap}
			}
		}
	}
	return wild
}

// placeKey names the place of one uprobe attach point of the matched
// program: an attach point a wildcard or C++ name expanded to keeps the
// place of the one it came from, with a function field of its own. The
// code generator's Attachment keeps them as ProbePos and Symbol, so that
// planning the sites finds the place the rules resolved.
type placeKey struct {
	loc   lang.Span
	field string
}

// Write prints the plan, one line per site, the script's and then
// gotrace's own: the program, the probe, where it attaches and why
// (gotrace --dry-run -v).
func (pl *Plan) Write(w io.Writer) {
	fmt.Fprintf(w, "plan: %d sites", len(pl.Sites))
	if len(pl.Own) > 0 {
		fmt.Fprintf(w, ", %d of gotrace's own", len(pl.Own))
	}
	if pl.Spec.LoaderProgram != "" {
		fmt.Fprintf(w, ", and the -c command's library loads watched for usdt probes without a path")
	}
	fmt.Fprintln(w)
	for _, s := range pl.Sites {
		writeSite(w, s, pl.PID)
	}
	for _, s := range pl.Own {
		writeSite(w, s, s.PID)
	}
}

// writeSite prints the line of site s, attached for process pid when it
// is in a user file and pid is not 0.
func writeSite(w io.Writer, s Site, pid int) {
	fmt.Fprintf(w, "  %s %s", s.Attachment.Program, s.Attachment.Probe)
	if s.Attachment.ProbeName != s.Attachment.Probe {
		// A wildcard, a bare or C++ name, an offset of 0: the
		// attach point as it matched.
		fmt.Fprintf(w, " as %s", s.Attachment.ProbeName)
	}
	fmt.Fprintf(w, ": %s", s.Why)
	if pid != 0 && UserKind(s.Attachment.Kind) {
		fmt.Fprintf(w, " (process %d)", pid)
	}
	fmt.Fprintln(w)
}

// ownWhy says what a site that is not in a user file is.
func ownWhy(a *codegen.Attachment) string {
	switch a.Kind {
	case lang.ProbeBegin, lang.ProbeEnd:
		return "run once by gotrace"
	case lang.ProbeInterval:
		return fmt.Sprintf("run by gotrace every %v", a.Period)
	case lang.ProbeProfile:
		if a.Frequency != 0 {
			return fmt.Sprintf("perf CPU clock event on each CPU, %d Hz", a.Frequency)
		}
		return fmt.Sprintf("perf CPU clock event on each CPU, every %v", a.Period)
	case lang.ProbeTracepoint:
		return fmt.Sprintf("tracepoint %s:%s", a.Tracepoint.Category, a.Tracepoint.Name)
	case lang.ProbeSoftware, lang.ProbeHardware:
		return fmt.Sprintf("perf event %s config %d, every %d events", a.Kind, a.PerfConfig, a.Count)
	case lang.ProbeWatchpoint:
		return fmt.Sprintf("hardware breakpoint on %d bytes at %#x", a.WatchLen, a.Address)
	case lang.ProbeKprobe, lang.ProbeKretprobe:
		return fmt.Sprintf("%s on kernel function %s", a.Kind, a.Symbol)
	case lang.ProbeKfunc, lang.ProbeKretfunc:
		return fmt.Sprintf("%s (BPF trampoline) on kernel function %s", a.Kind, a.Symbol)
	}
	return a.Kind.String()
}

// usdtWhy says where a usdt site is and what it found there.
func usdtWhy(a *codegen.Attachment, path string, s codegen.Site) string {
	why := fmt.Sprintf("usdt %s:%s in %s at %#x", a.USDT.Provider, a.USDT.Name, path, s.Offset)
	if s.SemaphoreOffset != 0 {
		why += fmt.Sprintf(" (semaphore %#x)", s.SemaphoreOffset)
	}
	return why + fmt.Sprintf(", cookie %d", s.Cookie)
}

// uprobeWhy says where a uprobe attaches, at pl in the file at path: a
// symbol, or an address that placeUprobes has checked starts an
// instruction or, with --unsafe, warned where it could not.
func uprobeWhy(a *codegen.Attachment, path string, pl place, unsafe bool) string {
	if pl.symbol != "" {
		return fmt.Sprintf("%s %s in %s: symbol at %#x, file offset %#x", a.Kind, pl.symbol, path, pl.addr, pl.offset)
	}
	addr, off := pl.addr, pl.offset
	what := fmt.Sprintf("%#x", addr)
	if pl.field.HasOffset {
		what = fmt.Sprintf("%s (%#x)", pl.field.Field, addr)
	}
	checked := "instruction boundary checked"
	if unsafe {
		checked += ", or a warning said it could not be"
	}
	return fmt.Sprintf("%s %s in %s, file offset %#x: %s", a.Kind, what, a.Path, off, checked)
}

// Site is one place a program runs. A site of the script's probes is
// what bpftrace counts in "Attaching N probes...": BEGIN, END and every
// interval are one site each, a USDT probe one site per location, a
// uprobe one site per matching symbol. A site of gotrace's own (Own set,
// in Plan.Own) counts as no probe.
type Site struct {
	// Attachment is the code generator's attachment of the program.
	Attachment *codegen.Attachment
	// Path is the absolute ELF path of USDT and uprobe sites.
	Path string
	// USDT is the location of a USDT site: file offset, semaphore offset,
	// cookie.
	USDT codegen.Site
	// Symbol names a uprobe's ELF symbol ("" for one by address) and
	// Offset is where it attaches in the file.
	Symbol string
	Offset uint64
	// Why says how the plan chose the site, for --dry-run -v.
	Why string
	// When says at which point of the run the site is attached.
	When When
	// Own, on a site of gotrace's own (Plan.Own), says what it is for,
	// in the words of its errors ("keep the -c command's processes");
	// "" on a site of the script's probes (Plan.Sites). Its Attachment
	// is not one of the Spec's: it names the program and where it goes.
	Own string
	// PID is the process a site of gotrace's own in a file is attached
	// for (the loader's: the -c command's); the script's usdt and uprobe
	// sites are attached for Plan.UprobePID.
	PID int
}

// Where names the place of a USDT or uprobe site in messages: the file
// and the symbol, or the file offset.
func (s Site) Where() string {
	if s.Symbol != "" {
		return s.Path + ":" + s.Symbol
	}
	return fmt.Sprintf("%s at offset %#x", s.Path, s.USDT.Offset+s.Offset)
}

// UserKind reports whether probes of kind k attach to a user file
// (usdt, uprobe, uretprobe): those are filtered on the traced process.
func UserKind(k lang.ProbeKind) bool {
	return k == lang.ProbeUSDT || k == lang.ProbeUprobe || k == lang.ProbeUretprobe
}

// planSites expands the attachments of spec into sites, in the files h
// read, at the places the rules resolved for its uprobes. It resolves
// nothing itself: every site is known before anything is loaded, so that
// the count printed first is right.
func planSites(spec *codegen.Spec, places map[placeKey]place, h *hostFacts, unsafe bool) ([]Site, error) {
	var sites []Site
	for i := range spec.Attachments {
		a := &spec.Attachments[i]
		switch a.Kind {
		case lang.ProbeBegin, lang.ProbeEnd, lang.ProbeInterval, lang.ProbeProfile, lang.ProbeTracepoint, lang.ProbeSoftware, lang.ProbeHardware, lang.ProbeWatchpoint,
			lang.ProbeKprobe, lang.ProbeKretprobe, lang.ProbeKfunc, lang.ProbeKretfunc:
			sites = append(sites, Site{Attachment: a, Why: ownWhy(a)})
		case lang.ProbeUSDT:
			path := h.targets[a.Path].path
			if path == "" {
				return nil, siteError(a, "the plan did not read %s", a.Path)
			}
			for _, s := range a.Sites {
				sites = append(sites, Site{Attachment: a, Path: path, USDT: s, Why: usdtWhy(a, path, s)})
			}
		case lang.ProbeUprobe, lang.ProbeUretprobe:
			pl, ok := places[placeKey{loc: a.ProbePos, field: a.Symbol}]
			if !ok {
				return nil, siteError(a, "the plan placed no uprobe for %s", a.ProbeName)
			}
			path := h.targets[a.Path].path
			sites = append(sites, Site{Attachment: a, Path: path, Symbol: pl.symbol, Offset: pl.offset,
				Why: uprobeWhy(a, path, pl, unsafe)})
		default:
			return nil, fmt.Errorf("%s: probes of this kind cannot be attached", a.Probe)
		}
	}
	for i := range sites {
		sites[i].When = whenOfSite(sites[i])
	}
	return sites, nil
}

// siteError is attachError for the attach point an attachment of the
// Spec came from.
func siteError(a *codegen.Attachment, format string, args ...any) error {
	return spanError(a.ProbePos, "", format, args...)
}

// Loaded plans the usdt attach points of p without a path against objs,
// the objects a -c command has loaded since the plan was made: only they
// look in new objects, the others are attached already. It compiles the
// probes they match into a Spec that extends the run's
// (in.Codegen.Extends) and returns it with the sites of its new
// attachments; a nil Spec when nothing matched. info is the checker's;
// p is resolved, as for Make.
func Loaded(p *lang.Program, info *lang.Info, objs []string, in Input) (*codegen.Spec, Passes, error) {
	wild := waitingPoints(p)
	only := matchedProgram(p, wild)
	loaded := in
	loaded.Objects = objs
	h := gatherHost(only, loaded)
	probes, err := resolveUSDT(only, h)
	if err != nil {
		return nil, Passes{}, err
	}
	found := false
	for ap, ps := range probes {
		if len(ps) == 0 {
			wild[ap] = nil
		}
		found = found || len(ps) > 0
	}
	if !found {
		return nil, Passes{}, nil
	}
	copts := in.Codegen
	copts.USDT, copts.ChildPID = probes, uint32(in.ChildPID)
	// The library's programs read ids as the run's first ones do.
	copts.PIDNamespace = h.pidns
	spec, err := codegen.Compile(matchedProgram(p, wild), info, copts)
	if err != nil {
		return nil, Passes{}, fmt.Errorf("compile the probes of %v: %w", objs, err)
	}
	// Only usdt attach points wait for libraries: no symbols to read.
	sites, err := planSites(&codegen.Spec{Attachments: spec.Attachments[len(in.Codegen.Extends.Attachments):]}, nil, h, false)
	if err != nil {
		return nil, Passes{}, err
	}
	return spec, passesOf(sites, nil), nil
}
