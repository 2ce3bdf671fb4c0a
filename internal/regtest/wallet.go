package regtest

import (
	"strconv"
	"testing"
)

// WalletCLI runs bitcoin-cli with args against the node's wallet
// (-rpcwallet=Wallet) and returns what it printed.
func (n *Node) WalletCLI(t testing.TB, args ...string) string {
	t.Helper()
	return n.CLI(t, append([]string{"-rpcwallet=" + n.Wallet}, args...)...)
}

// WalletCLIJSON is WalletCLI decoding JSON into out.
func (n *Node) WalletCLIJSON(t testing.TB, out any, args ...string) {
	t.Helper()
	n.CLIJSON(t, out, append([]string{"-rpcwallet=" + n.Wallet}, args...)...)
}

// CreateWallet creates a descriptor wallet named "w" on the node and makes
// it the one the wallet helpers use.
func (n *Node) CreateWallet(t testing.TB) {
	t.Helper()
	n.CLI(t, "createwallet", "w")
	n.Wallet = "w"
}

// NewAddress returns a new address of the node's wallet.
func (n *Node) NewAddress(t testing.TB) string {
	t.Helper()
	return n.WalletCLI(t, "getnewaddress")
}

// Generate mines blocks to a new address of the node's wallet and returns
// their hashes, lowest first. 101 blocks make the first coinbase
// spendable.
func (n *Node) Generate(t testing.TB, blocks int) []string {
	t.Helper()
	var hashes []string
	n.CLIJSON(t, &hashes, "generatetoaddress", strconv.Itoa(blocks), n.NewAddress(t))
	return hashes
}

// SendToAddress sends amount (in BTC, as bitcoin-cli takes it, e.g.
// "1.5") from the node's wallet to addr and returns the txid.
func (n *Node) SendToAddress(t testing.TB, addr, amount string) string {
	t.Helper()
	return n.WalletCLI(t, "sendtoaddress", addr, amount)
}

// BumpFee replaces the wallet transaction txid by one paying a higher fee
// (BIP125, the wallet marks its transactions replaceable) and returns the
// replacement's txid.
func (n *Node) BumpFee(t testing.TB, txid string) string {
	t.Helper()
	var r struct {
		TxID string `json:"txid"`
	}
	n.WalletCLIJSON(t, &r, "bumpfee", txid)
	return r.TxID
}

// MempoolEntry is the part of getmempoolentry that tests compare with
// the mempool tracepoints.
type MempoolEntry struct {
	VSize int64 `json:"vsize"`
	Time  int64 `json:"time"`
	Fees  struct {
		Base float64 `json:"base"`
	} `json:"fees"`
}

// MempoolEntry returns getmempoolentry for txid.
func (n *Node) MempoolEntry(t testing.TB, txid string) MempoolEntry {
	t.Helper()
	var e MempoolEntry
	n.CLIJSON(t, &e, "getmempoolentry", txid)
	return e
}

// Sats converts a BTC amount as the RPCs print it to satoshis, rounding
// to the nearest (the JSON number is a binary float).
func Sats(btc float64) int64 {
	if btc < 0 {
		return -int64(-btc*1e8 + 0.5)
	}
	return int64(btc*1e8 + 0.5)
}
