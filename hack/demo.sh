#!/usr/bin/env bash
# Build gotrace and run its main job: trace the bitcoind-shaped demo target
# (testdata/fixture) with scripts/netmsg.bt, the per-message script of the
# original Bitcoin Core tracing proposal. Run as root on a fresh Debian 12
# machine with Go at /usr/local/go: it installs only what the demo needs
# (gcc and <sys/sdt.h>, to build the fixture), sends the set-up's output
# to bin/demo-setup.log and the fixture's own output to bin/fixture.out,
# and prints the trace alone. Extra arguments go to gotrace.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=/usr/local/go/bin:$PATH

if [[ $(id -u) -ne 0 ]]; then
	echo "hack/demo.sh: run it as root (sudo hack/demo.sh): it installs gcc and <sys/sdt.h> and loads eBPF" >&2
	exit 1
fi
mkdir -p bin
log=$PWD/bin/demo-setup.log
fixture_out=$PWD/bin/fixture.out
: >"$log"
: >"$fixture_out"
# Under sudo, gotrace runs the fixture as the user who ran sudo, who must be
# able to write its output.
if [[ -n ${SUDO_UID:-} ]]; then
	chown "$SUDO_UID:${SUDO_GID:-$SUDO_UID}" "$fixture_out"
fi
echo "hack/demo.sh: setting up (output in $log)" >&2
setup() {
	if [[ ! -x /usr/bin/gcc || ! -e /usr/include/x86_64-linux-gnu/sys/sdt.h ]]; then
		DEBIAN_FRONTEND=noninteractive apt-get update
		DEBIAN_FRONTEND=noninteractive apt-get install -y gcc systemtap-sdt-dev
	fi
	CGO_ENABLED=0 go build -o bin/gotrace ./cmd/gotrace
	go run ./internal/fixture/cmd/buildfixture bin/fixture
}
if ! setup >>"$log" 2>&1; then
	echo "hack/demo.sh: set-up failed; the end of $log:" >&2
	tail -20 "$log" >&2
	exit 1
fi
echo "hack/demo.sh: tracing; the fixture's own output goes to $fixture_out" >&2

# The script names the probes as ./bitcoind, as Bitcoin Core's scripts do, so
# run it from the fixture's directory.
cd bin/fixture/bitcoind
exec ../../gotrace -c "./bitcoind --rounds 2 --blocks 2 --output $fixture_out" ../../../scripts/netmsg.bt "$@"
