#!/usr/bin/env bash
# Set up a fresh Debian 12 machine (root, Go at /usr/local/go) to build and
# test gotrace: the packages, mounts and users the tests need. Idempotent:
# when every package, tool, mount and user is already there it changes
# nothing and does no apt work at all, so re-runs take well under a second.
set -euo pipefail

# Debian packages the tests and the benchmark need:
#   bpftrace            the oracle (0.17 in Debian 12)
#   systemtap-sdt-dev   <sys/sdt.h> for the bitcoind fixture and bench loop
#   gcc binutils        build the fixture; readelf cross-checks the ELF reader
#   g++                 build the C++ stack fixture (runtime/testdata/cxxchain.cc)
#   postgresql-15       a real USDT target (/usr/lib/postgresql/15/bin/postgres)
#   openjdk-17-jdk-headless  a real USDT target (libjvm.so)
#   python3.11          a real USDT target (/usr/bin/python3.11)
#   time                /usr/bin/time for ad-hoc peak-RSS checks
#   man-db file         hack/package-test.sh: man -w gotrace, a static binary
#   prometheus          a real server scraping --metrics (TestMetricsPrometheus)
packages=(
	bpftrace
	systemtap-sdt-dev
	gcc
	g++
	binutils
	postgresql-15
	openjdk-17-jdk-headless
	python3.11
	time
	man-db
	file
	prometheus
	# qemu-user runs the arm64 gate program of -c (runtime/proc/gate.go)
	# on an x86-64 host, and the x86-64 one on arm64.
	qemu-user
	# libc's separate debug file: the names of its local functions, for
	# uprobes (malloc_consolidate) and stacks (__libc_start_call_main).
	libc6-dbg
	# psql queries the PostgreSQL target (runtime's TestRunPostgresQueries); a
	# dependency of postgresql-15, listed because the tests run it.
	postgresql-client-15
	# Tools the tests run that Debian usually has already: useradd,
	# groupadd and usermod (the unprivileged test user), runuser
	# (TestChildWrapped), ldconfig (usdt's library search tests), python3.
	passwd
	util-linux
	libc-bin
	python3-minimal
	# The runtime libraries of the real bitcoind and bitcoin-cli in
	# ../shared/bitcoin-core (its README; internal/regtest runs them).
	libevent-2.1-7
	libevent-core-2.1-7
	libevent-pthreads-2.1-7
	libevent-extra-2.1-7
	libsqlite3-0
	libstdc++6
	# The VM harness (internal/vmtest, hack/vmtest.sh): emulated x86-64 and
	# arm64 machines booting Debian's kernels, which have the kprobes and
	# fentry this kernel lacks; the cross compiler and arm64 libc build the
	# fixture for the arm64 guest.
	qemu-system-x86
	qemu-system-arm
	gcc-aarch64-linux-gnu
	libc6-dev-arm64-cross
	# A real NATS JetStream server for gotrace --nats (cmd/gotrace's
	# TestNATS*: each test starts its own on a loopback port).
	nats-server
	# strace counts the BPF objects and files of one start
	# (cmd/gotrace's TestStartupSyscalls, issue 24).
	strace
)

# Files that must exist once the packages are installed: checked as well as
# dpkg status, so a half-removed package is noticed.
files=(
	/usr/bin/bpftrace
	/usr/include/x86_64-linux-gnu/sys/sdt.h
	/usr/bin/gcc
	/usr/bin/g++
	/usr/bin/readelf
	/usr/lib/postgresql/15/bin/postgres
	/usr/lib/jvm/java-17-openjdk-amd64/lib/server/libjvm.so
	/usr/bin/python3.11
	/usr/bin/time
	/usr/bin/man
	/usr/bin/prometheus
	/usr/bin/file
	/usr/bin/qemu-aarch64
	/usr/bin/psql
	/usr/bin/java
	/usr/bin/objdump
	/usr/bin/nm
	/usr/sbin/useradd
	/usr/sbin/runuser
	/sbin/ldconfig
	/usr/bin/python3
	/usr/lib/x86_64-linux-gnu/libevent_core-2.1.so.7
	/usr/lib/x86_64-linux-gnu/libevent_pthreads-2.1.so.7
	/usr/lib/x86_64-linux-gnu/libevent_extra-2.1.so.7
	/usr/lib/x86_64-linux-gnu/libsqlite3.so.0
	/usr/lib/x86_64-linux-gnu/libstdc++.so.6
	/usr/bin/qemu-system-x86_64
	/usr/bin/qemu-system-aarch64
	/usr/bin/aarch64-linux-gnu-gcc
	/usr/aarch64-linux-gnu/include/stdio.h
	/usr/sbin/nats-server
	/usr/bin/strace
)

