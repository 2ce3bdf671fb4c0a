package main

// The scripts of scripts/ that do the jobs of Bitcoin Core's BCC scripts,
// on a real regtest node, with the node's own RPC answers as the truth.

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gotrace/gotrace/internal/regtest"
	"github.com/gotrace/gotrace/internal/testenv"
)

// traceNode starts gotrace on scripts/NAME.bt, pointed at the node's
// bitcoind, with -p and the script's arguments, and waits for ready, the
// line its BEGIN prints once every probe is attached.
func traceNode(t *testing.T, node *regtest.Node, name, ready string, args ...string) *attachedRun {
	t.Helper()
	testenv.RequireRoot(t)
	script := pointedScript(t, "../../scripts/"+name+".bt", "./bitcoind", node.Bitcoind)
	run := startAttached(t, gotraceCommand(t), node.PID(), script, args...)
	run.waitFor(t, regexp.MustCompile("(?m)"+ready))
	return run
}

// TestUtxocacheFlushScript: gettxoutsetinfo flushes the UTXO cache with
// mode ALWAYS, and the coins utxocache_flush.bt prints for it are the
// unspent outputs gettxoutsetinfo counts (every coin is still in the
// cache of a node that never flushed); a second call finds the cache
// empty.
func TestUtxocacheFlushScript(t *testing.T) {
	node := minerNode(t)
	run := traceNode(t, node, "utxocache_flush", `^Duration \(µs\) +Mode +Coins Count +Memory Usage +Flush for Prune$`)
	var info struct {
		Txouts int `json:"txouts"`
	}
	node.CLIJSON(t, &info, "gettxoutsetinfo")
	run.waitFor(t, regexp.MustCompile(fmt.Sprintf(`(?m)^\d+ +ALWAYS +%d +\d+\.\d\d kB +False +$`, info.Txouts)))
	node.CLIJSON(t, &info, "gettxoutsetinfo")
	run.waitFor(t, regexp.MustCompile(`(?m)^\d+ +ALWAYS +0 +\d+\.\d\d kB +False +$`))
	node.Stop(t)
	out := run.wait(t)
	if n := len(regexp.MustCompile(`(?m)^\d+ +ALWAYS `).FindAllString(out, -1)); n < 3 {
		t.Errorf("%d flushes printed, want gettxoutsetinfo's two and shutdown's:\n%s", n, out)
	}
}

// mempoolLine matches one event line of mempool_monitor.bt: the event,
// the txid, the fee and the vsize, then the rest.
var mempoolLine = regexp.MustCompile(`(?m)^\d\d:\d\d:\d\d (added|removed|replaced|rejected) ([0-9a-f]{64})(?: with feerate \d+\.\d\d sat/vB \((\d+) sat, (\d+) vbytes\))?(.*)$`)

