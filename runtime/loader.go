package runtime

import (
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/gotrace/gotrace/lang"
	"github.com/gotrace/gotrace/runtime/plan"
	"github.com/gotrace/gotrace/usdt"
)

// A -c command can load libraries after it starts (java loads libjvm.so
// with dlopen). Attach points with a path attach by file and find them;
// those without one (usdt::provider:name) only search the objects known at
// start. For those codegen's loader program is attached to the dynamic
// loader's _dl_debug_state (a site of gotrace's own in the plan), which
// the loader calls when it has mapped new objects and before their code
// runs. The program stops the process and tells the runtime, which
// searches the new objects, compiles and attaches programs for the
// probes they have, and lets the process go on (loadedObjects).

// fileID identifies a file whatever path it is reached by.
type fileID struct{ dev, ino uint64 }

func idOf(path string) (fileID, bool) {
	fi, err := os.Stat(path)
	if err != nil {
		return fileID{}, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, false
	}
	return fileID{st.Dev, st.Ino}, true
}

// searchedAtStart records the objects whose probes the run's plan
// looked for (objs), when the -c command's loads are watched (the
// loader's site is attached then): loadedObjects searches only the
// objects mapped since.
func (t *tracer) searchedAtStart(objs []string) {
	if t.spec.LoaderProgram == "" {
		return
	}
	t.searched = map[fileID]bool{}
	for _, o := range objs {
		if id, ok := idOf(o); ok {
			t.searched[id] = true
		}
	}
}

// loadedObjects handles an EventLoad: the command is stopped (or about to
// stop) in its dynamic loader. It searches the objects the command maps
// that were not searched yet for the probes of the attach points without
// a path, attaches programs for them, and then resumes the command. The
// caller holds t.mu.
func (t *tracer) loadedObjects() error {
	defer unix.Kill(t.pid, unix.SIGCONT)
	objs, err := usdt.ProcessPaths(t.pid)
	if err != nil {
		return nil // the command has gone
	}
	var fresh []string
	for _, o := range objs {
		id, ok := idOf(o)
		if !ok || t.searched[id] {
			continue
		}
		t.searched[id] = true
		fresh = append(fresh, o)
	}
	if len(fresh) == 0 {
		return nil
	}
	// Only the attach points without a path look in the new objects: the
	// others are attached already, and their files need no new reading.
	in := t.withFamily(planInput(t.opts, fresh, t.pid, t.files))
	in.Codegen.Extends = t.spec
	spec, passes, err := plan.Loaded(t.prog, t.info, fresh, in)
	if err != nil || spec == nil {
		return err
	}
	coll, err := loadSharing(t.attached.target.Mode.Loadable(spec), t.coll.Maps)
	if err != nil {
		return fmt.Errorf("load the probes of %v: %w", fresh, err)
	}
	t.later.keep(coll)
	target := t.attached.target
	target.Reload = t.perfReload(spec.Collection)
	if err := t.attached.attachBefore(passes, coll, target); err != nil {
		return err
	}
	t.spec.Events, t.spec.Attachments = spec.Events, spec.Attachments
	return nil
}

// waiting returns the attach points without a path that no program is
// attached to yet: with a -c command whose loads are watched, they wait
// for the objects it loads later.
func (t *tracer) waiting() []*lang.AttachPoint {
	if t.spec.LoaderProgram == "" {
		return nil
	}
	attached := map[lang.Span]bool{}
	for _, a := range t.spec.Attachments {
		attached[a.ProbePos] = true
	}
	var aps []*lang.AttachPoint
	for _, pr := range t.prog.Probes {
		for _, ap := range pr.Attach {
			if ap.Kind == lang.ProbeUSDT && plan.WildcardPath(ap.Target) && !attached[ap.Loc] {
				aps = append(aps, ap)
			}
		}
	}
	return aps
}

// warnUnmatched warns, at the end of a trace that watched the -c command's
// loads, about each attach point without a path that names one probe and
// was found in no object the command had or loaded.
func (t *tracer) warnUnmatched() {
	if t.opts.NoWarnings {
		return
	}
	plan.WarnNotLoaded(t.prog, t.waiting(), t.opts.MissingProbes, t.opts.Err)
}
