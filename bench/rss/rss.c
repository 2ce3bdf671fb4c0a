/* rss runs a command in a child made with fork(2) and writes the child's
 * peak resident set size in KiB (wait4's ru_maxrss) and its wall time in
 * nanoseconds, from just before the fork to the reaping, to the file
 * $RSS_OUT, one number a line. The wall is taken here rather than by the
 * bench so that neither the bench's own exec nor this program's start-up
 * is counted as the tool's start-up.
 * The bench cannot take it from os/exec: Go starts a child with
 * CLONE_VM|CLONE_VFORK, so the child runs in the bench's own memory until
 * it execs, and the kernel counts that memory's peak (the bench's, ~11 MiB)
 * into the child's ru_maxrss; a tool that peaks lower is reported at the
 * bench's size. This program's own memory is a few hundred KiB.
 * It exits as the command did. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: rss COMMAND [ARG...]\n");
		return 127;
	}
	struct timespec start, end;
	clock_gettime(CLOCK_MONOTONIC, &start);
	pid_t pid = fork();
	if (pid < 0) {
		perror("rss: fork");
		return 127;
	}
	if (pid == 0) {
		/* The bench kills this program on a timeout: the command goes too. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		execvp(argv[1], argv + 1);
		perror(argv[1]);
		_exit(127);
	}
	int status;
	struct rusage ru;
	while (wait4(pid, &status, 0, &ru) < 0) {
		if (errno != EINTR) {
			perror("rss: wait4");
			return 127;
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &end);
	long long wall = (long long)(end.tv_sec - start.tv_sec) * 1000000000LL +
			 (end.tv_nsec - start.tv_nsec);
	const char *path = getenv("RSS_OUT");
	FILE *f = path ? fopen(path, "w") : NULL;
	if (f) {
		fprintf(f, "%ld\n%lld\n", ru.ru_maxrss, wall);
		fclose(f);
	}
	if (WIFSIGNALED(status)) {
		signal(WTERMSIG(status), SIG_DFL);
		kill(getpid(), WTERMSIG(status));
		return 128 + WTERMSIG(status);
	}
	return WEXITSTATUS(status);
}
