package plan

// gotrace's own sites: programs the run attaches for itself, not for a
// probe of the script. A -c trace with a family filter keeps the
// command's family with two tracepoint programs, three in a PID namespace
// of gotrace's own (codegen's FamilySpec), and a -c command whose library
// loads are watched stops in its dynamic loader's _dl_debug_state
// (codegen's Spec.LoaderProgram). They are
// planned and attached like the script's sites, but kept apart
// (Plan.Own): "Attaching N probes...", the missing-probe policy and -l
// count the script's probes alone.

import (
	"fmt"

	"github.com/gotrace/gotrace/codegen"
	"github.com/gotrace/gotrace/lang"
)

// loaderSymbol is the dynamic loader's function that it calls when it
// has mapped new objects, before their code runs (the debugger's hook,
// r_brk of struct r_debug).
const loaderSymbol = "_dl_debug_state"

// ownSites plans gotrace's own sites of spec, from what h read of the
// host for a run on in: the family's tracepoints (fork, exit, and exec
// in a PID namespace of gotrace's own), then the loader's
// uprobe, for the -c command's process alone. A static command gets no
// loader site: it loads nothing later.
func ownSites(spec *codegen.Spec, h *hostFacts, in Input) ([]Site, error) {
	var own []Site
	if f := spec.Family; f != nil && f.Fork != "" {
		type tracepoint struct{ prog, event, why string }
		tps := []tracepoint{
			{f.Fork, "sched_process_fork", "gotrace's own: keeps the -c command's family"},
			{f.Exit, "sched_process_exit", "gotrace's own: keeps the -c command's family"},
		}
		if f.Seed != "" {
			tps = append(tps, tracepoint{f.Seed, "sched_process_exec",
				"gotrace's own: adds the -c command to its family by the kernel's PID when it runs (gotrace's PID namespace numbers it otherwise)"})
		}
		for _, tp := range tps {
			probe := "tracepoint:sched:" + tp.event
			own = append(own, Site{
				Attachment: &codegen.Attachment{Program: tp.prog, Kind: lang.ProbeTracepoint, Probe: probe, ProbeName: probe,
					Tracepoint: &lang.Tracepoint{Category: "sched", Name: tp.event}},
				Own: "keep the -c command's processes",
				Why: tp.why,
			})
		}
	}
	if spec.LoaderProgram != "" {
		l := h.loader
		if l.err != nil {
			return nil, l.err
		}
		if l.interp != "" {
			probe := fmt.Sprintf("uprobe:%s:%s", l.interp, loaderSymbol)
			own = append(own, Site{
				Attachment: &codegen.Attachment{Program: spec.LoaderProgram, Kind: lang.ProbeUprobe, Probe: probe, ProbeName: probe, Path: l.interp, Symbol: loaderSymbol},
				Path:       l.interp,
				Symbol:     loaderSymbol,
				PID:        in.ChildPID,
				Own:        "watch the loads of " + l.command,
				Why:        "gotrace's own: libraries the command loads later",
			})
		}
	}
	for i := range own {
		own[i].When = whenOfSite(own[i])
	}
	return own, nil
}
