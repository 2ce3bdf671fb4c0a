package regtest_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gotrace/gotrace/internal/regtest"
	"github.com/gotrace/gotrace/internal/testenv"
)

// unprivUser owns the data directory of a node that runs as a user
// (hack/setup.sh creates it).
const unprivUser = "gotrace-unpriv"

// repoScript returns the path of scripts/NAME.
func repoScript(t *testing.T, name string) string {
	t.Helper()
	root, err := regtest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(root, "scripts", name)
}

// TestNetmsg runs scripts/netmsg.bt on a real node started every way a
// user starts one: under -c, as root and as a user owning the data
// directory (--user and runuser wrapping bitcoind), attached with -p to a
// running node, and recorded with -w then printed by gotrace replay. Each
// time the node connects to a peer A, and the version message it sends
// and the verack it receives are printed with A's address, the peer id
// getpeerinfo gives, and (version) the size getpeerinfo counts less v1's
// 24-byte header. The script names ./bitcoind, so gotrace runs in the
// directory of the binary, as the script's comment says.
func TestNetmsg(t *testing.T) {
	testenv.RequireRoot(t)
	runuser := testenv.RequireTool(t, "runuser")
	a := regtest.New(t, regtest.Options{})
	a.Start(t)
	a.WaitReady(t)
	script := repoScript(t, "netmsg.bt")
	bin := filepath.Dir(a.Bitcoind)
	cases := []struct {
		name string
		user string // owner of B's data directory
		// args returns gotrace's arguments before the script, for B
		// (nil: B is started first and gotrace attaches with -p).
		args func(b *regtest.Node) []string
	}{
		{"c", "", func(b *regtest.Node) []string {
			return []string{"-c", "./bitcoind -datadir=" + b.Datadir}
		}},
		{"c_user", unprivUser, func(b *regtest.Node) []string {
			return []string{"--user", unprivUser, "-c", "./bitcoind -datadir=" + b.Datadir}
		}},
		{"c_runuser", unprivUser, func(b *regtest.Node) []string {
			return []string{"-c", runuser + " -u " + unprivUser + " -- ./bitcoind -datadir=" + b.Datadir}
		}},
		{"p", "", nil},
		{"w_replay", "", func(b *regtest.Node) []string {
			return []string{"-c", "./bitcoind -datadir=" + b.Datadir}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := regtest.New(t, regtest.Options{User: c.user})
			var args []string
			if c.args == nil {
				b.Start(t)
				b.WaitReady(t)
				args = []string{"-p", strconv.Itoa(b.PID())}
			} else {
				args = c.args(b)
			}
			capture := filepath.Join(t.TempDir(), "netmsg.capture")
			if c.name == "w_replay" {
				args = append(args, "-w", capture)
			}
			tr := regtest.StartTrace(t, gotrace(t), bin, append(args, script)...)
			if c.args == nil {
				// BEGIN prints once the probes are attached.
				tr.AwaitPrefix(t, "Tracing bitcoind P2P messages")
			}
			b.WaitReady(t)
			if c.user != "" {
				if owner := processUser(t, b.PID()); owner != c.user {
					t.Errorf("bitcoind runs as %s, want %s", owner, c.user)
				}
			}
			out, _ := b.Connect(t, a)
			// Both sides past the handshake: B has sent version and
			// received verack, and counted them.
			peer := id(out)
			versionSize := strconv.FormatInt(out.BytesSentPer["version"]-24, 10)
			check := func(t *testing.T, lines []string) {
				t.Helper()
				var sent, got bool
				for _, l := range lines {
					f := fields(l)
					if len(f) >= 6 && f[1] == "outbound" && f[2] == "version" && f[3] == a.Addr() && f[4] == peer {
						sent = f[5] == versionSize
						if !sent {
							t.Errorf("version of %s bytes, getpeerinfo counts %s+24: %q", f[5], versionSize, l)
						}
					}
					if len(f) >= 6 && f[1] == "inbound" && f[2] == "verack" && f[3] == a.Addr() && f[4] == peer && f[5] == "0" {
						got = true
					}
				}
				if !sent || !got {
					t.Errorf("no outbound version or inbound verack with peer %s (%s) in %q", peer, a.Addr(), lines)
				}
			}
			if c.name != "w_replay" {
				check(t, tr.Await(t, "inbound verack", func(lines []string) bool {
					return len(prefixedField(lines, 2, "verack")) > 0
				}))
				return
			}
			b.Stop(t)
			tr.Wait(t)
			if n := len(tr.Lines()); n != 0 {
				t.Errorf("gotrace -w printed %d lines; want none", n)
			}
			replay, err := exec.Command(gotrace(t), "replay", capture).Output()
			if err != nil {
				t.Fatalf("gotrace replay: %v", err)
			}
			lines := strings.Split(string(replay), "\n")
			// As live text output, without -q.
			if strings.HasPrefix(lines[0], "Attaching 3 probes") {
				lines = lines[1:]
			}
			if lines[0] != "Tracing bitcoind P2P messages... Hit Ctrl-C to end." {
				t.Errorf("replay begins with %q", lines[0])
			}
			check(t, lines)
		})
	}
}

// prefixedField returns the lines whose i-th field is value.
func prefixedField(lines []string, i int, value string) []string {
	var out []string
	for _, l := range lines {
		if f := fields(l); len(f) > i && f[i] == value {
			out = append(out, l)
		}
	}
	return out
}

