package runtime

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/gotrace/gotrace/internal/testenv"
)

func TestKallsyms(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kallsyms")
	text := "ffffffff81000200 T second\n" +
		"ffffffff81000100 t first\n" +
		"ffffffff81000100 T first_alias\n" +
		"0000000000000000 T hidden\n" +
		"ffffffffc0000000 t mod_func\t[mod]\n"
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	syms, err := readKallsyms(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		addr uint64
		name string
		ok   bool
	}{
		{0x1000, "", false},
		{0xffffffff81000100, "first", true},
		{0xffffffff810001ff, "first", true},
		{0xffffffff81000200, "second", true},
		{0xffffffffc0000010, "mod_func", true},
	} {
		s, ok := syms.at(tt.addr)
		if s.name != tt.name || ok != tt.ok {
			t.Errorf("at(%#x) = %q, %v; want %q, %v", tt.addr, s.name, ok, tt.name, tt.ok)
		}
	}
	if addr, err := syms.lookup("second"); addr != 0xffffffff81000200 || err != nil {
		t.Errorf("lookup(second) = %#x, %v", addr, err)
	}
	if _, err := syms.lookup("hidden"); err == nil {
		t.Error("lookup(hidden) found a symbol at address 0")
	}
}

// TestRunKstack samples kernel stacks with profile, as bpftrace's
// tutorial does, while this process makes system calls, and checks the
// keys have bpftrace's shape: a frame a line, "sym+off", indented four
// spaces, or in perf mode a tab, the address and "sym+off".
func TestRunKstack(t *testing.T) {
	testenv.RequireRoot(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for ctx.Err() == nil {
			_, _ = os.ReadFile("/proc/self/status")
		}
	}()
	out, stderr, err := runScript(t, context.Background(), `profile:hz:499 { @[kstack(3)] = count(); @p[kstack(perf, 2)] = count(); } interval:ms:500 { exit(); }`, Options{Quiet: true})
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	frame := `[\w.$]+\+\d+`
	for _, re := range []string{
		`(?m)^@\[\n(    ` + frame + `\n){1,3}\]: \d+$`,
		`(?m)^@p\[\n(\tffffffff[0-9a-f]{8} ` + frame + `\n){1,2}\]: \d+$`,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("no key matches %s in:\n%s", re, out)
		}
	}
}
