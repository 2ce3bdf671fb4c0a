/* A uprobe target for cleanup tests: trap() holds an int3, where the
 * kernel refuses to place a uprobe, so attaching to it fails after the
 * probes before it were attached. main waits to be killed. */
#include <unistd.h>

__attribute__((noinline, used)) void trap(void) { __asm__ volatile("int3"); }

__attribute__((noinline, used)) void work(void) { __asm__ volatile(""); }

int main(void) {
	for (;;) {
		work();
		usleep(10000);
	}
}
