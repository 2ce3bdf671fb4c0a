package regtest_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gotrace/gotrace/internal/regtest"
	"github.com/gotrace/gotrace/internal/testenv"
)

// TestTracepoints runs node B under gotrace -c with testdata/tracepoints.bt,
// which prints every one of Bitcoin Core's 20 tracepoints, drives it with
// a second node A and B's wallet, and compares each event with what B
// itself reports over RPC:
//
//	net:outbound_connection, inbound_connection  getpeerinfo (id, addr, connection_type, network)
//	net:inbound_message, outbound_message        getpeerinfo bytesrecv_per_msg, bytessent_per_msg
//	net:closed_connection                        getpeerinfo (conntime) before disconnectnode
//	net:misbehaving_connection                   getpeerinfo id of a raw peer sending a bad headers message
//	validation:block_connected                   generatetoaddress hashes, getblock HASH 2
//	utxocache:flush                              gettxoutsetinfo txouts (it flushes)
//	utxocache:add, spent                         getblock HASH 3 (outputs, prevouts)
//	utxocache:uncache, mempool:rejected          sendrawtransaction's error (spending more than a coin holds)
//	coin_selection:*                             gettransaction (fee, inputs), getaddressinfo ischange
//	mempool:added, replaced, removed             getmempoolentry (vsize, fees.base, time) around bumpfee
//	mempool:rejected                             sendrawtransaction's error (the replaced tx sent again)
//
// net:evicted_inbound_connection is not provoked: see TestTracepoints's
// comment at evicted below.
func TestTracepoints(t *testing.T) {
	testenv.RequireRoot(t)
	start := time.Now()
	// Both nodes speak v2 (BIP324): B's outbound connection to A is made
	// v1 on purpose, A's to B is v2, so both framings are compared.
	a := regtest.New(t, regtest.Options{V2Transport: true})
	b := regtest.New(t, regtest.Options{V2Transport: true})
	a.Start(t)
	tr := regtest.StartTrace(t, gotrace(t), "", "-q", "-c", strings.Join(b.Command(), " "), script(t, "tracepoints.bt", b))
	a.WaitReady(t)
	b.WaitReady(t)

	b.CLI(t, "addnode", a.Addr(), "onetry", "false")
	bToA, _ := b.WaitPeer(t, a)
	a.CLI(t, "addnode", b.Addr(), "onetry", "true")
	_, aToB := a.WaitPeer(t, b)

	t.Run("connections", func(t *testing.T) {
		if bToA.TransportProto != "v1" || aToB.TransportProto != "v2" {
			t.Fatalf("transports %s and %s, want v1 and v2", bToA.TransportProto, aToB.TransportProto)
		}
		got := fields(tr.AwaitPrefix(t, "outbound_connection "))
		want := []string{"outbound_connection", id(bToA), a.Addr(), "manual", network(t, bToA), "1"}
		equal(t, "outbound_connection", got, want)
		got = fields(tr.AwaitPrefix(t, "inbound_connection "))
		want = []string{"inbound_connection", id(aToB), aToB.Addr, "inbound", network(t, aToB), "1"}
		equal(t, "inbound_connection", got, want)
	})

	b.CreateWallet(t)
	hashes := b.Generate(t, 101)

	t.Run("block_connected", func(t *testing.T) {
		lines := tr.Await(t, "block_connected at height 101", func(lines []string) bool {
			return len(prefixed(lines, "block_connected ")) >= 101
		})
		for i, l := range prefixed(lines, "block_connected ")[:101] {
			f := fields(l)
			// A coinbase only: one transaction, one input, no sigops
			// outside the coinbase.
			equal(t, "block_connected", f[:6], []string{"block_connected", hashes[i], strconv.Itoa(i + 1), "1", "1", "0"})
		}
	})

	t.Run("flush", func(t *testing.T) {
		before := len(prefixed(tr.Lines(), "flush "))
		var info struct {
			Txouts int64 `json:"txouts"`
		}
		// gettxoutsetinfo flushes the cache to disk first (mode
		// ALWAYS); every coin is in the cache, created since the
		// node started, so the cache held exactly the UTXO set.
		b.CLIJSON(t, &info, "gettxoutsetinfo")
		lines := tr.Await(t, "a flush", func(lines []string) bool { return len(prefixed(lines, "flush ")) > before })
		f := fields(prefixed(lines, "flush ")[before])
		equal(t, "flush mode, coins, pruned", []string{f[2], f[3], f[5]}, []string{"3", strconv.FormatInt(info.Txouts, 10), "0"})
	})

	t.Run("uncache_rejected", func(t *testing.T) {
		// The first coinbase, now only on disk (flushed above), spent
		// for more than it holds: its coin is fetched into the cache
		// for the check, which fails, and is uncached again.
		var block struct {
			Tx []struct {
				TxID string `json:"txid"`
			} `json:"tx"`
		}
		b.CLIJSON(t, &block, "getblock", hashes[0], "2")
		coinbase := block.Tx[0].TxID
		raw := b.CLI(t, "createrawtransaction", `[{"txid":"`+coinbase+`","vout":0}]`, `{"`+b.NewAddress(t)+`":60}`)
		txid := decodeTxID(t, b, raw)
		_, err := b.CLIErr("sendrawtransaction", raw)
		reason := rpcReason(t, err)
		t.Logf("sendrawtransaction: %v", err)
		got := fields(tr.AwaitPrefix(t, "rejected "+txid))
		equal(t, "rejected", []string{got[1], strings.Join(got[2:], " ")}, []string{txid, reason})
		got = fields(tr.AwaitPrefix(t, "uncache "+coinbase))
		equal(t, "uncache", got, []string{"uncache", coinbase, "0", "1", "5000000000", "1"})
	})

	// A wallet send, its fee bump, the replaced transaction sent again,
	// and a block that mines the replacement.
	mark := len(tr.Lines())
	txid := b.SendToAddress(t, b.NewAddress(t), "1")
	entry := b.MempoolEntry(t, txid)

	t.Run("coin_selection", func(t *testing.T) {
		lines := tr.Await(t, "aps_create_tx_internal", func(lines []string) bool {
			return len(prefixed(lines[mark:], "aps_create_tx_internal ")) > 0
		})[mark:]
		sel := prefixed(lines, "selected_coins ")
		normal := fields(prefixed(lines, "normal_create_tx_internal ")[0])
		aps := fields(prefixed(lines, "aps_create_tx_internal ")[0])
		if len(prefixed(lines, "attempting_aps_create_tx w")) == 0 || len(sel) < 2 {
			t.Fatalf("a send fires selected_coins, normal_create_tx_internal, attempting_aps_create_tx, selected_coins, aps_create_tx_internal; got %q", lines)
		}
		// The avoid-partial-spends attempt's result is used when
		// aps_create_tx_internal says so; its selection is the second.
		chosen, fee, changePos := fields(sel[0]), normal[3], normal[4]
		if aps[2] == "1" {
			chosen, fee, changePos = fields(sel[1]), aps[4], aps[5]
		}
		var tx struct {
			Fee     float64 `json:"fee"`
			Decoded struct {
				Vin []struct {
					TxID string `json:"txid"`
					Vout int    `json:"vout"`
				} `json:"vin"`
				Vout []struct {
					N            int `json:"n"`
					ScriptPubKey struct {
						Address string `json:"address"`
					} `json:"scriptPubKey"`
				} `json:"vout"`
			} `json:"decoded"`
		}
		b.WalletCLIJSON(t, &tx, "gettransaction", txid, "false", "true")
		equal(t, "fee", []string{fee}, []string{strconv.FormatInt(-regtest.Sats(tx.Fee), 10)})
		equal(t, "fee (mempool)", []string{fee}, []string{strconv.FormatInt(regtest.Sats(entry.Fees.Base), 10)})
		var total int64
		for _, in := range tx.Decoded.Vin {
			var out struct {
				Value float64 `json:"value"`
			}
			b.CLIJSON(t, &out, "gettxout", in.TxID, strconv.Itoa(in.Vout), "false")
			total += regtest.Sats(out.Value)
		}
		equal(t, "selected_coins wallet, total", []string{chosen[1], chosen[5]}, []string{"w", strconv.FormatInt(total, 10)})
		pos, _ := strconv.Atoi(changePos)
		if pos < 0 || pos >= len(tx.Decoded.Vout) {
			t.Fatalf("change position %d, transaction has %d outputs", pos, len(tx.Decoded.Vout))
		}
		var info struct {
			IsChange bool `json:"ischange"`
		}
		b.WalletCLIJSON(t, &info, "getaddressinfo", tx.Decoded.Vout[pos].ScriptPubKey.Address)
		if !info.IsChange {
			t.Errorf("output %d, the traced change position, is not the wallet's change", pos)
		}
	})

	t.Run("added", func(t *testing.T) {
		got := fields(tr.AwaitPrefix(t, "added "+txid))
		equal(t, "added", got, []string{"added", txid, itoa(entry.VSize), sats(entry.Fees.Base)})
	})

	bumped := b.BumpFee(t, txid)
	bumpedEntry := b.MempoolEntry(t, bumped)

	t.Run("replaced", func(t *testing.T) {
		got := fields(tr.AwaitPrefix(t, "replaced "+txid))
		equal(t, "replaced", got, []string{"replaced", txid, itoa(entry.VSize), sats(entry.Fees.Base), itoa(entry.Time),
			bumped, itoa(bumpedEntry.VSize), sats(bumpedEntry.Fees.Base), "1"})
		got = fields(tr.AwaitPrefix(t, "removed "+txid))
		equal(t, "removed", got, []string{"removed", txid, "replaced", itoa(entry.VSize), sats(entry.Fees.Base), itoa(entry.Time)})
		got = fields(tr.AwaitPrefix(t, "added "+bumped))
		equal(t, "added", got, []string{"added", bumped, itoa(bumpedEntry.VSize), sats(bumpedEntry.Fees.Base)})
	})

	t.Run("rejected", func(t *testing.T) {
		// The replaced transaction again: it conflicts with its
		// replacement and pays less.
		var wtx struct {
			Hex string `json:"hex"`
		}
		b.WalletCLIJSON(t, &wtx, "gettransaction", txid)
		_, err := b.CLIErr("sendrawtransaction", wtx.Hex)
		reason := rpcReason(t, err)
		t.Logf("sendrawtransaction: %v", err)
		got := fields(tr.AwaitPrefix(t, "rejected "+txid))
		equal(t, "rejected", []string{got[1], strings.Join(got[2:], " ")}, []string{txid, reason})
	})

	mined := b.Generate(t, 1)[0]

	t.Run("block", func(t *testing.T) {
		got := fields(tr.AwaitPrefix(t, "removed "+bumped))
		equal(t, "removed", got, []string{"removed", bumped, "block", itoa(bumpedEntry.VSize), sats(bumpedEntry.Fees.Base), itoa(bumpedEntry.Time)})

		var block struct {
			Height int `json:"height"`
			Tx     []struct {
				TxID string `json:"txid"`
				Vin  []struct {
					TxID    string `json:"txid"`
					Vout    int    `json:"vout"`
					Prevout struct {
						Generated bool    `json:"generated"`
						Height    int     `json:"height"`
						Value     float64 `json:"value"`
					} `json:"prevout"`
				} `json:"vin"`
				Vout []struct {
					N            int     `json:"n"`
					Value        float64 `json:"value"`
					ScriptPubKey struct {
						Type string `json:"type"`
					} `json:"scriptPubKey"`
				} `json:"vout"`
			} `json:"tx"`
		}
		b.CLIJSON(t, &block, "getblock", mined, "3")
		inputs := 0
		for _, tx := range block.Tx {
			inputs += len(tx.Vin)
		}
		got = fields(tr.AwaitPrefix(t, "block_connected "+mined))
		equal(t, "block_connected", got[:5], []string{"block_connected", mined, itoa(int64(block.Height)), itoa(int64(len(block.Tx))), itoa(int64(inputs))})
		lines := tr.Lines()
		for i, tx := range block.Tx {
			for _, out := range tx.Vout {
				if out.ScriptPubKey.Type == "nulldata" {
					continue // unspendable: never a coin
				}
				want := strings.Join([]string{"add", tx.TxID, itoa(int64(out.N)), itoa(int64(block.Height)), sats(out.Value), boolDigit(i == 0)}, " ")
				if !contains(lines, want) {
					t.Errorf("no %q", want)
				}
			}
			if i == 0 {
				continue // the coinbase spends no coin
			}
			for _, in := range tx.Vin {
				want := strings.Join([]string{"spent", in.TxID, itoa(int64(in.Vout)), itoa(int64(in.Prevout.Height)), sats(in.Prevout.Value), boolDigit(in.Prevout.Generated)}, " ")
				if !contains(lines, want) {
					t.Errorf("no %q", want)
				}
			}
		}
	})

	t.Run("messages", func(t *testing.T) {
		for _, p := range []regtest.Peer{bToA, aToB} {
			t.Run(p.TransportProto, func(t *testing.T) { compareMessages(t, tr, b, p) })
		}
	})

	t.Run("misbehaving", func(t *testing.T) {
		conn := dialRaw(t, b)
		local := conn.LocalAddr().String()
		var peerID int64 = -1
		for _, p := range b.Peers(t) {
			if p.Addr == local {
				peerID = p.ID
			}
		}
		if peerID < 0 {
			t.Fatalf("B does not list the raw peer %s", local)
		}
		// A headers message announcing 2001 headers, one more than a
		// peer may send: B stops reading at the count.
		conn.send(t, "headers", []byte{0xfd, 0xd1, 0x07})
		got := tr.AwaitPrefix(t, "misbehaving_connection "+strconv.FormatInt(peerID, 10)+" ")
		equal(t, "misbehaving_connection", []string{got}, []string{"misbehaving_connection " + strconv.FormatInt(peerID, 10) + " headers message size = 2001"})
		got = tr.AwaitPrefix(t, "closed_connection "+strconv.FormatInt(peerID, 10)+" ")
		if !strings.HasPrefix(got, "closed_connection "+strconv.FormatInt(peerID, 10)+" "+local+" inbound 0 ") {
			t.Errorf("got %q for the misbehaving peer", got)
		}
	})

	t.Run("closed_connection", func(t *testing.T) {
		b.CLI(t, "disconnectnode", "", id(aToB))
		got := fields(tr.AwaitPrefix(t, "closed_connection "+id(aToB)+" "))
		equal(t, "closed_connection", got, []string{"closed_connection", id(aToB), aToB.Addr, "inbound", network(t, aToB), itoa(aToB.ConnTime)})
	})

	// net:evicted_inbound_connection fires only when a new inbound
	// connection finds every inbound slot taken and one of the peers is
	// not protected. Bitcoin Core protects a peer for its network group
	// (4), ping time (8), recent transactions (4) and blocks (4), its
	// uptime (half the rest) and for being local (up to a quarter), and
	// every regtest peer here is on 127.0.0.1, one network group: more
	// than 20 handshaken raw peers would be needed for one to be
	// evictable, which this test does not do.

	b.Stop(t)
	tr.Wait(t)
	t.Run("hash256", func(t *testing.T) {
		var heights map[string]int
		if err := jsonUnmarshal(tr.Map("@height"), &heights); err != nil {
			t.Fatal(err)
		}
		for i, h := range append(hashes, mined) {
			if heights[h] != i+1 {
				t.Errorf("@height[%s] = %d, want %d", h, heights[h], i+1)
			}
		}
	})
	t.Logf("TestTracepoints took %v", time.Since(start).Round(time.Millisecond))
}
