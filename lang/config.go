package lang

import (
	"slices"
	"strings"
)

// This file reads the `config = { key = value; ... }` block (bpftrace
// 0.20) that may open a script. Keys are bpftrace's short names
// (max_strlen) or its environment variables' names (BPFTRACE_MAX_STRLEN).

// ConfigSetting is one `key = value` of a config block.
type ConfigSetting struct {
	Loc Span
	// Key is the short name, lower case: max_strlen for
	// BPFTRACE_MAX_STRLEN too.
	Key string
	// Value is the value as written, without a string's quotes.
	Value string
}

// configKeys are bpftrace's configuration options. gotrace acts on
// max_strlen, max_map_keys, max_cat_bytes, cpp_demangle, perf_rb_pages,
// print_maps_on_exit and missing_probes (internal/settings), and has two of its own, max_buflen (lang.Config.BufLen) and stack_unwind
// (codegen and runtime);
// the others are
// accepted so that scripts written for bpftrace run, and change nothing
// (gotrace has no LLVM, no BTF and attaches only what it can).
var configKeys = []string{
	"cache_user_symbols", "cpp_demangle", "lazy_symbolication", "license",
	"log_size", "max_bpf_progs", "max_buflen", "max_cat_bytes", "max_map_keys",
	"max_probes", "max_strlen", "max_type_res_iterations", "missing_probes",
	"on_stack_limit", "perf_rb_pages", "print_maps_on_exit", "show_debug_info",
	"stack_mode", "stack_unwind", "str_trunc_trailer", "symbol_source", "use_blazesym",
	"unstable_import", "unstable_macro", "unstable_map_decl", "unstable_tseries",
	"unstable_addr", "unstable_typeinfo",
}

// Setting returns the value the script's config block gives key (a short
// name), and whether it gives one.
func (p *Program) Setting(key string) (string, bool) {
	for i := len(p.Config) - 1; i >= 0; i-- {
		if p.Config[i].Key == key {
			return p.Config[i].Value, true
		}
	}
	return "", false
}

// configBlock parses `config = { ... }`.
func (p *parser) configBlock(prog *Program) {
	p.next()
	p.expect("=", "=")
	p.expect("{", "{")
	for !p.is("}") {
		if p.is(";") {
			p.next()
			continue
		}
		start := p.take(tokIdent, "identifier")
		p.expect("=", "=")
		v := p.tok()
		value := v.Value
		switch v.Type {
		case tokInt, tokIdent:
		case tokString:
			value, _ = unquoteC(v)
		default:
			p.fail("integer or string or identifier")
		}
		p.next()
		s := &ConfigSetting{Loc: p.span(start), Key: strings.ToLower(strings.TrimPrefix(start.Value, "BPFTRACE_"))}
		if !slices.Contains(configKeys, s.Key) {
			p.errorf(s.Loc, "%s: not a known configuration option", start.Value)
		}
		s.Value = value
		prog.Config = append(prog.Config, s)
		if !p.is("}") {
			p.expect(";", `} or ";"`)
		}
	}
	p.next()
}
