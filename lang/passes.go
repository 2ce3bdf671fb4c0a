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
//	resolve   Resolve (resolve.go): attach points name real files and tracepoints
//	check     Check (check*.go): types, maps, symbols
//
// after which codegen.Compile turns the checked program into a Spec.
// gotrace -d NAME prints the program after the pass NAME.

// Pass is one named pass of the front end after Parse.
type Pass struct {
	// Name names the pass, for -d NAME.
	Name string
	// Desugar is set for a pass that rewrites syntax into simpler syntax:
	// bpftrace's -d prints the program after the last of them as the AST
	// "after: parser".
	Desugar bool
	run     func(p *Program, cfg Config) error
}

// Passes are the front end's passes after Parse, in the order they run.
var Passes = []Pass{
	{Name: "macros", Desugar: true, run: func(p *Program, _ Config) error { return expandMacros(p) }},
	{Name: "loopvars", Desugar: true, run: func(p *Program, _ Config) error { scopeLoopVars(p); return nil }},
	{Name: "enums", Desugar: true, run: func(p *Program, _ Config) error { replaceEnumValues(p); return nil }},
	{Name: "stdlib", Desugar: true, run: func(p *Program, _ Config) error {
		replaceTaskBuiltins(p)
		replaceAsserts(p)
		return nil
	}},
	{Name: "resolve", run: Resolve},
	{Name: "check", run: Check},
}

// Analyze runs Passes over p in order, and after, when not nil, with each
// pass once it has run without error. A desugaring pass's error ends it.
// As in bpftrace, a target that cannot be resolved does not keep the
// checker from reporting the script's other errors: the diagnostics of
// resolve and check are returned together, in that order.
func Analyze(p *Program, cfg Config, after func(Pass)) error {
	var kept error
	for _, pass := range Passes {
		err := pass.run(p, cfg)
		if err == nil && after != nil && kept == nil {
			after(pass)
		}
		switch {
		case err == nil:
		case pass.Desugar:
			return err
		default:
			kept = JoinDiagnostics(kept, err)
		}
	}
	return kept
}

// Desugar runs the desugaring passes alone (they come first): the
// program bpftrace's -d shows as the AST "after: parser".
func Desugar(p *Program) error {
	for _, pass := range Passes {
		if !pass.Desugar {
			break
		}
		if err := pass.run(p, Config{}); err != nil {
			return err
		}
	}
	return nil
}

// Frontend parses src and runs every pass over it: the checked program
// codegen.Compile takes.
func Frontend(file, src string, cfg Config) (*Program, error) {
	p, err := Parse(file, src)
	if err != nil {
		return nil, err
	}
	if err := Analyze(p, cfg, nil); err != nil {
		return nil, err
	}
	return p, nil
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