// TestMempoolMonitorScript follows a wallet transaction through
// mempool_monitor.bt: added with getmempoolentry's fee and vsize,
// replaced by bumpfee's transaction (both sides as getmempoolentry gave
// them), removed as "replaced", a double spend with too low a fee
// rejected with the reason sendrawtransaction names, the replacement
// removed by a block, and the summary at exit counting it all.
func TestMempoolMonitorScript(t *testing.T) {
	node := minerNode(t)
	run := traceNode(t, node, "mempool_monitor", `^Tracing bitcoind's mempool, a summary every 3600 s\. Ctrl-C to end\.$`, "3600")

	first := node.SendToAddress(t, node.NewAddress(t), "1")
	firstFee, firstSize := mempoolEntry(t, node, first)
	waitMempoolLine(t, run, "added", first, fmt.Sprintf(" with feerate %s sat/vB (%d sat, %d vbytes)", feerate(firstFee, firstSize), firstFee, firstSize))

	bumped := node.BumpFee(t, first)
	fee, size := mempoolEntry(t, node, bumped)
	waitMempoolLine(t, run, "replaced", first, fmt.Sprintf(" with feerate %s sat/vB (%d sat, %d vbytes) after ", feerate(firstFee, firstSize), firstFee, firstSize),
		fmt.Sprintf(" by tx %s with feerate %s sat/vB (%d sat, %d vbytes)", bumped, feerate(fee, size), fee, size))
	waitMempoolLine(t, run, "removed", first, ": replaced")
	waitMempoolLine(t, run, "added", bumped, fmt.Sprintf(" (%d sat, %d vbytes)", fee, size))

	// The bumped transaction's input again, for a fee below its own.
	var tx struct {
		Vin []struct {
			Txid string `json:"txid"`
			Vout int    `json:"vout"`
		} `json:"vin"`
	}
	node.CLIJSON(t, &tx, "getrawtransaction", bumped, "1")
	// The coin as the chain has it, without the mempool that spends it.
	var coin struct {
		Value float64 `json:"value"`
	}
	node.CLIJSON(t, &coin, "gettxout", tx.Vin[0].Txid, strconv.Itoa(tx.Vin[0].Vout), "false")
	spent := regtest.Sats(coin.Value)
	inputs := fmt.Sprintf(`[{"txid":%q,"vout":%d}]`, tx.Vin[0].Txid, tx.Vin[0].Vout)
	// A fee of 1,000 sat, a feerate below the bumped transaction's.
	change := spent - 1000
	outputs := fmt.Sprintf(`{%q:%d.%08d}`, node.NewAddress(t), change/1e8, change%1e8)
	raw := node.WalletCLI(t, "createrawtransaction", inputs, outputs)
	var signed struct {
		Hex string `json:"hex"`
	}
	node.WalletCLIJSON(t, &signed, "signrawtransactionwithwallet", raw)
	var decoded struct {
		Txid string `json:"txid"`
	}
	node.CLIJSON(t, &decoded, "decoderawtransaction", signed.Hex)
	_, err := node.CLIErr("sendrawtransaction", signed.Hex, "0")
	if err == nil {
		t.Fatal("sendrawtransaction of a double spend with a lower fee succeeded")
	}
	_, reason, _ := strings.Cut(err.Error(), "error message:\n")
	m := waitMempoolLine(t, run, "rejected", decoded.Txid, ": ")
	if traced := strings.TrimPrefix(m[5], ": "); !strings.HasPrefix(reason, traced+",") {
		t.Errorf("rejected for %q; sendrawtransaction said %q", traced, reason)
	}

	node.Generate(t, 1)
	waitMempoolLine(t, run, "removed", bumped, ": block")
	node.Stop(t)
	out := run.wait(t)
	for _, row := range []string{`added +2 +2`, `removed +2 +2`, `replaced +1 +1`, `rejected +1 +1`} {
		if !regexp.MustCompile(`(?m)^    ` + row + ` +\d+\.\d +\d+\.\d$`).MatchString(out) {
			t.Errorf("no summary row %q in:\n%s", row, out)
		}
	}
}

// mempoolEntry returns getmempoolentry's base fee in sat and vsize.
func mempoolEntry(t *testing.T, node *regtest.Node, txid string) (fee int64, vsize int64) {
	t.Helper()
	e := node.MempoolEntry(t, txid)
	return regtest.Sats(e.Fees.Base), e.VSize
}

// feerate is fee/vsize in sat/vB as the script prints it: rounded to two
// decimals, halves up.
func feerate(fee, vsize int64) string {
	hundredths := (fee*1000/vsize + 5) / 10
	return fmt.Sprintf("%d.%02d", hundredths/100, hundredths%100)
}

// waitMempoolLine waits until the run prints an event line of mempool
// event for txid that holds each of parts, and returns its submatches.
func waitMempoolLine(t *testing.T, run *attachedRun, event, txid string, parts ...string) []string {
	t.Helper()
	var found []string
	run.waitUntil(t, fmt.Sprintf("a %s line of %s with %q", event, txid, parts), func(out string) bool {
		for _, m := range mempoolLine.FindAllStringSubmatch(out, -1) {
			if m[1] == event && m[2] == txid && !slices.ContainsFunc(parts, func(p string) bool { return !strings.Contains(m[0], p) }) {
				found = m
				return true
			}
		}
		return false
	})
	return found
}

