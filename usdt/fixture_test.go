package usdt

import (
	"debug/elf"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gotrace/gotrace/internal/fixture"
)

// fixtureModern are the probes with semaphores (fixture.ModernProbes).
const fixtureModern = 20

// fixtureTokens returns the size tokens of the fixture's probe id
// (provider:name) and whether it has a semaphore; ok is false for a probe
// the fixture does not have.
func fixtureTokens(id string) (tokens string, modern, ok bool) {
	if tokens, ok := fixture.ModernProbes[id]; ok {
		return tokens, true, true
	}
	tokens, ok = fixture.LegacyProbes[id]
	return tokens, false, ok
}

func argTokens(s string) string {
	var toks []string
	for _, f := range strings.Fields(s) {
		size, _, _ := strings.Cut(f, "@")
		toks = append(toks, size)
	}
	return strings.Join(toks, " ")
}

// semaphoreSymbols maps the address of every <provider>_<name>_semaphore
// symbol of the file to the probe it belongs to.
func semaphoreSymbols(t *testing.T, path string) map[uint64]string {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	m := make(map[uint64]string)
	for _, s := range syms {
		if name, ok := strings.CutSuffix(s.Name, "_semaphore"); ok {
			m[s.Value] = name
		}
	}
	return m
}

// checkFixture checks the probes of a fixture build: every probe of the
// spec with its tokens, semaphores on the modern ones only (when the build
// has them; named by their symbols when it has a symbol table), no argument
// that does not parse. It returns the probes.
func checkFixture(t *testing.T, path string, withSemaphores, withSymbols bool, locations int) []Probe {
	t.Helper()
	probes, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := len(fixture.ModernProbes) + len(fixture.LegacyProbes); len(probes) != want {
		t.Errorf("%d probes, want %d", len(probes), want)
	}
	var sems map[uint64]string
	if withSymbols {
		sems = semaphoreSymbols(t, path)
	}
	n, modern := 0, 0
	for _, p := range probes {
		id := p.Provider + ":" + p.Name
		want, isModern, ok := fixtureTokens(id)
		if !ok {
			t.Errorf("unexpected probe %s", id)
			continue
		}
		if isModern {
			modern++
		}
		for _, l := range p.Locations {
			n++
			if got := argTokens(l.ArgString); got != want && !(id == "net:push_message" && got == "8 8 8 -8") {
				t.Errorf("%s: tokens %q, want %q", id, got, want)
			}
			if l.ArgsErr != nil {
				t.Errorf("%s: %v", id, l.ArgsErr)
			}
			switch {
			case withSemaphores && isModern:
				if l.Semaphore == 0 || l.SemaphoreOffset == 0 {
					t.Errorf("%s: semaphore %#x at offset %#x, want one", id, l.Semaphore, l.SemaphoreOffset)
				} else if sym := sems[l.Semaphore]; withSymbols && sym != p.Provider+"_"+p.Name {
					t.Errorf("%s: semaphore %#x is symbol %q_semaphore", id, l.Semaphore, sym)
				}
			case l.Semaphore != 0:
				t.Errorf("%s: semaphore %#x, want none", id, l.Semaphore)
			}
		}
	}
	if modern != fixtureModern {
		t.Errorf("%d modern probes, want %d", modern, fixtureModern)
	}
	if n != locations {
		t.Errorf("%d notes, want %d", n, locations)
	}
	return probes
}

// hasOperand reports whether some argument's operand satisfies f.
func hasOperand(probes []Probe, f func(Arg) bool) bool {
	for _, p := range probes {
		for _, l := range p.Locations {
			for _, a := range l.Args {
				if f(a) {
					return true
				}
			}
		}
	}
	return false
}

func TestFixtureProbes(t *testing.T) {
	t.Run("O2", func(t *testing.T) {
		probes := checkFixture(t, fixture.Build(t, "bitcoind"), true, true, 29)
		if !hasOperand(probes, func(a Arg) bool { return a.Loc == ArgConstant }) {
			t.Error("the -O2 build has no $imm operand")
		}
	})
	t.Run("O0", func(t *testing.T) {
		probes := checkFixture(t, fixture.Build(t, "bitcoind-O0"), true, true, 29)
		if !hasOperand(probes, func(a Arg) bool { return a.Loc == ArgMemory && a.Reg.Name == "rbp" }) {
			t.Error("the -O0 build has no (%rbp) operand")
		}
	})
	t.Run("nopie", func(t *testing.T) {
		probes := checkFixture(t, fixture.Build(t, "bitcoind-nopie"), true, true, 29)
		// Absolute addresses: the offset is the address less the
		// segment's base, never the address itself.
		for _, p := range probes {
			if l := p.Locations[0]; l.PC == l.Offset {
				t.Errorf("%s:%s: non-PIE offset %#x equals its address", p.Provider, p.Name, l.Offset)
			}
		}
	})
	t.Run("nosem", func(t *testing.T) {
		checkFixture(t, fixture.Build(t, "bitcoind-nosem"), false, false, 29)
	})
	t.Run("stripped", func(t *testing.T) {
		// The notes and so the semaphores survive strip.
		checkFixture(t, fixture.Build(t, "bitcoind-stripped"), true, false, 29)
	})
	t.Run("pushdoc", func(t *testing.T) {
		probes := checkFixture(t, fixture.Build(t, "bitcoind-pushdoc"), true, true, 29)
		for _, p := range probes {
			if p.Name == "push_message" && argTokens(p.Locations[0].ArgString) != "8 8 8 -8" {
				t.Errorf("pushdoc net:push_message tokens %q, want 8 8 8 -8", p.Locations[0].ArgString)
			}
		}
	})
	t.Run("dupsite", func(t *testing.T) {
		probes := checkFixture(t, fixture.Build(t, "bitcoind-dupsite"), true, true, 30)
		for _, p := range probes {
			if p.Name != "outbound_message" {
				continue
			}
			if len(p.Locations) != 2 {
				t.Fatalf("net:outbound_message has %d locations, want 2", len(p.Locations))
			}
			l0, l1 := p.Locations[0], p.Locations[1]
			if l0.PC == l1.PC || l0.Semaphore != l1.Semaphore {
				t.Errorf("net:outbound_message locations %+v and %+v, want two sites sharing a semaphore", l0, l1)
			}
		}
	})
}

// TestFixtureListMatchesBpftrace lists the fixture the way the contrib
// scripts name it, as ./bitcoind from its directory, and by absolute path.
func TestFixtureListMatchesBpftrace(t *testing.T) {
	bin := fixture.Build(t, "bitcoind")
	dir := filepath.Dir(bin)
	for _, pat := range []string{"usdt:" + bin + ":*", "usdt:./bitcoind:*", "usdt:./bitcoind:net:*", "usdt:" + bin + ":*:*connection"} {
		want := bpftraceList(t, dir, pat)
		t.Chdir(dir)
		got := listString(t, ListOptions{Pattern: pat})
		if got != want {
			t.Errorf("List(%q) differs from bpftrace:\n%s", pat, lineDiff(got, want))
		}
		if n := strings.Count(got, "\n"); pat == "usdt:./bitcoind:*" && n != 29 {
			t.Errorf("List(%q) printed %d probes, want 29", pat, n)
		}
	}
}
