// loop fires the USDT probe bench:hit a given number of times in a tight
// loop and prints how long one iteration took, so that the benchmark can
// compare the loop traced and untraced. Built by bench/main.go with gcc.
//
//	loop ITERATIONS [KEYS [THREADS]]
//
// bench:hit's arguments: arg0 the iteration (int64), arg1 the iteration
// modulo KEYS (default 16), arg2 one of eight names (char *). With
// THREADS (default 1), that many threads each fire ITERATIONS hits at
// once, from the same probe site; the main thread is one of them and the
// only one timed.
//
// The loop runs in ten equal slices and reports the fastest slice's time
// per iteration (ns_per_iteration; a slice the scheduler interrupted is
// slower, not faster) and the mean over the whole loop (mean_ns). The last
// line is "done ns=<CLOCK_REALTIME nanoseconds>" so the benchmark can time
// what the tracer does after the traced process has gone (END, maps).
//
// The same line also says what the main thread's loop cost it, whatever
// the machine's load: cpu_ns, its own CPU time per iteration (the uprobe
// handlers run on it, so this is the probe effect itself), wait_ns, the
// time per iteration it was runnable but waited for a CPU (from
// /proc/thread-self/schedstat: a tracer thread woken on its CPU shows
// here), and nvcsw and nivcsw, its voluntary and involuntary context
// switches during the loop.
#define _GNU_SOURCE // RUSAGE_THREAD
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/sdt.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define SLICES 10

// payload is what bench:burst's arg4 points to, for buf(arg4, 32): bytes
// that %r prints as \xNN, as a hash would be.
static const unsigned char payload[33] = {
	0x80, 0x81, 0x82, 0x83, 0x84, 0x85, 0x86, 0x87, 0x88, 0x89, 0x8a, 0x8b, 0x8c, 0x8d, 0x8e, 0x8f,
	0x90, 0x91, 0x92, 0x93, 0x94, 0x95, 0x96, 0x97, 0x98, 0x99, 0x9a, 0x9b, 0x9c, 0x9d, 0x9e, 0x9f,
};

// syscalls: LOOP_SYSCALL is set, and each iteration also makes a system
// call (getppid), for the kernel probes' cases.
static int syscalls;

static const char *names[8] = {
	"inv", "tx", "getdata", "headers", "block", "ping", "pong", "addrv2",
};

// schedWait returns the nanoseconds the calling thread has waited on a run
// queue, the second field of /proc/thread-self/schedstat, or -1.
static int64_t schedWait(void)
{
	FILE *f = fopen("/proc/thread-self/schedstat", "r");
	if (f == NULL)
		return -1;
	long long run, wait;
	int ok = fscanf(f, "%lld %lld", &run, &wait) == 2;
	fclose(f);
	return ok ? wait : -1;
}

static int64_t now(clockid_t clock)
{
	struct timespec ts;
	clock_gettime(clock, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

// fire fires bench:hit for the iterations lo to hi-1. It is never
// inlined, so that every thread fires the probe from its one site. Each
// iteration also fires bench:burst(name, i, other name, k, payload), the
// printf burst's five arguments; untraced, either probe is one nop.
static __attribute__((noinline)) void fire(int64_t lo, int64_t hi, int64_t keys)
{
	for (int64_t i = lo; i < hi; i++) {
		int64_t k = i % keys;
		const char *name = names[i & 7];
		// Keep name in a register: bpftrace 0.17 misreads the
		// scaled-index operand gcc would otherwise emit.
		__asm__ volatile("" : "+r"(name));
		DTRACE_PROBE3(bench, hit, i, k, name);
		const char *other = names[(i + 3) & 7];
		const unsigned char *bytes = payload;
		__asm__ volatile("" : "+r"(other), "+r"(bytes));
		DTRACE_PROBE5(bench, burst, name, i, other, k, bytes);
		if (syscalls)
			syscall(SYS_getppid);
	}
}

struct span {
	int64_t n, keys;
};

static void *fire_thread(void *arg)
{
	struct span *sp = arg;
	fire(0, sp->n, sp->keys);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 2 || argc > 4) {
		fprintf(stderr, "usage: loop ITERATIONS [KEYS [THREADS]]\n");
		return 2;
	}
	int64_t n = strtoll(argv[1], NULL, 10);
	syscalls = getenv("LOOP_SYSCALL") != NULL;
	int64_t keys = argc >= 3 ? strtoll(argv[2], NULL, 10) : 16;
	int64_t threads = argc == 4 ? strtoll(argv[3], NULL, 10) : 1;
	if (n <= 0 || keys <= 0 || threads <= 0 || threads > 64) {
		fprintf(stderr, "loop: ITERATIONS and KEYS must be positive, THREADS 1 to 64\n");
		return 2;
	}
	// Touch the names first: a uprobe cannot fault pages in, so str(arg2)
	// reads nothing from a page the process has not used yet.
	size_t total = 0;
	for (int j = 0; j < 8; j++)
		total += strlen(names[j]);
	total += strlen((const char *)payload);
	// LOOP_SETTLE_MS: a pause before the first hit, for a tracer that
	// learns the process's mappings after it started (gotrace's
	// stack_unwind=eh_frame) to know them before the timed slices.
	const char *settle = getenv("LOOP_SETTLE_MS");
	if (settle != NULL)
		usleep((useconds_t)(strtoll(settle, NULL, 10) * 1000));
	struct span sp = {n, keys};
	pthread_t others[64];
	for (int64_t t = 1; t < threads; t++) {
		if (pthread_create(&others[t], NULL, fire_thread, &sp) != 0) {
			fprintf(stderr, "loop: cannot start a thread\n");
			return 1;
		}
	}
	double best = -1;
	struct rusage ru0, ru1;
	getrusage(RUSAGE_THREAD, &ru0);
	int64_t wait0 = schedWait();
	int64_t cpu0 = now(CLOCK_THREAD_CPUTIME_ID);
	int64_t start = now(CLOCK_MONOTONIC);
	for (int s = 0; s < SLICES; s++) {
		int64_t lo = n * s / SLICES, hi = n * (s + 1) / SLICES;
		if (hi == lo)
			continue;
		int64_t t0 = now(CLOCK_MONOTONIC);
		fire(lo, hi, keys);
		double per = (double)(now(CLOCK_MONOTONIC) - t0) / (double)(hi - lo);
		if (best < 0 || per < best)
			best = per;
	}
	int64_t cpu = now(CLOCK_THREAD_CPUTIME_ID) - cpu0;
	int64_t wait = schedWait() - wait0;
	getrusage(RUSAGE_THREAD, &ru1);
	for (int64_t t = 1; t < threads; t++)
		pthread_join(others[t], NULL);
	int64_t elapsed = now(CLOCK_MONOTONIC) - start;
	printf("iterations=%lld ns_per_iteration=%.2f mean_ns=%.2f names=%zu cpu_ns=%.2f wait_ns=%.2f "
	       "nvcsw=%ld nivcsw=%ld\n",
	       (long long)n, best, (double)elapsed / (double)n, total, (double)cpu / (double)n,
	       (double)wait / (double)n, ru1.ru_nvcsw - ru0.ru_nvcsw, ru1.ru_nivcsw - ru0.ru_nivcsw);
	printf("done ns=%lld\n", (long long)now(CLOCK_REALTIME));
	return 0;
}