// p2pMonitorRow matches a peer's row of p2p_monitor.bt's table.
var p2pMonitorRow = regexp.MustCompile(`(?m)^ +(\d+)  (\d+) +(\d+) byte  (\d+) +(\d+) byte  (\S+) +(\S+)$`)

// TestP2PMonitorScript compares p2p_monitor.bt's table with getpeerinfo:
// for each peer, the payload bytes plus 24 bytes of header (v1
// transport) per message sent and received are getpeerinfo's
// bytessent_per_msg and bytesrecv_per_msg, summed, and the connection
// type and address are getpeerinfo's. The table is taken between two
// getpeerinfo calls that agree, so that no message moved in between.
func TestP2PMonitorScript(t *testing.T) {
	miner := minerNode(t)
	node := startNode(t)
	run := traceNode(t, node, "p2p_monitor", `^Tracing bitcoind P2P traffic by peer, a table every 1 s\. Ctrl-C to end\.$`, "1")
	node.Connect(t, miner)
	miner.Connect(t, node)
	waitHeight(t, node, minerBlocks)
	for deadline := time.Now().Add(regtest.Deadline); ; {
		before := node.Peers(t)
		tables := len(p2pMonitorTables(run.read()))
		// The next table is whole once the one after it starts.
		run.waitUntil(t, "two more tables", func(out string) bool { return len(p2pMonitorTables(out)) >= tables+2 })
		after := node.Peers(t)
		mismatch := "getpeerinfo changed while the table was printed"
		if fmt.Sprint(before) == fmt.Sprint(after) {
			mismatch = compareP2PMonitor(p2pMonitorTables(run.read())[tables], after)
			if mismatch == "" {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no table matched getpeerinfo in %v; the last: %s", regtest.Deadline, mismatch)
		}
	}
}

// p2pMonitorTables splits p2p_monitor.bt's output into its tables, each
// from its "N peers" line to the next table's.
func p2pMonitorTables(out string) []string {
	heads := regexp.MustCompile(`(?m)^\d\d:\d\d:\d\d \d+ peers$`).FindAllStringIndex(out, -1)
	var tables []string
	for i, h := range heads {
		end := len(out)
		if i+1 < len(heads) {
			end = heads[i+1][0]
		}
		tables = append(tables, out[h[0]:end])
	}
	return tables
}

// compareP2PMonitor returns how a table differs from getpeerinfo's
// peers, "" when it does not: each peer's payload bytes plus 24 bytes per
// message are getpeerinfo's byte counts, and its type and address are
// getpeerinfo's.
func compareP2PMonitor(table string, peers []regtest.Peer) string {
	rows := map[int64]string{}
	for _, m := range p2pMonitorRow.FindAllStringSubmatch(table, -1) {
		n := make([]int64, 5)
		for i := range n {
			n[i], _ = strconv.ParseInt(m[i+1], 10, 64)
		}
		rows[n[0]] = fmt.Sprintf("sent %d, received %d, %s %s", n[2]+24*n[1], n[4]+24*n[3], m[6], m[7])
	}
	var diff string
	if len(rows) != len(peers) {
		diff = fmt.Sprintf("\n%d rows for %d peers", len(rows), len(peers))
	}
	for _, p := range peers {
		want := fmt.Sprintf("sent %d, received %d, %s %s", total(p.BytesSentPer), total(p.BytesRecvPer), p.ConnectionType, p.Addr)
		if got := rows[p.ID]; got != want {
			diff += fmt.Sprintf("\npeer %d: table %q, getpeerinfo %q", p.ID, got, want)
		}
	}
	return diff
}

// total sums a getpeerinfo per-message byte map.
func total(m map[string]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}
