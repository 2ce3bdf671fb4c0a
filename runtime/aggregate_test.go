package runtime

import (
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/gotrace/gotrace/internal/testenv"
)

// twoCPUSource calls hit() five times on each of the first two CPUs it
// may run on, with 10..14 on the first and 20..24 on the second, then
// done(): each CPU's share of a per-CPU aggregation differs.
const twoCPUSource = `#define _GNU_SOURCE
#include <sched.h>
__attribute__((noinline)) void hit(long v) { __asm__ volatile("" : : "r"(v)); }
__attribute__((noinline)) void done(void) { __asm__ volatile(""); }
int main(void)
{
	cpu_set_t allowed, one;
	if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0)
		return 2;
	int pinned = 0;
	for (int cpu = 0; cpu < CPU_SETSIZE && pinned < 2; cpu++) {
		if (!CPU_ISSET(cpu, &allowed))
			continue;
		CPU_ZERO(&one);
		CPU_SET(cpu, &one);
		if (sched_setaffinity(0, sizeof(one), &one) != 0)
			return 3;
		for (long i = 0; i < 5; i++)
			hit(10 * (pinned + 1) + i);
		pinned++;
	}
	done();
	return pinned == 2 ? 0 : 4;
}
`

// TestRunAggregateReads reads count, sum, min, max and avg maps in the
// program, as bpftrace 0.21 and 0.22 read them: each is the value the
// map prints, merged over the CPUs, not the share of the CPU that reads
// it. The values were written on two CPUs; the map printed at exit says
// the same.
func TestRunAggregateReads(t *testing.T) {
	testenv.RequireRoot(t)
	var allowed unix.CPUSet
	if err := unix.SchedGetaffinity(0, &allowed); err != nil || allowed.Count() < 2 {
		t.Skipf("needs two CPUs to run on, has %d (%v)", allowed.Count(), err)
	}
	bin := buildC(t, t.TempDir(), "twocpu", twoCPUSource)
	src := `uprobe:` + bin + `:hit { @n = count(); @s = sum(arg0); @mn = min(arg0); @mx = max(arg0); @a = avg(arg0); @cpus[cpu] = 1; }
uprobe:` + bin + `:done {
	printf("%d %d %d %d %d %d\n", @n, @s, @mn, @mx, @a, len(@cpus));
	if (@n == 10 && @mx - @mn == 14) { printf("merged\n"); }
	@key[@n, @a] = (bool)@s;
	clear(@cpus);
}`
	out := traceCommand(t, bin, src, Options{})
	want := "10 170 10 24 17 2\nmerged\n\n\n" +
		"@a: 17\n\n\n" + // an empty line after an avg, one for the cleared @cpus, as 0.17 prints them
		"@key[10, 17]: true\n" +
		"@mn: 10\n" +
		"@mx: 24\n" +
		"@n: 10\n" +
		"@s: 170\n"
	if !strings.HasPrefix(out, "10 170") {
		t.Fatalf("output:\n%s\nwant the merged values first:\n%s", out, want)
	}
	if out != want {
		t.Errorf("output:\n%q\nwant\n%q", out, want)
	}
}
