package attachpoint

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// listed are the kinds -l lists; a wildcard probe type stands for
// wildcardKinds, as in bpftrace 0.17, which lists return probes only by
// name.
var (
	listed        = []Kind{Uprobe, Uretprobe, USDT}
	wildcardKinds = []Kind{Uprobe, USDT}
)

// ParsePattern parses a pattern of -l into the attach points it lists,
// each field a glob (Glob): usdt:PATH:NAME, usdt:PATH:PROVIDER:NAME,
// uprobe:PATH:FUNCTION or uretprobe:PATH:FUNCTION, and with a PID
// usdt:NAME (PATH selects among the process's objects) and
// uprobe:FUNCTION (Target "": the process's executable). A wildcard probe
// type stands for uprobe and usdt where their fields fit, and "*" with a
// PID for every probe of the process. A usdt point's empty provider is
// "*", and with a PID its empty path; a function's offset (Py_Main+4) is
// dropped, as 0.17 lists the function. The messages are bpftrace's.
func ParsePattern(s string, withPID bool) ([]Point, error) {
	fields, err := Split(s)
	if err != nil {
		return nil, err
	}
	typ, args := fields[0], fields[1:]
	kinds := listed
	wildcard := strings.ContainsAny(typ, "*?")
	if k, ok := LookupKind(typ); ok && slices.Contains(listed, k) {
		kinds = []Kind{k}
	} else if wildcard {
		kinds = WildcardUserKinds(typ)
		if len(kinds) == 0 {
			return nil, fmt.Errorf("No probe type matched for %s: gotrace -l lists uprobe, uretprobe and usdt probes, and a wildcard stands for uprobe and usdt", typ)
		}
		if len(args) == 0 && withPID {
			args = []string{"*"}
		}
	} else {
		return nil, fmt.Errorf("probe type '%s' is not listed: gotrace -l lists uprobe, uretprobe and usdt probes", typ)
	}
	var points []Point
	for _, k := range kinds {
		parse := parseUprobePattern
		if k == USDT {
			parse = parseUSDTPattern
		}
		p, err := parse(k, args, withPID)
		switch {
		case err == nil:
			points = append(points, p)
		case !wildcard:
			return nil, err
		}
	}
	if len(points) == 0 {
		return nil, fmt.Errorf("'%s' names no probe that gotrace lists: they are 'uprobe:FILE:FUNCTION' and 'usdt:FILE:[PROVIDER:]NAME', or with -p PID 'uprobe:FUNCTION' and 'usdt:NAME'; gotrace has no kernel probes", s)
	}
	return points, nil
}

// WildcardUserKinds are the user-space kinds -l lists for a probe type
// glob such as "u*" (the kernel's, hardware and software for "*ware", are
// the runtime's to list).
func WildcardUserKinds(typ string) []Kind {
	return slices.DeleteFunc(slices.Clone(wildcardKinds), func(k Kind) bool { return !Glob.Match(typ, k.String()) })
}

// parseUSDTPattern reads the fields of a usdt pattern: PATH:NAME or
// PATH:PROVIDER:NAME, or NAME alone with a PID.
func parseUSDTPattern(k Kind, args []string, withPID bool) (Point, error) {
	p := Point{Kind: k}
	switch {
	case len(args) == 1 && withPID:
		p.Target, p.Provider, p.Func = "*", "*", args[0]
	case len(args) == 2:
		p.Target, p.Provider, p.Func = args[0], "*", args[1]
	case len(args) == 3:
		p.Target, p.Provider, p.Func = args[0], args[1], args[2]
	default:
		return p, ArgCountError(k.String(), "2 or 3 arguments")
	}
	if p.Provider == "" {
		p.Provider = "*"
	}
	if p.Target == "" {
		if !withPID {
			return p, errors.New("usdt probe must have a target file")
		}
		p.Target = "*"
	}
	if p.Func == "" {
		return p, errors.New("usdt probe must have a target function or wildcard")
	}
	return p, nil
}

// parseUprobePattern reads the fields of a uprobe or uretprobe pattern:
// TARGET:FUNCTION, or FUNCTION alone with a PID.
func parseUprobePattern(k Kind, args []string, withPID bool) (Point, error) {
	p := Point{Kind: k}
	switch {
	case len(args) == 2:
		p.Target, p.Func = args[0], args[1]
		if p.Target == "" {
			return p, fmt.Errorf("%s should have a target", k)
		}
	case len(args) == 1 && withPID:
		p.Func = args[0]
	default:
		return p, ArgCountError(k.String(), "2 arguments")
	}
	if p.Func == "" {
		return p, fmt.Errorf("%s should be attached to a function and/or address", k)
	}
	if _, ok := ParseNumber(p.Func); ok {
		return p, fmt.Errorf("%s is an address: -l lists functions by name", p.Func)
	}
	if f := ParseFunc(p.Func); f.HasOffset {
		if k == Uretprobe {
			return p, errors.New("Offset not allowed")
		}
		p.Func = f.Name
	}
	return p, nil
}