if [[ $(id -u) -ne 0 ]]; then
	echo "hack/setup.sh: must run as root (apt-get, and the tests load eBPF)" >&2
	exit 1
fi

missing=()
for p in "${packages[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
		missing+=("$p")
	fi
done
for f in "${files[@]}"; do
	if [[ ! -e $f ]]; then
		echo "hack/setup.sh: $f is missing" >&2
		missing+=("${packages[@]}")
		break
	fi
done

if ((${#missing[@]} > 0)); then
	echo "hack/setup.sh: installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update
	apt-get install -y "${packages[@]}"
fi

if [[ ! -x /usr/local/go/bin/go ]]; then
	echo "hack/setup.sh: Go is expected at /usr/local/go" >&2
	exit 1
fi
case ":$PATH:" in
*:/usr/local/go/bin:*) ;;
*) export PATH=/usr/local/go/bin:$PATH ;;
esac

# bpftrace 0.17 must be the oracle: later versions print differently.
if ! bpftrace --version | grep -q 'v0\.17\.'; then
	echo "hack/setup.sh: warning: $(bpftrace --version) is not bpftrace 0.17; differential tests compare against it anyway" >&2
fi

# Tracepoints need tracefs and this kind of machine does not mount it at
# boot; debugfs holds the older path to it. Mounted here so that no test
# depends on whether something else mounted them.
mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing
mountpoint -q /sys/kernel/debug || mount -t debugfs nodev /sys/kernel/debug

# cgroupid()'s differential test (testdata/diff/cgroupid.bt) names a
# cgroup v1 hierarchy and the cgroup2 one, where this kind of machine
# mounts them: say so at once where they are missing rather than fail a
# test later.
for d in /sys/fs/cgroup/memory /sys/fs/cgroup/unified; do
	if ! mountpoint -q "$d"; then
		echo "hack/setup.sh: warning: $d is not a cgroup mount; TestDiff/cgroupid will fail" >&2
	fi
done

# Users the tests need: nobody (uid 65534, a name the tests print) and
# postgres (the PostgreSQL package's) must exist; the unprivileged user
# and its supplementary group (cmd/gotrace's privileges.txtar and
# TestChildUser) are created here, as the tests would create them, so
# that a run never depends on which test created them first.
test_user=gotrace-unpriv
test_group=gotrace-test-extra
for u in nobody postgres; do
	if ! getent passwd "$u" >/dev/null; then
		echo "hack/setup.sh: user $u is missing" >&2
		exit 1
	fi
done
if ! getent passwd "$test_user" >/dev/null; then
	useradd --system --no-create-home --shell /usr/sbin/nologin "$test_user"
fi
if ! getent group "$test_group" >/dev/null; then
	groupadd "$test_group"
fi
if ! id -nG "$test_user" | tr ' ' '\n' | grep -qx "$test_group"; then
	usermod -a -G "$test_group" "$test_user"
fi

cd "$(dirname "$0")/.."
# The VM harness's kernels and busybox, from Debian's packages into its
# cache outside the repository (nothing to do when they are there).
hack/vmtest.sh fetch

# Fetch module dependencies once so the tests do not each hit the network.
go mod download
echo "hack/setup.sh: ok ($(go version | cut -d' ' -f3), $(bpftrace --version))"