// processUser returns the name of the user that process pid runs as.
func processUser(t *testing.T, pid int) string {
	t.Helper()
	out, err := exec.Command("ps", "-o", "user=", "-p", strconv.Itoa(pid)).Output()
	if err != nil {
		t.Fatalf("ps %d: %v", pid, err)
	}
	return strings.TrimSpace(string(out))
}

// TestP2PRaw runs scripts/p2p_raw.bt on node B under -c while peer A
// downloads B's chain and mempool: every block message B sends is
// getblock HASH 0 of the block its header hashes to, byte for byte, and
// the tx message of B's wallet transaction is getrawtransaction TXID.
// A connects only after B mined, so it fetches the blocks as full block
// messages (a block announced at the tip would go as a cmpctblock); B's
// wallet sends once A has synced, so the transaction is announced to A.
func TestP2PRaw(t *testing.T) {
	testenv.RequireRoot(t)
	a := regtest.New(t, regtest.Options{})
	a.Start(t)
	b := regtest.New(t, regtest.Options{})
	tr := regtest.StartTrace(t, gotrace(t), filepath.Dir(b.Bitcoind), "-q", "-c", "./bitcoind -datadir="+b.Datadir, repoScript(t, "p2p_raw.bt"))
	a.WaitReady(t)
	b.WaitReady(t)
	b.CreateWallet(t)
	b.Generate(t, 101)
	a.Connect(t, b)
	// A node announces a transaction only to the peers it has when the
	// transaction enters its mempool: send once A has the chain.
	a.CLI(t, "waitforblockheight", "101", strconv.Itoa(int(regtest.Deadline.Milliseconds())))
	txid := b.SendToAddress(t, b.NewAddress(t), "1")
	raw := b.CLI(t, "getrawtransaction", txid)
	// The transaction is announced to A after a random delay and then
	// sent: wait for it, then check every block sent so far.
	lines := tr.Await(t, "outbound tx", func(lines []string) bool {
		return len(prefixed(lines, "outbound msg 'tx' ")) > 0
	})
	if got := payloadHex(prefixed(lines, "outbound msg 'tx' ")[0]); got != raw {
		t.Errorf("traced tx:\n got  %.200s\n want %.200s (getrawtransaction %s)", got, raw, txid)
	}
	blocks := prefixed(lines, "outbound msg 'block' ")
	if len(blocks) == 0 {
		t.Fatalf("no block messages sent: %q", lastLines(lines, 20))
	}
	for _, l := range blocks {
		payload := payloadHex(l)
		hash := blockHash(t, payload)
		if want := b.CLI(t, "getblock", hash, "0"); payload != want {
			t.Errorf("traced block %s differs from getblock %s 0", hash, hash)
		}
	}
	t.Logf("%d block messages and the tx equal getblock and getrawtransaction", len(blocks))
}

// payloadHex returns a p2p_raw.bt line's payload as bitcoin-cli prints
// hex: the bytes after "bytes: " without their spaces.
func payloadHex(line string) string {
	_, hex, _ := strings.Cut(line, " bytes: ")
	return strings.ReplaceAll(hex, " ", "")
}

// blockHash returns the hash of the block serialized in hex: the double
// SHA-256 of its 80-byte header, byte-reversed.
func blockHash(t *testing.T, blockHex string) string {
	t.Helper()
	header, err := hex.DecodeString(blockHex[:160])
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(header)
	sum = sha256.Sum256(sum[:])
	slices.Reverse(sum[:])
	return hex.EncodeToString(sum[:])
}

func lastLines(lines []string, n int) []string {
	if len(lines) > n {
		return lines[len(lines)-n:]
	}
	return lines
}

// TestIBD times a -reindex-chainstate of a 2000-block regtest chain with
// scripts/ibd.bt, whose target height (500000, mainnet-sized) is set to
// the chain's tip: it prints block 1 found, the tip reached, and a
// duration that is real (more than zero, less than the run took).
func TestIBD(t *testing.T) {
	testenv.RequireRoot(t)
	const tip = 2000
	n := stoppedChain(t, tip)

	src, err := os.ReadFile(repoScript(t, "ibd.bt"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(src), ">= 500000") {
		t.Fatalf("scripts/ibd.bt no longer stops at >= 500000; update this test")
	}
	script := filepath.Join(t.TempDir(), "ibd.bt")
	if err := os.WriteFile(script, []byte(strings.ReplaceAll(string(src), "500000", strconv.Itoa(tip))), 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	tr := regtest.StartTrace(t, gotrace(t), filepath.Dir(n.Bitcoind), "-q", "-c", "./bitcoind -datadir="+n.Datadir+" -reindex-chainstate", script)
	tr.Wait(t) // the script exits at the tip
	took := time.Since(start)
	lines := tr.Lines()
	want := []string{"Waiting for block 1...", "block 1 found, starting the clock", "block " + strconv.Itoa(tip) + " reached"}
	if len(lines) != 4 || !slices.Equal(lines[:3], want) {
		t.Fatalf("ibd.bt printed %q", lines)
	}
	var ms int64
	if _, err := fmt.Sscanf(lines[3], "IBD to block "+strconv.Itoa(tip)+" took %d ms", &ms); err != nil || ms <= 0 || ms > took.Milliseconds() {
		t.Fatalf("last line %q: want a duration between 0 and the run's %v", lines[3], took)
	}
	t.Logf("%s (the whole run, start-up included: %v)", lines[3], took.Round(time.Millisecond))
}
