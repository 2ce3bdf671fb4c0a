package regtest_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gotrace/gotrace/internal/regtest"
)

// fields splits a trace line into its space-separated fields.
func fields(line string) []string { return strings.Fields(line) }

// equal fails t (without stopping it) when got and want differ.
func equal(t *testing.T, what string, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("%s:\n got  %q\n want %q", what, got, want)
	}
}

// prefixed returns the lines that start with prefix.
func prefixed(lines []string, prefix string) []string {
	var out []string
	for _, l := range lines {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return out
}

func contains(lines []string, line string) bool { return slices.Contains(lines, line) }

// networks numbers getpeerinfo's network names as Bitcoin Core's
// Network enum, which the connection tracepoints pass. A peer on
// 127.0.0.1 is "not_publicly_routable" (0), not "ipv4" (1): the node
// classes a connection by whether its address is routable first.
var networks = map[string]string{
	"not_publicly_routable": "0", "ipv4": "1", "ipv6": "2", "onion": "3", "i2p": "4", "cjdns": "5", "internal": "6",
}

// network returns the Network number of p's getpeerinfo network name.
func network(t *testing.T, p regtest.Peer) string {
	t.Helper()
	n, ok := networks[p.Network]
	if !ok {
		t.Fatalf("unknown network %q", p.Network)
	}
	return n
}

func id(p regtest.Peer) string { return strconv.FormatInt(p.ID, 10) }

func itoa(i int64) string { return strconv.FormatInt(i, 10) }

// sats prints a BTC amount as the RPCs give it in satoshis, as the
// tracepoints pass amounts.
func sats(btc float64) string { return itoa(regtest.Sats(btc)) }

// boolDigit prints a bool as the tracepoints' bool arguments print with %d.
func boolDigit(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

// decodeTxID returns the txid of a raw transaction.
func decodeTxID(t *testing.T, n *regtest.Node, raw string) string {
	t.Helper()
	var tx struct {
		TxID string `json:"txid"`
	}
	n.CLIJSON(t, &tx, "decoderawtransaction", raw)
	return tx.TxID
}

// rpcReason returns the reject reason of a failed sendrawtransaction:
// bitcoin-cli prints the validation state as "reason, debug message";
// mempool:rejected passes the reason alone.
func rpcReason(t *testing.T, err error) string {
	t.Helper()
	if err == nil {
		t.Fatal("sendrawtransaction succeeded; want a rejection")
	}
	msg := err.Error()
	i := strings.Index(msg, "error message:\n")
	if i < 0 {
		t.Fatalf("no error message in %q", msg)
	}
	msg = msg[i+len("error message:\n"):]
	reason, _, _ := strings.Cut(msg, ", ")
	return strings.TrimSpace(reason)
}

// message is one traced P2P message: its type and payload size.
type message struct {
	typ  string
	size int64
}

// tracedMessages returns the messages of direction ("in" or "out") with
// the peer, in the order they were traced.
func tracedMessages(lines []string, direction string, peer int64) []message {
	var out []message
	prefix := direction + " " + strconv.FormatInt(peer, 10) + " "
	for _, l := range prefixed(lines, prefix) {
		f := fields(l)
		size, _ := strconv.ParseInt(f[3], 10, 64)
		out = append(out, message{f[2], size})
	}
	return out
}

// v2ShortIDs are the message types that BIP324 sends as a one-byte id;
// every other type goes as a zero byte and its 12-byte name.
var v2ShortIDs = map[string]bool{
	"addr": true, "block": true, "blocktxn": true, "cmpctblock": true, "feefilter": true,
	"filteradd": true, "filterclear": true, "filterload": true, "getblocks": true,
	"getblocktxn": true, "getdata": true, "getheaders": true, "headers": true, "inv": true,
	"mempool": true, "merkleblock": true, "notfound": true, "ping": true, "pong": true,
	"sendcmpct": true, "tx": true, "getcfilters": true, "cfilter": true, "getcfheaders": true,
	"cfheaders": true, "getcfcheckpt": true, "cfcheckpt": true, "addrv2": true,
}

// framing returns the bytes a transport adds to a message of type typ,
// which getpeerinfo counts and the tracepoints, which pass the payload,
// do not: v1's 24-byte header (magic, type, length, checksum); v2's
// 3-byte encrypted length, header byte, type (1 or 13 bytes) and 16-byte
// authentication tag.
func framing(transport, typ string) int64 {
	if transport == "v1" {
		return 24
	}
	if v2ShortIDs[typ] {
		return 3 + 1 + 1 + 16
	}
	return 3 + 1 + 13 + 16
}

// accounted returns the per-type byte totals of the first n messages, as
// getpeerinfo would count them.
func accounted(msgs []message, n int, transport string) map[string]int64 {
	totals := map[string]int64{}
	for _, m := range msgs[:n] {
		totals[m.typ] += m.size + framing(transport, m.typ)
	}
	return totals
}

// matchingPrefix reports whether the totals of some prefix of msgs equal
// stats. getpeerinfo counts a received message when it arrives, before
// it is processed and traced, and a sent one when its bytes reach the
// socket, after it was traced: a snapshot of getpeerinfo equals the trace
// up to some message exactly when no message was between the two.
func matchingPrefix(msgs []message, stats map[string]int64, transport string) bool {
	for n := len(msgs); n >= 0; n-- {
		if sameTotals(accounted(msgs, n, transport), stats) {
			return true
		}
	}
	return false
}

func sameTotals(a, b map[string]int64) bool {
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	for k, v := range b {
		if a[k] != v {
			return false
		}
	}
	return true
}

// compareMessages compares B's traced messages with peer p with B's own
// per-type byte counts for p in getpeerinfo. It asks getpeerinfo again
// while a message is in flight between the two (see matchingPrefix),
// until Deadline.
func compareMessages(t *testing.T, tr *regtest.Trace, b *regtest.Node, p regtest.Peer) {
	t.Helper()
	deadline := time.Now().Add(regtest.Deadline)
	for {
		var stats *regtest.Peer
		for _, q := range b.Peers(t) {
			if q.ID == p.ID {
				stats = &q
			}
		}
		if stats == nil {
			t.Fatalf("peer %d gone from getpeerinfo", p.ID)
		}
		lines := tr.Lines()
		in, out := tracedMessages(lines, "in", p.ID), tracedMessages(lines, "out", p.ID)
		okIn := matchingPrefix(in, stats.BytesRecvPer, p.TransportProto)
		okOut := matchingPrefix(out, stats.BytesSentPer, p.TransportProto)
		if okIn && okOut {
			t.Logf("peer %d (%s): %d messages in, %d out, as getpeerinfo counts them", p.ID, p.TransportProto, len(in), len(out))
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("peer %d (%s): trace never matched getpeerinfo within %v\nin:  trace %v\n     node  %v\nout: trace %v\n     node  %v",
				p.ID, p.TransportProto, regtest.Deadline, accounted(in, len(in), p.TransportProto), stats.BytesRecvPer,
				accounted(out, len(out), p.TransportProto), stats.BytesSentPer)
		}
		time.Sleep(100 * time.Millisecond) // between polls of getpeerinfo
	}
}

// rawPeer is a v1 P2P connection to a node, made by the test itself to
// send what a well-behaved node never sends.
type rawPeer struct {
	net.Conn
}

// regtestMagic starts every v1 message on regtest.
var regtestMagic = []byte{0xfa, 0xbf, 0xb5, 0xda}

// dialRaw connects to n, completes the version handshake and returns
// the connection; it is closed when t ends.
func dialRaw(t *testing.T, n *regtest.Node) *rawPeer {
	t.Helper()
	c, err := net.DialTimeout("tcp", n.Addr(), regtest.Deadline)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(regtest.Deadline))
	p := &rawPeer{c}
	var v bytes.Buffer
	le := func(x any) { binary.Write(&v, binary.LittleEndian, x) }
	le(int32(70016))           // protocol version
	le(uint64(0))              // services
	le(time.Now().Unix())      // timestamp
	v.Write(make([]byte, 26))  // addr_recv
	v.Write(make([]byte, 26))  // addr_from
	le(uint64(0x5eed5eed5eed)) // nonce
	v.WriteByte(0)             // user agent ""
	le(int32(0))               // start height
	v.WriteByte(0)             // relay
	p.send(t, "version", v.Bytes())
	// B answers version, then verack, perhaps more; the handshake is
	// done once its verack is read and ours sent.
	for {
		typ := p.recv(t)
		if typ == "verack" {
			break
		}
	}
	p.send(t, "verack", nil)
	// B counts the peer as connected once it processed our verack; a
	// ping answered proves it did.
	p.send(t, "ping", []byte{1, 2, 3, 4, 5, 6, 7, 8})
	for p.recv(t) != "pong" {
	}
	return p
}

// send writes a v1 message.
func (p *rawPeer) send(t *testing.T, typ string, payload []byte) {
	t.Helper()
	var h bytes.Buffer
	h.Write(regtestMagic)
	name := make([]byte, 12)
	copy(name, typ)
	h.Write(name)
	binary.Write(&h, binary.LittleEndian, uint32(len(payload)))
	sum := sha256.Sum256(payload)
	sum = sha256.Sum256(sum[:])
	h.Write(sum[:4])
	h.Write(payload)
	if _, err := p.Write(h.Bytes()); err != nil {
		t.Fatalf("send %s: %v", typ, err)
	}
}

// recv reads one v1 message and returns its type.
func (p *rawPeer) recv(t *testing.T) string {
	t.Helper()
	h := make([]byte, 24)
	if _, err := io.ReadFull(p, h); err != nil {
		t.Fatalf("read a message header: %v", err)
	}
	if _, err := io.CopyN(io.Discard, p, int64(binary.LittleEndian.Uint32(h[16:20]))); err != nil {
		t.Fatalf("read a payload: %v", err)
	}
	return strings.TrimRight(string(h[4:16]), "\x00")
}
