package runtime

import (
	"fmt"
	"strings"

	"github.com/gotrace/gotrace/lang"
	"github.com/gotrace/gotrace/usdt"
)

// resolveTargets replaces the target of every usdt, uprobe and uretprobe
// attach point of p that is a bare name (no '/', no wildcard) by the file
// bpftrace 0.17 finds for it, so that the probe builtin prints that path
// as bpftrace's does: see usdt.FindTarget. A file in the working directory
// keeps its name as written (usdt:bitcoind:...). A name found nowhere is
// an error in bpftrace's words. objs are the objects of the -c command or
// the -p process; with -p they may be nil (nothing needed them), and are
// then read when a library name needs them.
func resolveTargets(p *lang.Program, opts Options, objs []string) error {
	var errs lang.ErrorList
	for _, pr := range p.Probes {
		for _, ap := range pr.Attach {
			if !bareTarget(ap) {
				continue
			}
			if objs == nil && opts.PID != 0 && strings.HasPrefix(ap.Target, "lib") {
				// The process is there: what it maps decides, and when
				// it cannot be read the other places still do.
				objs, _ = usdt.ProcessPaths(opts.PID)
			}
			mapped, loaded := objs, []string(nil)
			if opts.Command != "" {
				mapped, loaded = nil, objs
			}
			path := usdt.FindTarget(ap.Target, mapped, loaded)
			if path == "" {
				kind := "uprobe"
				if ap.Kind == lang.ProbeUSDT {
					kind = "usdt"
				}
				errs = append(errs, &lang.Error{
					Span: ap.Loc,
					Msg:  fmt.Sprintf("%s target file '%s' does not exist or is not executable", kind, ap.Target),
					Hint: targetHint(ap.Target),
				})
				continue
			}
			ap.Target = path
		}
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

// bareTarget reports whether ap is a usdt, uprobe or uretprobe attach
// point whose target is a bare file name.
func bareTarget(ap *lang.AttachPoint) bool {
	switch ap.Kind {
	case lang.ProbeUSDT, lang.ProbeUprobe, lang.ProbeUretprobe:
	default:
		return false
	}
	return ap.Target != "" && !strings.ContainsAny(ap.Target, "/*?")
}

// targetHint says where a bare target name was looked for.
func targetHint(name string) string {
	if strings.HasPrefix(name, "lib") {
		return "looked for as " + name + ".so* in the loader's cache (ldconfig -p) and among the objects of a -p process or -c command, then in the working directory and $PATH; a library is named without .so (libc)"
	}
	return "looked for in the working directory and $PATH; a library is named by lib and its name without .so (libc)"
}
