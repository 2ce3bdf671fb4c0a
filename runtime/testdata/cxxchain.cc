// cxxchain: a C++ test program with a known call chain eight deep, for
// ustack and usym on code built with -O2, with or without frame pointers
// (runtime's TestRunCxxStack builds it). main calls
//
//   chain::Pipeline::run
//   chain::stage::Decoder::decode
//   chain::stage::Decoder::check
//   chain::Walker<int>::walk
//   chain::Walker<int>::step
//   chain::detail::descend
//   chain::detail::reach
//   chain::detail::bottom, which fires the USDT probe cxxchain:bottom
//
// Each function is noinline and does work after its call, so that -O2
// neither inlines it nor turns the call into a jump. With a path argument,
// the program then waits until a byte comes through that FIFO, so that a
// test decides when it exits. With a count N after the path, it runs the
// chain N times instead of once, each after reading a byte from the FIFO,
// so that a test decides when the probe fires too.
#include <fcntl.h>
#include <stdlib.h>
#include <sys/sdt.h>
#include <unistd.h>

#define KEEP __attribute__((noinline))

namespace chain {

// sink keeps each function's result alive, so that none is optimised
// away.
volatile int sink;

namespace detail {

KEEP int bottom(int depth) {
	DTRACE_PROBE1(cxxchain, bottom, depth);
	sink = depth;
	return depth + 1;
}

KEEP int reach(int depth) { return bottom(depth + 1) * 3 + sink; }

KEEP int descend(int depth) { return reach(depth + 1) * 5 + sink; }

} // namespace detail

template <typename T> class Walker {
public:
	KEEP T step(T depth) { return T(detail::descend(depth + 1) * 7 + sink); }
	KEEP T walk(T depth) { return T(step(depth + 1) * 11 + sink); }
};

namespace stage {

class Decoder {
public:
	KEEP int check(int depth) const {
		Walker<int> w;
		return w.walk(depth + 1) * 13 + sink;
	}
	KEEP static int decode(const Decoder &d, int depth) { return d.check(depth + 1) * 17 + sink; }
};

} // namespace stage

class Pipeline {
public:
	KEEP int run(int depth) { return stage::Decoder::decode(stage::Decoder(), depth + 1) * 19 + sink; }
};

} // namespace chain

int main(int argc, char **argv) {
	// The FIFO is open before the probe fires, for reading and writing so
	// that the open does not wait for a writer: whoever sees the probe's
	// record can write to it at once, and the program exits when it reads
	// that byte.
	int fd = -1;
	if (argc > 1 && (fd = open(argv[1], O_RDWR)) < 0)
		return 2;
	int runs = argc > 2 ? atoi(argv[2]) : 0;
	chain::Pipeline p;
	int r = 0;
	for (int i = 0; i < runs; i++) {
		char c;
		if (read(fd, &c, 1) != 1)
			return 3;
		r = p.run(1);
	}
	if (runs == 0)
		r = p.run(1);
	if (fd >= 0) {
		char c;
		if (read(fd, &c, 1) != 1)
			return 3;
		close(fd);
	}
	return r == 0;
}
