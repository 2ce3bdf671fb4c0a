package plan

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/gotrace/gotrace/internal/settings"
	"github.com/gotrace/gotrace/lang"
)

// The missing-probe policy: an attach point that names one usdt probe or
// function (no wildcard) and matches nothing, or whose file the -p
// process does not map, is a diagnostic with the closest name the file
// has; Input.MissingProbes says whether it fails the run, warns or is
// ignored, once for the whole plan (applyMissingPolicy), and once more at
// the end of a trace for the probes a -c command's loads never brought
// (WarnNotLoaded).

// applyMissingPolicy decides what the attach points of p that named one
// usdt probe or function and matched nothing (matches, as h read the
// files), or whose file the -p process does not
// map, do to the run: with nothing else to trace (matched is false) the
// run fails, else in.MissingProbes says whether it fails, warns or goes
// on silently. With later set, usdt attach points without a path are no
// diagnostic: their probes may come with objects loaded later.
func applyMissingPolicy(p *lang.Program, matches map[*lang.AttachPoint][]*lang.AttachPoint, h *hostFacts, in Input, matched, later bool) error {
	missing := append(notFound(p, matches, later, h), notMapped(p, h)...)
	switch {
	case !matched && len(missing) > 0:
		return missing
	case !matched:
		return ErrNoProbes
	case len(missing) > 0 && in.MissingProbes == settings.MissingError:
		return missing
	case len(missing) > 0 && in.MissingProbes == settings.MissingWarn && in.Warnings != nil:
		missing.WriteWarnings(in.Warnings, p.File, p.Source)
	}
	return nil
}

// WarnNotLoaded applies the missing-probe policy at the end of a trace
// that watched the -c command's loads: unless policy ignores them, each
// of the attach points of p still waiting (usdt without a path) that
// names one probe is a warning to w, found in no object the command had
// or loaded.
func WarnNotLoaded(p *lang.Program, waiting []*lang.AttachPoint, policy settings.MissingProbes, w io.Writer) {
	if policy == settings.MissingIgnore {
		return
	}
	var l lang.ErrorList
	for _, ap := range waiting {
		if namesOne(ap) {
			l = append(l, &lang.Error{Span: ap.Loc, Msg: fmt.Sprintf("usdt probe %s was not found in the objects the command loaded", probeLabel(ap))})
		}
	}
	l.WriteWarnings(w, p.File, p.Source)
}

// notFound returns a diagnostic for every usdt or uprobe attach point
// that names one probe or function (no wildcard) and matched nothing, with
// the closest name the file has as a hint. Like bpftrace, the runtime
// traces the rest and fails only when nothing matched; bpftrace then only
// says "No probes to attach". With later set, usdt attach points without a
// path are left out: their probes may come with objects loaded later. The
// files are those h read.
func notFound(p *lang.Program, matches map[*lang.AttachPoint][]*lang.AttachPoint, later bool, h *hostFacts) lang.ErrorList {
	var l lang.ErrorList
	for _, pr := range p.Probes {
		for _, ap := range pr.Attach {
			if aps, ok := matches[ap]; !ok || len(aps) > 0 || !namesOne(ap) {
				continue
			}
			switch {
			case ap.Kind == lang.ProbeUSDT && later && h.usdtFiles[ap].wild:
			case ap.Kind == lang.ProbeUSDT:
				l = append(l, usdtNotFound(ap, h))
			case (ap.Kind == lang.ProbeUprobe || ap.Kind == lang.ProbeUretprobe) && !wildcardUprobe(ap):
				l = append(l, symbolNotFound(ap, h))
			}
		}
	}
	return l
}

// notMapped returns a diagnostic for every usdt or uprobe attach point
// whose file the -p process does not map, as h read its mappings: its
// probes would never fire there, and the trace would count nothing without
// saying why. Nothing is said when its maps could not be read (-p 1 in a
// container), nor of a target that could not be stat'ed.
func notMapped(p *lang.Program, h *hostFacts) lang.ErrorList {
	if h.mapped == nil {
		return nil
	}
	var l lang.ErrorList
	for _, pr := range p.Probes {
		for _, ap := range pr.Attach {
			userFile := ap.Kind == lang.ProbeUSDT || ap.Kind == lang.ProbeUprobe || ap.Kind == lang.ProbeUretprobe
			// Only a target with a path has an inode.
			id, ok := h.inodes[ap.Target]
			if !userFile || !ok || h.mapped[id] {
				continue
			}
			l = append(l, &lang.Error{Span: ap.Loc,
				Msg:  fmt.Sprintf("process %d%s does not map %s: its probes would never fire", h.pid, h.pidName, ap.Target),
				Hint: "give -p the process that runs the file, or leave -p out to trace every process that runs it"})
		}
	}
	return l
}

// namesOne reports whether an attach point names one probe or function:
// no * or ? in its provider or name.
func namesOne(ap *lang.AttachPoint) bool {
	return !strings.ContainsAny(ap.Provider+ap.Func, "*?")
}

// probeLabel is how messages name the probe a usdt attach point asks for:
// provider:name, or the name alone when it gives no provider.
func probeLabel(ap *lang.AttachPoint) string {
	if ap.Provider == "" {
		return ap.Func
	}
	return ap.Provider + ":" + ap.Func
}

// usdtNotFound describes a usdt attach point that matched nothing in the
// files h read.
func usdtNotFound(ap *lang.AttachPoint, h *hostFacts) *lang.Error {
	want := probeLabel(ap)
	var names []string
	for _, f := range h.usdtFiles[ap].targets {
		for _, p := range f.probes {
			if ap.Provider == "" {
				names = append(names, p.Name)
			} else {
				names = append(names, p.Provider+":"+p.Name)
			}
		}
	}
	e := &lang.Error{Span: ap.Loc, Msg: fmt.Sprintf("usdt probe %s not found in %s", want, ap.Target)}
	if h.usdtFiles[ap].wild {
		e.Msg = fmt.Sprintf("usdt probe %s not found in the objects of the traced process", want)
		e.Hint = "a library the process loads later with dlopen is not searched: give its path in the probe"
	}
	if near := lang.ClosestName(want, names); near != "" {
		e.Hint = fmt.Sprintf("did you mean %s?", near)
	}
	return e
}

// symbolNotFound describes a uprobe attach point whose function the file
// h read does not have.
func symbolNotFound(ap *lang.AttachPoint, h *hostFacts) *lang.Error {
	name := ap.Function.Name
	e := &lang.Error{Span: ap.Loc, Msg: fmt.Sprintf("function %s not found in %s", name, ap.Target)}
	target := h.targets[ap.Target]
	var names, impls []string
	for _, s := range target.funcs {
		names = append(names, s.Name)
		if strings.HasPrefix(s.Name, "__"+name+"_") {
			impls = append(impls, s.Name)
		}
	}
	if slices.Contains(target.ifuncs, name) {
		// bpftrace attaches to the resolver, which runs once per process.
		e.Msg = fmt.Sprintf("function %s in %s is an IFUNC: its symbol is the resolver the dynamic loader calls once to choose an implementation", name, ap.Target)
		e.Hint = "a uprobe there fires only while the loader binds it"
		if len(impls) > 0 {
			slices.Sort(impls)
			e.Hint = "trace the implementations instead: " + strings.Join(slices.Compact(impls), ", ")
		}
		return e
	}
	if near := lang.ClosestName(name, names); near != "" {
		e.Hint = fmt.Sprintf("did you mean %s?", near)
	}
	return e
}
