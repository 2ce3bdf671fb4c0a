package codegen

import (
	"slices"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"

	"github.com/gotrace/gotrace/lang"
	"github.com/gotrace/gotrace/usdt"
)

// TestMapLoops runs loops over maps and len() in the kernel: each script's
// BEGIN prints with printf, and the lines must be want's, in any order
// where sorted is set (a hash map's order is the kernel's).
func TestMapLoops(t *testing.T) {
	tests := []struct {
		name   string
		src    string
		want   []string
		sorted bool
	}{{
		name:   "one key",
		src:    `BEGIN { @m[16] = 32; @m[64] = 128; for ($kv : @m) { printf("%d %d\n", $kv.0, $kv.1); } }`,
		want:   []string{"16 32", "64 128"},
		sorted: true,
	}, {
		name:   "several keys and strings",
		src:    `BEGIN { @m[1, "ab"] = "x"; @m[2, "cd"] = "y"; for ($kv : @m) { printf("%d %s %s%s\n", $kv.0.0, $kv.0.1, $kv.1, str(0)); } }`,
		want:   []string{"1 ab x ", "2 cd y "},
		sorted: true,
	}, {
		name: "outer variables are shared",
		src: `BEGIN { @m[1] = 10; @m[2] = 20; @m[3] = 30; $sum = 0; $s = "none";
			for ($kv : @m) { $sum += $kv.1; if ($kv.0 == 2) { $s = "two"; } }
			printf("%d %s\n", $sum, $s); }`,
		want: []string{"60 two"},
	}, {
		name: "break and continue",
		src: `BEGIN { @m[1] = 1; @m[2] = 2; @m[3] = 3; $n = 0; $seen = 0;
			for ($kv : @m) { $seen++; if ($kv.0 == 2) { continue; } $n++; }
			for ($kv : @m) { $n += 100; break; }
			printf("%d %d\n", $seen, $n); }`,
		want: []string{"3 102"},
	}, {
		name: "return stops the loops and the probe",
		src: `BEGIN { @a[1] = 1; @a[2] = 2; @b[1] = 1; @b[2] = 2;
			for ($x : @a) { for ($y : @b) { printf("%d\n", 1); return; } printf("%d\n", 2); }
			printf("%d\n", 3); }`,
		want: []string{"1"},
	}, {
		name: "exit() stops the loops and the probe",
		src:  `BEGIN { @a[1] = 1; @a[2] = 2; for ($x : @a) { printf("%d\n", 1); exit(); } printf("%d\n", 3); }`,
		want: []string{"1"},
	}, {
		name: "nested loops write outer variables",
		src: `BEGIN { @a[1] = 1; @a[2] = 2; @b[10] = 10; @b[20] = 20; @b[30] = 30; $pairs = 0; $total = 0;
			for ($x : @a) { for ($y : @b) { $pairs++; $total += $x.1 * $y.1; } }
			printf("%d %d\n", $pairs, $total); }`,
		want: []string{"6 180"},
	}, {
		name: "maps written and deleted in the body",
		src: `BEGIN { @m[1] = 1; @m[2] = 2; @m[3] = 3;
			for ($kv : @m) { @copy[$kv.1 * 10] = $kv.0; if ($kv.0 == 2) { delete(@m[$kv.0]); } }
			printf("%d %d %d\n", len(@m), len(@copy), @copy[30]); }`,
		want: []string{"2 3 3"},
	}, {
		name: "an empty map",
		src:  `BEGIN { @m[1] = 1; delete(@m[1]); $n = 0; for ($kv : @m) { $n++; printf("never\n"); } printf("%d %d\n", $n, len(@m)); }`,
		want: []string{"0 0"},
	}, {
		name: "a large map",
		src: `BEGIN { for ($i : 0..1000) { @m[$i] = $i * 2; } $sum = 0; $n = 0;
			for ($kv : @m) { $sum += $kv.1; $n++; }
			printf("%d %d %d\n", $n, $sum, len(@m)); }`,
		want: []string{"1000 999000 1000"},
	}, {
		name: "aggregations merged over the CPUs",
		src: `BEGIN { @c[1, 2] = count(); @c[1, 2] = count(); @c[3, 4] = count(); @s[1] = sum(-7); @s[1] = sum(2);
			@lo[1] = min(5); @lo[1] = min(-3); @hi[1] = max(5); @hi[1] = max(9); @a[1] = avg(-7); @a[1] = avg(2); @a[2] = avg(9);
			for ($kv : @c) { printf("count %d %d %d\n", $kv.0.0, $kv.0.1, $kv.1); }
			for ($kv : @s) { printf("sum %d\n", $kv.1); } for ($kv : @lo) { printf("min %d\n", $kv.1); }
			for ($kv : @hi) { printf("max %d\n", $kv.1); } for ($kv : @a) { printf("avg %d %d\n", $kv.0, $kv.1); } }`,
		want:   []string{"-3", "-5", "1 -2", "1 2 2", "2 9", "3 4 1", "9"},
		sorted: true,
	}, {
		name: "len of stacks",
		src:  `BEGIN { $s = ustack(3); printf("%d %d %d\n", len($s), len(ustack(2)), len(kstack(4))); }`,
		want: []string{"3 2 4"},
	}, {
		name:   "long strings keep the scratch area in its map",
		src:    `BEGIN { @m["k"] = str(0, 2000); $s = "abc"; for ($kv : @m) { printf("%s %s\n", $kv.0, $s); } }`,
		want:   []string{"k abc"},
		sorted: true,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := lang.Parse("test.bt", tt.src)
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			info, err := lang.Analyze(p, lang.Config{}, nil)
			if err != nil {
				t.Fatalf("check: %v", err)
			}
			cpus, err := ebpf.PossibleCPU()
			if err != nil {
				t.Fatal(err)
			}
			spec, err := Compile(info.ResolvedProgram(p), info, Options{CPUs: cpus})
			if err != nil {
				t.Fatalf("compile: %v", err)
			}
			callbackFrameUnused(t, spec)
			l := load(t, spec)
			got := printfs(t, l)
			if tt.sorted {
				slices.Sort(got)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// callbackFrameUnused fails t when a callback of spec's programs uses its
// own stack frame (R10): its slots live in the probe program's frame, and
// the kernel counts both frames against one 512-byte stack.
func callbackFrameUnused(t *testing.T, spec *Spec) {
	t.Helper()
	for name, p := range spec.Collection.Programs {
		inCallback := false
		for i, ins := range p.Instructions {
			if i > 0 && btf.FuncMetadata(&ins) != nil {
				inCallback = true
			}
			if inCallback && (ins.Dst == asm.RFP || ins.Src == asm.RFP) {
				t.Errorf("%s: instruction %d of a callback uses R10: %v", name, i, ins)
			}
		}
	}
}

// TestMapLoopsInProbes loads map loops in programs of other contexts,
// which the callbacks reach through the saved context pointer: a
// uprobe's arguments and stacks, a tracepoint's fields, a profile
// probe's kernel stack; and every aggregation in a callback's body.
func TestMapLoopsInProbes(t *testing.T) {
	for _, src := range []string{
		`uprobe:/bin/sh:main { @m[arg0] = 1; for ($kv : @m) { @s[ustack, arg1] = $kv.1; printf("%d\n", arg2); } }`,
		`tracepoint:syscalls:sys_enter_openat { @m[args->dfd] = 1; for ($kv : @m) { @f[str(args->filename)] = $kv.0; } }`,
		`profile:hz:99 { @m[cpu] = 1; for ($kv : @m) { @r[kstack, tid] = len(@m); } }`,
		`BEGIN { @m[1] = 5; for ($kv : @m) { @c = count(); @k[$kv.0] = sum($kv.1); @h = hist($kv.1); @l = lhist($kv.1, 0, 100, 50); @st = stats($kv.1); @t = tseries($kv.1, 1s, 3); @n = len(@m); } }`,
	} {
		load(t, compileConfig(t, src, lang.Config{Host: tracepointHost{&usdt.Host{}}}))
	}
}

// TestMapLoopManyCPUs loads a loop over a count() map compiled for a
// machine of 1024 CPUs: the verifier walks the merging loop once per CPU.
func TestMapLoopManyCPUs(t *testing.T) {
	p, err := lang.Parse("t.bt", `BEGIN { @c[1] = count(); @m[1] = min(1); for ($kv : @c) { for ($x : @m) { @s = $kv.1 + $x.1; } } }`)
	if err != nil {
		t.Fatal(err)
	}
	info, err := lang.Analyze(p, lang.Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	spec, err := Compile(info.ResolvedProgram(p), info, Options{CPUs: 1024})
	if err != nil {
		t.Fatal(err)
	}
	load(t, spec)
}
