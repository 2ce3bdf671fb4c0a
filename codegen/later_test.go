package codegen

import (
	"strings"
	"testing"

	"github.com/gotrace/gotrace/internal/settings"
	"github.com/gotrace/gotrace/lang"
)

// splitProgram returns the program of p's probes that are not usdt
// probes and the program of its usdt probes: a -c trace's spec compiled
// at start and the probes that wait for a library the command loads
// later (runtime/plan's Loaded).
func splitProgram(p *lang.Program) (first, later *lang.Program) {
	f, l := *p, *p
	f.Probes, l.Probes = nil, nil
	for _, pr := range p.Probes {
		if pr.Attach[0].Kind == lang.ProbeUSDT {
			l.Probes = append(l.Probes, pr)
		} else {
			f.Probes = append(f.Probes, pr)
		}
	}
	return &f, &l
}

// TestLaterProbesShareMaps compiles a spec at start, with the usdt probes
// left for later (Options.Later), and the spec of those probes that
// extends it, and checks that every map they share is laid out the same
// in both: the runtime loads the later programs against the maps already
// made (loadSharing), which fails on any difference. Without Later, the
// records of a later printf find no ring laid out for them: Compile says
// so rather than making a spec that cannot load.
func TestLaterProbesShareMaps(t *testing.T) {
	fake := fakeProbe(0)
	for _, tt := range []struct {
		name, src string
		// alone says whether the later probes need what the first spec
		// lays out only for them (Compile then fails without Later).
		alone bool
	}{
		{"printf later", `BEGIN { @b = 1; } usdt::net:msg { printf("%d\n", arg0); }`, true},
		{"print later", `BEGIN { @b = 1; } usdt::net:msg { @c = count(); print(@c); }`, true},
		{"loop later", `BEGIN { @b = 1; } usdt::net:msg { $i = 0; while ($i < 3) { $i++; } @n = $i; }`, true},
		{"exit later", `BEGIN { @b = 1; } usdt::net:msg { exit(); }`, true},
		{"large buf later", `BEGIN { @b = 1; } usdt::net:msg { @m = buf(arg0, 2000); }`, true},
		{"record first, none later", `BEGIN { printf("start\n"); } usdt::net:msg { @c = count(); }`, false},
		{"nothing shared but rings", `BEGIN { @b = 1; } usdt::net:msg { @c = count(); }`, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, err := lang.Parse("later.bt", tt.src)
			if err != nil {
				t.Fatal(err)
			}
			info, err := lang.Analyze(p, lang.Config{Values: settings.Values{BufLen: 4096}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			first, later := splitProgram(info.ResolvedProgram(p))
			spec, err := Compile(first, info, Options{WatchLoader: true, Later: later})
			if err != nil {
				t.Fatalf("compile the first spec: %v", err)
			}
			ext, err := Compile(later, info, Options{USDT: fakeUSDT(later, info, fake), Extends: spec})
			if err != nil {
				t.Fatalf("compile the later spec: %v", err)
			}
			for name, m := range ext.Collection.Maps {
				if PrivateMap(name) {
					continue
				}
				was, ok := spec.Collection.Maps[name]
				if !ok {
					t.Errorf("map %s: not in the first spec, so not made", name)
					continue
				}
				if was.Type != m.Type || was.KeySize != m.KeySize || was.ValueSize != m.ValueSize || was.MaxEntries != m.MaxEntries || was.Flags != m.Flags {
					t.Errorf("map %s: laid out %+v later, %+v at start", name, m, was)
				}
			}
			if ext.Loops != spec.Loops || ext.BufCuts != spec.BufCuts || ext.ExitedMap != spec.ExitedMap {
				t.Errorf("counters and exit: later %v %v %q, first %v %v %q", ext.Loops, ext.BufCuts, ext.ExitedMap, spec.Loops, spec.BufCuts, spec.ExitedMap)
			}

			// The same without Later: the first spec is laid out for its
			// own probes alone.
			own, err := Compile(first, info, Options{WatchLoader: true})
			if err != nil {
				t.Fatalf("compile the first spec without Later: %v", err)
			}
			_, err = Compile(later, info, Options{USDT: fakeUSDT(later, info, fake), Extends: own})
			if tt.alone != (err != nil) {
				t.Errorf("extending a spec laid out without Later: err %v, want an error %v", err, tt.alone)
			}
			if err != nil && !strings.Contains(err.Error(), "were not laid out for") {
				t.Errorf("error %q does not say why", err)
			}
		})
	}
}

// TestEventWritersNamed compiles a program for every call that writes a
// record to the events ring: each must write there (the spec has the
// ring's wake-up time, which only a writer needs), and writesEventsCall
// must name it, or Compile fails, since a spec reserves that ring for
// later probes from that list. Every other test that compiles a program
// checks the same through Compile.
func TestEventWritersNamed(t *testing.T) {
	for _, src := range []string{
		`BEGIN { printf("x\n"); }`,
		`BEGIN { system("true"); }`,
		`BEGIN { cat("/dev/null"); }`,
		`BEGIN { print(1); }`,
		`BEGIN { @m = 1; print(@m); }`,
		`BEGIN { @m = 1; clear(@m); }`,
		`BEGIN { @m = count(); zero(@m); }`,
		`BEGIN { @m = count(); delete(@m); }`,
		`BEGIN { time(); }`,
		`uprobe:/bin/true:main { join(arg0); }`,
		`BEGIN { errorf("x"); }`,
		`BEGIN { warnf("x"); }`,
	} {
		p, err := lang.Parse("writer.bt", src)
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		info, err := lang.Analyze(p, lang.Config{Unsafe: true}, nil)
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		spec, err := Compile(info.ResolvedProgram(p), info, Options{})
		if err != nil {
			t.Errorf("%s: %v", src, err)
			continue
		}
		if spec.Collection.Maps[wakeMapName] == nil {
			t.Errorf("%s: writes no record to the events ring", src)
		}
	}
}
