package lang

import "errors"

// The front end is one ordered list of passes over one Program. Parse
// builds the program from the source and does nothing else; the passes of
// Passes then run in order, each a function of the program as the passes
// before it left it:
//
//	parse     Parse: the AST as written, macro and enum definitions recorded
//	macros    expandMacros (macrodef.go): macro calls become their bodies
//	loopvars  scopeLoopVars (forloop.go): a map loop's variable gets a name of its own
//	enums     replaceEnumValues (enumdef.go): enumerators become integer literals
//	stdlib    replaceTaskBuiltins, replaceAsserts (stdlib.go): ppid, pcomm
//	          and assert() become what they stand for
//	resolve   Resolve (resolve.go): the real files and tracepoints attach
//	          points name, recorded in the Info (Info.AttachPoints)
//	check     Check (check*.go): types, constants, maps, symbols, recorded
//	          in the Info (info.go), not on the AST
//
// after which codegen.Compile turns the checked program and its Info into
// a Spec.
// gotrace -d NAME prints the program after the pass NAME.

// Pass is one named pass of the front end after Parse.
type Pass struct {
	// Name names the pass, for -d NAME.
	Name string
	// Desugar is set for a pass that rewrites syntax into simpler syntax:
	// bpftrace's -d prints the program after the last of them as the AST
	// "after: parser".
	Desugar bool
	run     func(p *Program, cfg Config, info *Info) error
}

// Passes are the front end's passes after Parse, in the order they run.
var Passes = []Pass{
	{Name: "macros", Desugar: true, run: func(p *Program, _ Config, _ *Info) error { return expandMacros(p) }},
	{Name: "loopvars", Desugar: true, run: func(p *Program, _ Config, _ *Info) error { scopeLoopVars(p); return nil }},
	{Name: "enums", Desugar: true, run: func(p *Program, _ Config, _ *Info) error { replaceEnumValues(p); return nil }},
	{Name: "stdlib", Desugar: true, run: func(p *Program, _ Config, _ *Info) error {
		replaceTaskBuiltins(p)
		replaceAsserts(p)
		return nil
	}},
	{Name: "resolve", run: Resolve},
	{Name: "check", run: Check},
}

// apply runs the pass over p; after a desugaring pass, which may build
// and copy expressions, it numbers the new ones (numberExprs).
func (pass Pass) apply(p *Program, cfg Config, info *Info) error {
	err := pass.run(p, cfg, info)
	if err == nil && pass.Desugar {
		numberExprs(p)
	}
	return err
}

// Analyze runs Passes over p in order, and after, when not nil, with each
// pass once it has run without error and the Info as far as it is
// filled in. It returns the Info the passes filled in, the side table of
// types, constants, maps and symbols that codegen reads, as far as they
// got when there are errors, as go/types does. A desugaring
// pass's error ends it. As in bpftrace, a target that cannot be resolved
// does not keep the checker from reporting the script's other errors:
// the diagnostics of resolve and check are returned together, in that
// order.
func Analyze(p *Program, cfg Config, after func(Pass, *Info)) (*Info, error) {
	info := NewInfo()
	var kept error
	for _, pass := range Passes {
		err := pass.apply(p, cfg, info)
		if err == nil && after != nil && kept == nil {
			after(pass, info)
		}
		switch {
		case err == nil:
		case pass.Desugar:
			return info, err
		default:
			kept = JoinDiagnostics(kept, err)
		}
	}
	return info, kept
}

// Desugar runs the desugaring passes alone (they come first): the
// program bpftrace's -d shows as the AST "after: parser".
func Desugar(p *Program) error {
	for _, pass := range Passes {
		if !pass.Desugar {
			break
		}
		if err := pass.apply(p, Config{}, nil); err != nil {
			return err
		}
	}
	return nil
}

// Frontend parses src and runs every pass over it: the checked program
// and its Info, which codegen.Compile takes.
func Frontend(file, src string, cfg Config) (*Program, *Info, error) {
	p, err := Parse(file, src)
	if err != nil {
		return nil, nil, err
	}
	info, err := Analyze(p, cfg, nil)
	if err != nil {
		return nil, nil, err
	}
	return p, info, nil
}

// JoinDiagnostics returns the diagnostics of first and then, when both
// are diagnostics (ErrorList), those of second; an error that is not
// diagnostics (a bad setting) wins.
func JoinDiagnostics(first, second error) error {
	var a, b ErrorList
	switch {
	case first == nil:
		return second
	case second == nil:
		return first
	case !errors.As(second, &b):
		return second
	case !errors.As(first, &a):
		return first
	}
	return append(a, b...)
}
