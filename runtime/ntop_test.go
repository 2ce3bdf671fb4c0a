package runtime

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	"github.com/gotrace/gotrace/internal/testenv"
)

// addrsSource passes a struct with an IPv4 and an IPv6 address in byte
// arrays, and the IPv4 one as an integer, to deliver().
const addrsSource = `#include <stdint.h>
struct addrs { unsigned char v4[4]; unsigned char v6[16]; };
__attribute__((noinline)) void deliver(struct addrs *a, uint32_t v4)
{
	__asm__ volatile("" : : "r"(a), "r"(v4) : "memory");
}
int main(void)
{
	struct addrs a = {{10, 0, 0, 1}, {0x20, 0x01, 0x0d, 0xb8, [15] = 1}};
	deliver(&a, 0x0100007f);
	return 0;
}
`

// TestRunNtop formats addresses from arrays in the traced process's memory
// and from integers, as bpftrace 0.17 does.
func TestRunNtop(t *testing.T) {
	testenv.RequireRoot(t)
	bin := buildC(t, t.TempDir(), "addrs", addrsSource)
	src := `struct addrs { unsigned char v4[4]; unsigned char v6[16]; }
uprobe:` + bin + `:deliver {
	$a = (struct addrs *)arg0;
	printf("%s %s %s %s\n", ntop($a->v4), ntop($a->v6), ntop(arg1), ntop(10, $a->v6));
	@[ntop(2, arg1), ntop($a->v6)] = count();
}`
	want := "10.0.0.1 2001:db8::1 127.0.0.1 2001:db8::1\n"
	out, stderr, err := runScript(t, context.Background(), src, Options{Command: bin, Quiet: true})
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if !strings.HasPrefix(out, want) || !strings.Contains(out, "@[127.0.0.1, 2001:db8::1]: 1\n") {
		t.Errorf("output:\n%s\nwant it to start with %q and hold the map entry", out, want)
	}
	bpftrace := testenv.RequireBpftrace(t)
	theirs, err := exec.Command(bpftrace, "-c", bin, "-e", src).Output()
	if err != nil {
		t.Fatalf("bpftrace: %v", err)
	}
	if !strings.Contains(string(theirs), want) {
		t.Errorf("bpftrace printed:\n%s\nwant %q", theirs, want)
	}
}
