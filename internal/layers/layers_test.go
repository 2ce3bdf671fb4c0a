package layers

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/gotrace/gotrace/internal/testenv"
)

const module = "github.com/gotrace/gotrace/"

// rule says that pkg (relative to the module) must not depend, directly or
// through others, on any package that forbidden matches, and why.
type rule struct {
	pkg       string
	forbidden []string // a module-relative path, or a whole import path; "x/..." matches x and below
	allowed   []string // exceptions to forbidden, matched the same way
	why       string
}

// layering is the whole table. A package that is not listed may depend
// on anything the compiler accepts.
var layering = []rule{
	{
		pkg:       "lang/attachpoint",
		forbidden: []string{"..."},
		allowed:   []string{"lang/attachpoint"},
		why:       "the attach-point grammar is a leaf every layer reads",
	},
	{
		pkg:       "lang",
		forbidden: []string{"codegen/...", "usdt/...", "runtime/...", "github.com/cilium/ebpf", "github.com/cilium/ebpf/link/..."},
		why:       "the front end checks a script without touching the host's BPF (it reads BTF types only)",
	},
	{
		pkg:       "codegen",
		forbidden: []string{"runtime/...", "github.com/cilium/ebpf/link/..."},
		why:       "a Spec is built without loading or attaching anything",
	},
	{
		pkg:       "usdt",
		forbidden: []string{"lang", "codegen/...", "runtime/...", "github.com/cilium/ebpf/..."},
		why:       "reading an ELF file's probes needs no language and no BPF",
	},
	{
		pkg:       "runtime/plan",
		forbidden: []string{"runtime", "runtime/attach/...", "runtime/output/...", "runtime/capture/...", "runtime/metrics/...", "runtime/stream/..."},
		why:       "the plan is a stage before the run: it never reaches what loads, attaches or writes (the capability table it asks does attach, to try a feature, so cilium/ebpf's link is among its dependencies)",
	},
	{
		pkg:       "runtime/proc",
		forbidden: []string{"...", "github.com/cilium/ebpf/..."},
		allowed:   []string{"runtime/proc", "internal/..."},
		why:       "process control knows nothing of the language, the code generator, probes or the runtime that calls it",
	},
	{
		pkg:       "runtime/output",
		forbidden: []string{"lang/...", "github.com/cilium/ebpf/..."},
		why:       "output formats what the Spec's layouts and parsed formats describe, without the language or BPF",
	},
	{
		pkg:       "runtime/unwind",
		forbidden: []string{"...", "github.com/cilium/ebpf/..."},
		allowed:   []string{"runtime/unwind"},
		why:       "unwind tables are read from ELF files alone; the unwinder that loads them is the caller",
	},
	{
		pkg:       "runtime/debuginfo",
		forbidden: []string{"codegen/...", "runtime", "runtime/plan/...", "runtime/attach/...", "github.com/cilium/ebpf", "github.com/cilium/ebpf/link/..."},
		why:       "debug information is read from files into the language's types, for the front end to check a uprobe's args; it loads and attaches nothing (lang reads BTF types, so cilium/ebpf's btf is among its dependencies)",
	},
	{
		pkg:       "runtime/symbols",
		forbidden: []string{"lang", "codegen/...", "runtime", "runtime/plan/...", "runtime/attach/...", "github.com/cilium/ebpf/..."},
		why:       "symbols are read from files and processes, for any stage that prints a stack",
	},
}

// matches says whether the import path dep is what pattern names.
func matches(pattern, dep string) bool {
	// A path whose first element has no dot is the module's own (as in
	// go list's patterns, where a domain name starts a remote path).
	if first, _, _ := strings.Cut(pattern, "/"); first == "..." || !strings.Contains(first, ".") {
		pattern = module + pattern
	}
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return dep == base || strings.HasPrefix(dep, base+"/")
	}
	if base, ok := strings.CutSuffix(pattern, "..."); ok {
		return strings.HasPrefix(dep, base)
	}
	return dep == pattern
}

func matchesAny(patterns []string, dep string) bool {
	for _, p := range patterns {
		if matches(p, dep) {
			return true
		}
	}
	return false
}

// TestLayering reads every package's dependencies with one go list and
// checks each rule of the table.
func TestLayering(t *testing.T) {
	goTool := testenv.RequireTool(t, "go")
	cmd := exec.Command(goTool, "list", "-f", `{{.ImportPath}} {{.Name}} {{join .Deps " "}}`, module+"...")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list the module's packages: %v", err)
	}
	deps := map[string][]string{}
	mains := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		deps[f[0]] = f[2:]
		mains[f[0]] = f[1] == "main"
	}
	// internal/ holds the pieces every layer may use (settings, ptregs,
	// capability, printf...) and the test machinery: none of them
	// reaches up into the layers that use them. A command (package main)
	// under internal/ is the top of its own stack and may.
	for pkg, list := range deps {
		if !matches("internal/...", pkg) || mains[pkg] {
			continue
		}
		for _, dep := range list {
			if matches("...", dep) && !matches("internal/...", dep) {
				t.Errorf("%s depends on %s, but nothing in internal/ uses a package above it", pkg, dep)
			}
		}
	}
	for _, r := range layering {
		list, ok := deps[module+r.pkg]
		if !ok {
			t.Errorf("%s: no such package (the table names a package that moved?)", r.pkg)
			continue
		}
		for _, dep := range list {
			if matchesAny(r.forbidden, dep) && !matchesAny(r.allowed, dep) {
				t.Errorf("%s depends on %s, but %s", r.pkg, dep, r.why)
			}
		}
	}
}

// TestMatches pins the pattern forms the table uses, so that a rule
// cannot pass by matching nothing.
func TestMatches(t *testing.T) {
	for _, c := range []struct {
		pattern, dep string
		want         bool
	}{
		{"runtime", module + "runtime", true},
		{"runtime", module + "runtime/plan", false},
		{"runtime/...", module + "runtime/plan", true},
		{"runtime/...", module + "runtime", true},
		{"runtime/...", module + "runtimex", false},
		{"...", module + "lang", true},
		{"...", "github.com/cilium/ebpf", false},
		{"github.com/cilium/ebpf/...", "github.com/cilium/ebpf/link", true},
		{"github.com/cilium/ebpf", "github.com/cilium/ebpf/btf", false},
		{"internal/...", module + "internal/ptregs", true},
	} {
		if got := matches(c.pattern, c.dep); got != c.want {
			t.Errorf("matches(%q, %q) = %v, want %v", c.pattern, c.dep, got, c.want)
		}
	}
}
