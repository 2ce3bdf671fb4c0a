#!/usr/bin/env bash
# Build gotrace and run its main job: trace the bitcoind-shaped demo target
# (testdata/fixture) with scripts/netmsg.bt, the per-message script of the
# original Bitcoin Core tracing proposal on the tracepoints Bitcoin Core
# merged. Run as root on a fresh machine: hack/setup.sh installs gcc and
# <sys/sdt.h>, which the fixture needs.
set -euo pipefail
cd "$(dirname "$0")/.."
hack/setup.sh
export PATH=/usr/local/go/bin:$PATH
mkdir -p bin
CGO_ENABLED=0 go build -o bin/gotrace ./cmd/gotrace
go run ./internal/fixture/cmd/buildfixture bin/fixture >/dev/null
# The script names the probes as ./bitcoind, as Bitcoin Core's scripts do, so
# run it from the fixture's directory.
cd bin/fixture/bitcoind
exec ../../gotrace -c "./bitcoind --rounds 2 --blocks 2" ../../../scripts/netmsg.bt "$@"
