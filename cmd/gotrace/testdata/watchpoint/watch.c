/* A watchpoint target (TestWatchpoint*), built with -no-pie so that its
 * global counter has a fixed address. Without arguments, main writes
 * counter three times through bump() and prints it on standard error, apart
 * from the tracer's output. With "thread" a second
 * thread writes counter every 10 ms until the process is killed, while the
 * main thread waits for it. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

volatile long counter;

__attribute__((noinline, used)) void bump(long v) { counter = v; }

static void *writer(void *arg)
{
	(void)arg;
	for (long i = 1;; i++) {
		bump(i);
		usleep(10000);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "thread") == 0) {
		pthread_t t;
		pthread_create(&t, NULL, writer, NULL);
		pthread_join(t, NULL);
		return 0;
	}
	for (long i = 1; i <= 3; i++)
		bump(i);
	fprintf(stderr, "counter %ld\n", counter);
	return 0;
}
