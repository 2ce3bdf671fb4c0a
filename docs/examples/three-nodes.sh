#!/usr/bin/env bash
# docs/streams.md's worked example, run as root from the repository's root:
# three regtest nodes of ../shared/bitcoin-core in a line (node1 <- node2 <-
# node3), each traced by its own gotrace --nats with netmempool.bt into one
# JetStream stream of a local nats-server; node1 mines, sends a
# transaction, which the others relay, and mines it. natssub then prints
# the stream: the three nodes' events merged. Everything (ports, data
# directories, the store) is temporary and removed at the end.
set -euo pipefail
export PATH=/usr/local/go/bin:$PATH
core=$(cd ../shared/bitcoin-core/bin && pwd)
tmp=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT

go build -o "$tmp/gotrace" ./cmd/gotrace
go build -o "$tmp/gotrace-nats" ./cmd/gotrace-nats
go build -o "$tmp/natssub" ./docs/examples/natssub
sed "s|BITCOIND|$core/bitcoind|" docs/examples/netmempool.bt >"$tmp/netmempool.bt"

bus=nats://127.0.0.1:14322
nats-server -js -sd "$tmp/nats" -a 127.0.0.1 -p 14322 >"$tmp/nats.log" 2>&1 &
pids+=($!)

cli() { # cli N ARGS...: bitcoin-cli against node N
	local n=$1
	shift
	"$core/bitcoin-cli" -regtest -datadir="$tmp/node$n" -rpcport=$((18500 + n)) "$@"
}
for n in 1 2 3; do
	mkdir "$tmp/node$n"
	"$core/bitcoind" -regtest -datadir="$tmp/node$n" -port=$((18400 + n)) -rpcport=$((18500 + n)) \
		-bind=127.0.0.1:$((18400 + n)) -listen=1 -server -fallbackfee=0.0002 -txindex=0 >/dev/null &
	pids+=($!)
done
for n in 1 2 3; do cli $n -rpcwait getblockcount >/dev/null; done
cli 1 createwallet w >/dev/null
cli 1 -rpcwallet=w generatetoaddress 101 "$(cli 1 -rpcwallet=w getnewaddress)" >/dev/null

for n in 1 2 3; do
	"$tmp/gotrace" --nats $bus --nats-host node$n -p "$(cat "$tmp/node$n/regtest/bitcoind.pid")" "$tmp/netmempool.bt" &
	pids+=($!)
	tracer[n]=$!
done
# The first gotrace to connect creates the stream GOTRACE; natssub
# follows it from then on.
(until "$tmp/natssub" $bus GOTRACE 2>/dev/null; do sleep 0.1; done) >"$tmp/stream.txt" &
pids+=($!)
# Each gotrace's first message says its probes are attached.
until [[ $(grep -c attached_probes "$tmp/stream.txt") == 3 ]]; do sleep 0.1; done

cli 2 addnode 127.0.0.1:18401 onetry
cli 3 addnode 127.0.0.1:18402 onetry
until [[ $(cli 3 getblockcount) == 101 ]]; do sleep 0.1; done
txid=$(cli 1 -rpcwallet=w sendtoaddress "$(cli 1 -rpcwallet=w getnewaddress)" 1)
until cli 3 getmempoolentry "$txid" >/dev/null 2>&1; do sleep 0.1; done
cli 1 -rpcwallet=w generatetoaddress 1 "$(cli 1 -rpcwallet=w getnewaddress)" >/dev/null
until [[ $(cli 3 getblockcount) == 102 ]]; do sleep 0.1; done
for n in 1 2 3; do kill -INT "${tracer[n]}"; done
for n in 1 2 3; do wait "${tracer[n]}"; done
# Every gotrace has its exit maps acknowledged before it exits; natssub
# has them once it prints them.
until [[ $(grep -c '"@removed"' "$tmp/stream.txt") == 3 ]]; do sleep 0.1; done
echo "txid $txid"
cat "$tmp/stream.txt"
