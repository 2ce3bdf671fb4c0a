package regtest_test

import (
	"os"
	"strconv"
	"testing"

	"github.com/gotrace/gotrace/internal/regtest"
)

// TestHarness starts two nodes, connects them, mines and sends from a
// wallet, and checks that stopping a node ends its process and that the
// data directory goes away with the test.
func TestHarness(t *testing.T) {
	var dirs []string
	t.Run("nodes", func(t *testing.T) {
		a := regtest.New(t, regtest.Options{})
		b := regtest.New(t, regtest.Options{})
		dirs = append(dirs, a.Datadir, b.Datadir)
		a.Start(t)
		b.Start(t)
		a.WaitReady(t)
		b.WaitReady(t)
		out, in := b.Connect(t, a)
		if out.ConnectionType != "manual" || in.ConnectionType != "inbound" {
			t.Errorf("connection types %q and %q, want manual and inbound", out.ConnectionType, in.ConnectionType)
		}
		a.CreateWallet(t)
		hashes := a.Generate(t, 101)
		if len(hashes) != 101 {
			t.Fatalf("generated %d blocks, want 101", len(hashes))
		}
		txid := a.SendToAddress(t, a.NewAddress(t), "1")
		e := a.MempoolEntry(t, txid)
		if e.VSize <= 0 || regtest.Sats(e.Fees.Base) <= 0 {
			t.Errorf("mempool entry %+v", e)
		}
		bumped := a.BumpFee(t, txid)
		if bumped == txid || a.MempoolEntry(t, bumped).Fees.Base <= e.Fees.Base {
			t.Errorf("bumpfee %s -> %s did not raise the fee", txid, bumped)
		}
		pid := a.PID()
		a.Stop(t)
		if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); err == nil {
			t.Errorf("bitcoind %d still runs after Stop", pid)
		}
	})
	for _, d := range dirs {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("data directory %s left behind: %v", d, err)
		}
	}
}
