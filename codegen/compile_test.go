package codegen

import (
	"errors"
	"strings"
	"testing"

	"github.com/gotrace/gotrace/lang"
)

// TestCompileErrors checks that programs the checker accepts but codegen
// cannot lower fail with a positioned error, printable as a diagnostic.
func TestCompileErrors(t *testing.T) {
	deep := "1" + strings.Repeat(" + (1", 70) + strings.Repeat(")", 70)
	tests := []struct {
		src, want   string
		unsupported bool
	}{
		{`kfunc:foo { printf("x\n"); }`, "t.bt:1:1: compile kfunc:foo: no kernel function matched", false},
		{`struct S { int *a[2]; } BEGIN { print(*(struct S *)0); }`, "t.bt:1:39: print() of struct S: member a: an array of int32 *: not supported", true},
		{`tracepoint:a:b { printf("x\n"); }`, "t.bt:1:1: compile tracepoint:a:b: no tracepoint matched", false},
		{`BEGIN { $x = ` + deep + `; }`, "expression too complex: out of BPF stack (512 bytes)", false},
		{`usdt:/bin/x:p:n { printf("x\n"); }`, "t.bt:1:1: compile usdt:/bin/x:p:n: no USDT probe matched", false},
	}
	for _, tt := range tests {
		p, err := lang.Parse("t.bt", tt.src)
		if err != nil {
			t.Fatal(err)
		}
		info, err := lang.Analyze(p, lang.Config{}, nil)
		if err != nil {
			t.Fatalf("check %s: %v", tt.src, err)
		}
		_, err = Compile(info.ResolvedProgram(p), info, Options{})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want %q", tt.src, err, tt.want)
			continue
		}
		if errors.Is(err, ErrUnsupported) != tt.unsupported {
			t.Errorf("%s: errors.Is(err, ErrUnsupported) = %v", tt.src, !tt.unsupported)
		}
		var diags lang.ErrorList
		if !errors.As(err, &diags) || len(diags) != 1 || diags[0].Span.Start.Line != 1 {
			t.Errorf("%s: not a diagnostic: %#v", tt.src, diags)
		}
	}
}

// TestProgramsLoad checks that the verifier accepts programs using the
// less common statements, builtins and events.
func TestProgramsLoad(t *testing.T) {
	for _, src := range []string{
		`interval:s:1 { printf("%d\n", elapsed); @x = count(); } interval:ms:100 { print(@x); }`,
		`END { print(@x); print("str"); print((1, "a")); time(); time("%H\n"); clear(@x); zero(@x); } BEGIN { @x = 1; }`,
		`uprobe:/bin/sh:main { printf("%s %s %d %d\n", probe, func, arg0, arg5); @[probe] = count(); }`,
		`uretprobe:/bin/sh:main { printf("%d\n", retval); }`,
		`BEGIN { @a[1] = (1, "x"); $t = @a[1]; printf("%d %s\n", $t.0, $t.1); }`,
		`BEGIN { system("echo %d", 1); cat("/etc/%s", "hostname"); }`,
		`BEGIN { $s = str($1, 5); printf("%s\n", $s); }`,
		`BEGIN { @m[comm] = count(); @h[comm, pid] = hist(5); @l[tid] = lhist(cpu, 0, 4, 1); delete(@m[comm]); }`,
		`BEGIN { $x = 1; $x <<= 3; $x %= 5; @y = 2; @y *= 3; @y /= 0; printf("%d %d\n", $x, @y); }`,
		`BEGIN { $i = 0; while ($i < 1000) { $i++; if ($i > 500) { break; } } printf("%d %d %d\n", $i, uid + gid + rand, cgroup); }`,
		`BEGIN { @s[1] = stats(5); @a = avg(1); @mn["x"] = min(3); @mx = max(4); @sm = sum(5); print(@s, 1); print(@a, 2, 10); }`,
		`uprobe:/bin/sh:main { join(arg1); join(arg1, ","); printf("%s\n", str(*(uint8 **)arg1)); }`,
		`BEGIN { @x = 1; exit(); @x = 2; } END { if (@x > 1) { exit(); } else { printf("no\n"); return; } }`,
		`struct addrs { unsigned char v4[4]; unsigned char v6[16]; } uprobe:/bin/sh:main { $a = (struct addrs *)arg0; printf("%s %s %s\n", ntop($a->v4), ntop(10, $a->v6), ntop(2, arg1)); @[ntop($a->v6)] = count(); }`,
		`profile:hz:99 { @[ustack, ntop(cpu)] = count(); }`,
		`s:faults:10 { @[probe] = count(); } hardware:cycles { @h[probe, kstack] = count(); }`,
	} {
		load(t, compileConfig(t, src, lang.Config{Params: []string{"a"}, Unsafe: true}))
	}
}

// TestLongProgram loads a program longer than a conditional jump
// reaches (32767 instructions) around an if and inside a while loop.
func TestLongProgram(t *testing.T) {
	body := strings.Repeat("unroll(100) { $n = $n * 3 + 1; $n = $n * 3 + 1; $n = $n * 3 + 1; } ", 20)
	src := `BEGIN { $n = 0; if ($n == 0) { ` + body + ` } else { $n = 1; } $i = 0; while ($i < 1) { ` + body + ` $i++; } printf("%d\n", $n); exit(); }`
	spec := compileSource(t, src)
	if n := len(spec.Collection.Programs["prog0"].Instructions); n < 2*32768 {
		t.Fatalf("only %d instructions", n)
	}
	load(t, spec)
}

// TestShortenLongJumps checks that the long jumps around if and while
// bodies become classic jumps where the target is in a 16-bit offset's
// reach (kernels before 6.6, such as arm64's 6.1 JIT, know no other), and
// stay long where it is not.
func TestShortenLongJumps(t *testing.T) {
	long := strings.Repeat("unroll(100) { $n = $n * 3 + 1; $n = $n * 3 + 1; $n = $n * 3 + 1; } ", 20)
	tests := []struct {
		name string
		src  string
		// long says whether a long jump must remain.
		long bool
	}{
		{"if", `BEGIN { if (0) { @never = count(); } exit(); }`, false},
		{"if else chain", `BEGIN { $x = 2; if ($x == 1) { printf("a\n"); } else if ($x == 2) { printf("b\n"); } else { printf("c\n"); } exit(); }`, false},
		{"while break continue", `BEGIN { $i = 0; while ($i < 5) { $i++; if ($i == 2) { continue; } if ($i == 4) { break; } } exit(); }`, false},
		{"body beyond 32767 instructions", `BEGIN { $n = 0; if ($n == 0) { ` + long + ` } exit(); }`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := compileSource(t, tt.src)
			longJumps := 0
			for _, ins := range spec.Collection.Programs["prog0"].Instructions {
				if isLongJump(ins) {
					longJumps++
				}
			}
			if (longJumps > 0) != tt.long {
				t.Errorf("%d long jumps left, want long jumps: %v", longJumps, tt.long)
			}
		})
	}
}
