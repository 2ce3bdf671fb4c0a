package lang

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gotrace/gotrace/lang/attachpoint"
)

// Host is what the front end asks of the machine it runs on, so that lang
// itself opens no file (the pattern of go/types' Importer): the caller
// provides it in Config (usdt.Host is gotrace's).
type Host interface {
	// FindTarget returns the file a bare target name (no '/', no
	// wildcard) of a usdt, uprobe or uretprobe attach point stands for,
	// or an error that says where it was looked for.
	FindTarget(name string) (string, error)
	// ObjectSymbol returns the address and size of the data symbol name
	// in the ELF file path, which uaddr() reads.
	ObjectSymbol(path, name string) (addr, size uint64, err error)
}

// ProcessHost is a Host that traces one process (-p), which may run in
// another mount namespace: the absolute target path of a usdt or uprobe
// attach point names that process's file.
type ProcessHost interface {
	// ProcessPath returns the path to open the file path names for the
	// process by: path itself, or the same file under /proc/PID/root.
	ProcessPath(path string) string
}

// Resolve finds what the attach points of p attach to, before Check
// types the program, so that the checker and uaddr() see the real file,
// and records them in info (Info.AttachPoints), leaving p as parsed: it
// substitutes the positional parameters cfg.Params in every field ($1 in
// usdt:$1:net:inbound_message, interval:s:$1), finds the tracepoints and
// kernel functions a tracepoint, kfunc or kretfunc attach point matches,
// notes whether the trace ends after its begin probes
// (Info.ExitsAfterBegin),
// records the perf event a software or hardware attach point counts,
// a watchpoint's access bits and a uprobe's function field, parsed
// (AttachPoint.PerfEvent, WatchAccess, Function), and
// replaces a bare target (python3.11, libc) by the file cfg.Host
// finds for it (with no Host, bare targets stay as written). Wildcards
// in paths and functions are left to the plan, which knows the files and
// processes. The errors are an ErrorList; an attach point with one is
// recorded as far as it was resolved (its parameters substituted, say),
// which the checker's messages then name, as bpftrace's do.
func Resolve(p *Program, cfg Config, info *Info) error {
	var errs ErrorList
	// In current bpftrace a script whose probes are all begin or end
	// ends once its begin probes have run; in 0.17 it runs until it is
	// stopped, so only a script that selects the newer behaviour ends.
	info.exitsAfterBegin = p.Newer
	for _, pr := range p.Probes {
		resolved := make([]*AttachPoint, len(pr.Attach))
		for i, parsed := range pr.Attach {
			copied := *parsed
			ap := &copied
			resolved[i] = ap
			if err := substituteParams(ap, cfg.Params); err != nil {
				errs = append(errs, &Error{Span: ap.Loc, Msg: err.Error()})
				continue
			}
			// Read after the parameters are substituted: BEG$1 is a
			// begin probe only then.
			if ap.Kind != ProbeBegin && ap.Kind != ProbeEnd {
				info.exitsAfterBegin = false
			}
			copied.PerfEvent, copied.WatchAccess = eventOf(ap.Point)
			if ap.Kind == ProbeUprobe || ap.Kind == ProbeUretprobe {
				copied.Function = attachpoint.ParseFunc(ap.Func)
			}
			if (ap.Kind == ProbeKfunc || ap.Kind == ProbeKretfunc) && cfg.Kernel != nil {
				if err := resolveKfunc(ap, cfg.Kernel); err != nil {
					errs = append(errs, &Error{Span: ap.Loc, Msg: err.Error()})
				}
				continue
			}
			if th, ok := cfg.Host.(TracepointHost); ok && ap.Kind == ProbeTracepoint {
				if err := resolveTracepoint(ap, th); err != nil {
					errs = append(errs, &Error{Span: ap.Loc, Msg: err.Error()})
				}
				continue
			}
			if ph, ok := cfg.Host.(ProcessHost); ok && absoluteTarget(ap) {
				ap.Target = ph.ProcessPath(ap.Target)
				continue
			}
			if cfg.Host == nil || !bareTarget(ap) {
				continue
			}
			path, err := cfg.Host.FindTarget(ap.Target)
			if err != nil {
				kind := "uprobe"
				if ap.Kind == ProbeUSDT {
					kind = "usdt"
				}
				errs = append(errs, &Error{
					Span: ap.Loc,
					Msg:  fmt.Sprintf("%s target file '%s' does not exist or is not executable", kind, ap.Target),
					Hint: err.Error(),
				})
				continue
			}
			ap.Target = path
		}
		info.attach[pr] = resolved
		if dh, ok := cfg.Host.(DebugInfoHost); ok {
			reads := usesArgs(pr)
			for _, ap := range resolved {
				if ap.Kind != ProbeUprobe && ap.Kind != ProbeUretprobe {
					continue
				}
				if reads && ap.Kind == ProbeUprobe {
					if err := resolveUprobeArgs(p, ap, dh, info); err != nil {
						errs = append(errs, &Error{Span: ap.Loc, Msg: err.Error()})
					}
				}
				if !strings.ContainsAny(ap.Target, "*?[") {
					resolveCastStructs(p, pr, ap, dh, info)
				}
			}
		}
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

// eventOf returns what attach point p, its parameters substituted,
// asks the kernel to count: the perf event a software or hardware attach
// point names and the access bits of a watchpoint's mode, both of which
// the parser checked. Resolve records them on its copy, so that the code
// generator reads them instead of parsing the attach point again.
func eventOf(p attachpoint.Point) (attachpoint.PerfEvent, uint32) {
	switch p.Kind {
	case ProbeSoftware, ProbeHardware:
		// Not found leaves the zero event, whose empty name the code
		// generator refuses; the parser has said why.
		ev, _ := attachpoint.LookupPerfEvent(p.Kind, p.Func)
		return ev, 0
	case ProbeWatchpoint:
		return attachpoint.PerfEvent{}, attachpoint.WatchAccess(p.Mode)
	}
	return attachpoint.PerfEvent{}, 0
}

// substituteParams replaces $N in the target, provider, function and text
// of attach point ap by the Nth positional parameter, as bpftrace does
// (usdt:$1:net:inbound_message), and sets a rate given as one.
func substituteParams(ap *AttachPoint, params []string) error {
	if kind, _, _ := strings.Cut(ap.Raw, ":"); ap.Kind == ProbeUnknown && strings.Contains(kind, "$") {
		// A parameter in the probe type (BEG$1) that the parser left
		// for now.
		raw, err := expandParams(ap.Raw, params)
		if err != nil {
			return err
		}
		pt, errs := attachpoint.Parse(raw)
		if len(errs) > 0 {
			return errs[0]
		}
		ap.Raw, ap.Point = raw, pt
		return nil
	}
	for _, f := range []*string{&ap.Target, &ap.Provider, &ap.Func, &ap.Raw} {
		s, err := expandParams(*f, params)
		if err != nil {
			return err
		}
		*f = s
	}
	if ap.FreqParam == "" {
		return nil
	}
	s, err := expandParams(ap.FreqParam, params)
	if err != nil {
		return err
	}
	if ap.Freq, err = attachpoint.ParseFreq(ap.Kind, ap.Unit, s); err != nil {
		return err
	}
	ap.FreqParam = ""
	return nil
}

// expandParams replaces every $N in s by params[N-1].
func expandParams(s string, params []string) (string, error) {
	if !strings.Contains(s, "$") {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' {
			b.WriteByte(s[i])
			continue
		}
		j := i + 1
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			j++
		}
		if j == i+1 {
			b.WriteByte(s[i])
			continue
		}
		n, err := strconv.Atoi(s[i+1 : j])
		if err != nil || n < 1 || n > len(params) {
			return "", fmt.Errorf("positional parameter $%s is not given", s[i+1:j])
		}
		b.WriteString(params[n-1])
		i = j - 1
	}
	return b.String(), nil
}

// bareTarget reports whether ap is a usdt, uprobe or uretprobe attach
// point whose target is a bare file name.
func bareTarget(ap *AttachPoint) bool {
	return userTarget(ap) && ap.Target != "" && !strings.ContainsAny(ap.Target, "/*?")
}

// absoluteTarget reports whether ap is a usdt, uprobe or uretprobe attach
// point whose target is an absolute path without a wildcard.
func absoluteTarget(ap *AttachPoint) bool {
	return userTarget(ap) && strings.HasPrefix(ap.Target, "/") && !strings.ContainsAny(ap.Target, "*?")
}

// userTarget reports whether ap attaches to a file: usdt, uprobe or
// uretprobe.
func userTarget(ap *AttachPoint) bool {
	return ap.Kind == ProbeUSDT || ap.Kind == ProbeUprobe || ap.Kind == ProbeUretprobe
}
