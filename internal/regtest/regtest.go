// Package regtest runs real Bitcoin Core nodes on regtest for tests: the
// bitcoind and bitcoin-cli of ../shared/bitcoin-core (Bitcoin Core v29.2
// built with its USDT tracepoints), each node in its own temporary data
// directory, on free loopback ports, never reachable from outside and never
// left behind.
//
// A test makes a node with New, which only writes its bitcoin.conf, and then
// either starts it itself (Start) or hands Command to a tracer, for example
// gotrace -c, and waits for its RPC with WaitReady:
//
//	a := regtest.New(t, regtest.Options{})
//	a.Start(t)
//	a.WaitReady(t)
//	a.CreateWallet(t)
//	blocks := a.Generate(t, 101)
//
//	b := regtest.New(t, regtest.Options{})
//	cmd := exec.Command(gotrace, "-c", strings.Join(b.Command(), " "), script)
//	... start cmd, b.WaitReady(t), b.Connect(t, a) ...
//
// Every node is stopped when its test ends (t.Cleanup), also when the test
// fails or panics: first with bitcoin-cli stop, then, after a deadline,
// with SIGKILL; a node started by Start also dies with the test process
// (Pdeathsig). The data directory is removed after the node has stopped.
//
// Nothing here sleeps as synchronisation: readiness is bitcoin-cli's own
// -rpcwait, a node's exit is waited for on a pidfd, and peers are awaited by
// asking getpeerinfo until both sides list each other, with a generous
// deadline that fails the test with what the nodes reported.
package regtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gotrace/gotrace/internal/fixture"
	"github.com/gotrace/gotrace/internal/testenv"
)

// EnvDir names the environment variable that, when set, is the directory
// holding Bitcoin Core (bin/bitcoind, bin/bitcoin-cli, contrib/tracing)
// instead of ../shared/bitcoin-core beside the repository.
const EnvDir = "GOTRACE_BITCOIN_CORE"

// Deadline bounds every wait of this package: a node's start, its RPC
// answering, two peers seeing each other, a node's shutdown. It is long
// because a loaded 2-core machine is slow, not because anything should
// take that long.
const Deadline = 2 * time.Minute

// RPCUser and RPCPassword are the credentials written to every node's
// bitcoin.conf; bitcoin-cli reads them from there.
const (
	RPCUser     = "gotrace"
	RPCPassword = "gotrace"
)

// Dir returns the directory holding Bitcoin Core: $GOTRACE_BITCOIN_CORE,
// or ../shared/bitcoin-core relative to the repository root, which it
// finds beside this package's source or by walking up from the working
// directory to go.mod.
func Dir() (string, error) {
	if d := os.Getenv(EnvDir); d != "" {
		return filepath.Abs(d)
	}
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "..", "shared", "bitcoin-core"), nil
}

// RepoRoot returns the gotrace repository's root, found as the parent of
// the fixture's testdata/fixture (see fixture.Dir).
func RepoRoot() (string, error) {
	d, err := fixture.Dir()
	if err != nil {
		return "", fmt.Errorf("find repository root: %w", err)
	}
	return filepath.Join(d, "..", ".."), nil
}

// Binaries returns the paths of bitcoind and bitcoin-cli, or stops t
// (testenv.Unavailable) when they are missing or cannot run here, for
// example because a runtime library is not installed (hack/setup.sh
// installs them).
func Binaries(t testing.TB) (bitcoind, bitcoinCLI string) {
	t.Helper()
	dir, err := Dir()
	if err != nil {
		testenv.Unavailable(t, "Bitcoin Core: %v", err)
	}
	bitcoind = filepath.Join(dir, "bin", "bitcoind")
	bitcoinCLI = filepath.Join(dir, "bin", "bitcoin-cli")
	for _, p := range []string{bitcoind, bitcoinCLI} {
		if out, err := exec.Command(p, "-version").CombinedOutput(); err != nil {
			testenv.Unavailable(t, "Bitcoin Core: run %s -version: %v: %s (set %s, or run hack/setup.sh)",
				p, err, bytes.TrimSpace(out), EnvDir)
		}
	}
	return bitcoind, bitcoinCLI
}

// Options says how New configures a node.
type Options struct {
	// V2Transport enables BIP324 encrypted transport (-v2transport=1). Off
	// by default: v1 frames every message with a 24-byte header, which
	// getpeerinfo's per-message byte counts include.
	V2Transport bool
	// User, when set, owns the data directory, so that the node can run
	// as that user (gotrace -c --user, runuser -u).
	User string
	// Args are more bitcoin.conf lines (key=value) for the [regtest]
	// section, after the defaults; a later line wins for single-valued
	// options.
	Args []string
}

// Node is one regtest node: its data directory and ports, fixed by New.
type Node struct {
	// Datadir is the node's -datadir; bitcoin.conf is in it.
	Datadir string
	// P2PPort and RPCPort are the loopback ports the node listens on.
	P2PPort, RPCPort int
	// Bitcoind and BitcoinCLI are the binaries' paths.
	Bitcoind, BitcoinCLI string
	// Wallet is the wallet that the wallet helpers use; CreateWallet sets
	// it.
	Wallet string

	cmd    *exec.Cmd     // set by Start
	exited chan struct{} // closed when cmd has been waited for
	stderr bytes.Buffer  // the node's own stderr when started by Start
}

// New reserves two free loopback ports and a temporary data directory and
// writes bitcoin.conf there, without starting the node. The node is
// stopped, if it runs, and its data directory removed when t ends.
func New(t testing.TB, opts Options) *Node {
	t.Helper()
	bitcoind, cli := Binaries(t)
	// Not t.TempDir: its parents are mode 0700 and root's, so a node
	// running as Options.User could not reach it.
	dir, err := os.MkdirTemp("", "gotrace-regtest-")
	if err != nil {
		t.Fatalf("create data directory: %v", err)
	}
	n := &Node{Datadir: dir, Bitcoind: bitcoind, BitcoinCLI: cli}
	t.Cleanup(func() {
		n.stop(t)
		if err := os.RemoveAll(dir); err != nil {
			t.Errorf("remove data directory: %v", err)
		}
	})
	ports := freePorts(t, 2)
	n.P2PPort, n.RPCPort = ports[0], ports[1]
	v2 := "0"
	if opts.V2Transport {
		v2 = "1"
	}
	// Everything is per network, so it goes in [regtest]: bitcoind
	// ignores port, bind and rpcport outside it on regtest.
	conf := []string{
		"regtest=1",
		"[regtest]",
		"server=1",
		"listen=1",
		"port=" + strconv.Itoa(n.P2PPort),
		"bind=127.0.0.1:" + strconv.Itoa(n.P2PPort),
		"rpcport=" + strconv.Itoa(n.RPCPort),
		"rpcbind=127.0.0.1",
		"rpcallowip=127.0.0.1",
		"rpcuser=" + RPCUser,
		"rpcpassword=" + RPCPassword,
		// No connection the test did not ask for: no seeds, no
		// port mapping, no own-address discovery, no Tor.
		"dnsseed=0",
		"fixedseeds=0",
		"natpmp=0",
		"discover=0",
		"listenonion=0",
		"v2transport=" + v2,
		// The wallet sends without fee estimates (an empty chain has
		// none) and marks its transactions replaceable, for bumpfee.
		"fallbackfee=0.0002",
		"walletrbf=1",
		"dbcache=16",
		"printtoconsole=0",
	}
	conf = append(conf, opts.Args...)
	if err := os.WriteFile(filepath.Join(dir, "bitcoin.conf"), []byte(strings.Join(conf, "\n")+"\n"), 0o644); err != nil {
		t.Fatalf("write bitcoin.conf: %v", err)
	}
	if opts.User != "" {
		chownTree(t, dir, opts.User)
	}
	return n
}

// chownTree gives dir and what is in it to the named user.
func chownTree(t testing.TB, dir, name string) {
	t.Helper()
	u, err := user.Lookup(name)
	if err != nil {
		t.Fatalf("look up user: %v", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	err = filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	})
	if err != nil {
		t.Fatalf("give data directory to %s: %v", name, err)
	}
}

// freePorts returns n distinct loopback TCP ports that were free a moment
// ago; all are held open together so that they differ.
func freePorts(t testing.TB, n int) []int {
	t.Helper()
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("reserve a loopback port: %v", err)
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports
}

// Addr is the node's P2P address, 127.0.0.1:port, as peers see it.
func (n *Node) Addr() string { return "127.0.0.1:" + strconv.Itoa(n.P2PPort) }

// Command returns the bitcoind command line that runs this node (its
// bitcoin.conf says the rest), with args appended, for a test that starts
// the node itself, for example under gotrace -c.
func (n *Node) Command(args ...string) []string {
	return append([]string{n.Bitcoind, "-datadir=" + n.Datadir}, args...)
}

// Start starts the node as a child of the test process; it dies with the
// test process. Call WaitReady before using it.
func (n *Node) Start(t testing.TB, args ...string) {
	t.Helper()
	argv := n.Command(args...)
	n.cmd = exec.Command(argv[0], argv[1:]...)
	n.cmd.Stderr = &n.stderr
	n.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := n.cmd.Start(); err != nil {
		t.Fatalf("start bitcoind: %v", err)
	}
	n.exited = make(chan struct{})
	go func() {
		n.cmd.Wait()
		close(n.exited)
	}()
}

// WaitReady waits until the node answers RPC (bitcoin-cli -rpcwait, which
// also waits out the node's warm-up) or fails t after Deadline or, for a
// node started by Start, as soon as it exits.
func (n *Node) WaitReady(t testing.TB) {
	t.Helper()
	done := make(chan error, 1)
	var out []byte
	go func() {
		var err error
		out, err = n.cli("-rpcwait", "-rpcwaittimeout="+strconv.Itoa(int(Deadline.Seconds())), "getblockchaininfo")
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("node %s: RPC did not answer: %v: %s%s", n.Datadir, err, out, n.logTail())
		}
	case <-n.exited: // nil unless Start: never ready
		t.Fatalf("node %s exited before its RPC answered: %v%s", n.Datadir, n.cmd.ProcessState, n.logTail())
	}
}

// logTail returns the end of the node's stderr and debug.log, for failure
// messages.
func (n *Node) logTail() string {
	var b strings.Builder
	if n.stderr.Len() > 0 {
		fmt.Fprintf(&b, "\nstderr: %s", tail(n.stderr.Bytes(), 2000))
	}
	if log, err := os.ReadFile(filepath.Join(n.Datadir, "regtest", "debug.log")); err == nil {
		fmt.Fprintf(&b, "\ndebug.log: ...%s", tail(log, 3000))
	}
	return b.String()
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// cli runs bitcoin-cli against the node with the given arguments.
func (n *Node) cli(args ...string) ([]byte, error) {
	argv := append([]string{"-datadir=" + n.Datadir}, args...)
	var stderr bytes.Buffer
	cmd := exec.Command(n.BitcoinCLI, argv...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("bitcoin-cli %s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(stderr.Bytes()))
	}
	return bytes.TrimSuffix(out, []byte("\n")), nil
}

// CLI runs bitcoin-cli with args against the node and returns what it
// printed, without the final newline; an error fails t.
func (n *Node) CLI(t testing.TB, args ...string) string {
	t.Helper()
	out, err := n.cli(args...)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// CLIErr runs bitcoin-cli with args and returns its output or its error,
// whose text holds what bitcoin-cli printed on stderr (for RPCs a test
// expects to fail, such as a rejected sendrawtransaction).
func (n *Node) CLIErr(args ...string) (string, error) {
	out, err := n.cli(args...)
	return string(out), err
}

// CLIJSON runs bitcoin-cli with args and decodes its JSON output into
// out; an error fails t.
func (n *Node) CLIJSON(t testing.TB, out any, args ...string) {
	t.Helper()
	s := n.CLI(t, args...)
	if err := json.Unmarshal([]byte(s), out); err != nil {
		t.Fatalf("bitcoin-cli %s: decode %.200q: %v", strings.Join(args, " "), s, err)
	}
}

// Peer is the part of a getpeerinfo entry that tests use.
type Peer struct {
	ID             int64            `json:"id"`
	Addr           string           `json:"addr"`
	AddrBind       string           `json:"addrbind"`
	Inbound        bool             `json:"inbound"`
	ConnectionType string           `json:"connection_type"`
	Network        string           `json:"network"`
	Version        int              `json:"version"`
	ConnTime       int64            `json:"conntime"`
	TransportProto string           `json:"transport_protocol_type"`
	BytesSentPer   map[string]int64 `json:"bytessent_per_msg"`
	BytesRecvPer   map[string]int64 `json:"bytesrecv_per_msg"`
}

// Peers returns the node's getpeerinfo.
func (n *Node) Peers(t testing.TB) []Peer {
	t.Helper()
	var peers []Peer
	n.CLIJSON(t, &peers, "getpeerinfo")
	return peers
}

// Connect makes n open an outbound connection to other (addnode onetry)
// and waits until both have finished the version handshake with each
// other. It returns n's view of the peer and other's view of n.
func (n *Node) Connect(t testing.TB, other *Node) (out, in Peer) {
	t.Helper()
	n.CLI(t, "addnode", other.Addr(), "onetry")
	return n.WaitPeer(t, other)
}

// WaitPeer waits until n lists other as an outbound peer and other lists
// n's connection as inbound, both past the version handshake, and returns
// the two entries. getpeerinfo is asked again each time until then: it is
// the only place the node tells of a new peer.
func (n *Node) WaitPeer(t testing.TB, other *Node) (out, in Peer) {
	t.Helper()
	deadline := time.Now().Add(Deadline)
	for {
		var okOut, okIn bool
		for _, p := range n.Peers(t) {
			if p.Addr == other.Addr() && !p.Inbound && p.Version > 0 {
				out, okOut = p, true
			}
		}
		if okOut {
			for _, p := range other.Peers(t) {
				// other sees n's outbound socket: its address is
				// n's addrbind as n reports it.
				if p.Inbound && p.Addr == out.AddrBind && p.Version > 0 {
					in, okIn = p, true
				}
			}
		}
		if okOut && okIn {
			return out, in
		}
		if time.Now().After(deadline) {
			t.Fatalf("nodes %s and %s did not connect within %v: %s\n%s", n.Addr(), other.Addr(), Deadline,
				n.CLI(t, "getpeerinfo"), other.CLI(t, "getpeerinfo"))
		}
		time.Sleep(50 * time.Millisecond) // between RPC polls, not as synchronisation
	}
}

// Stop stops the node (bitcoin-cli stop) and waits until its process has
// exited, killing it after Deadline.
func (n *Node) Stop(t testing.TB) {
	t.Helper()
	if err := n.stop(t); err != nil {
		t.Fatal(err)
	}
}

// PID returns the running node's process id, read from its bitcoind.pid,
// or 0 when the node does not run.
func (n *Node) PID() int {
	b, err := os.ReadFile(filepath.Join(n.Datadir, "regtest", "bitcoind.pid"))
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0
	}
	return pid
}

// stop stops the node if it runs, however it was started: bitcoin-cli
// stop, then SIGKILL after Deadline. A node that never wrote its pid file
// but was started by Start is killed at once.
func (n *Node) stop(t testing.TB) error {
	t.Helper()
	pid := n.PID()
	if pid == 0 {
		if n.cmd != nil {
			n.cmd.Process.Kill()
			<-n.exited
		}
		return nil
	}
	fd, err := unix.PidfdOpen(pid, 0)
	if errors.Is(err, unix.ESRCH) {
		return nil // exited; its pid file is stale
	}
	if err != nil {
		return fmt.Errorf("stop node: open pidfd of %d: %w", pid, err)
	}
	defer unix.Close(fd)
	if _, err := n.cli("stop"); err != nil {
		t.Logf("node %s: %v; killing it", n.Datadir, err)
		unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
	}
	if !waitPidfd(fd, Deadline) {
		unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
		waitPidfd(fd, Deadline)
		return fmt.Errorf("stop node %s: still running %v after bitcoin-cli stop; killed%s", n.Datadir, Deadline, n.logTail())
	}
	if n.cmd != nil {
		<-n.exited
	}
	return nil
}

// waitPidfd waits until the process behind the pidfd has exited, for at
// most d; it reports whether it did.
func waitPidfd(fd int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return false
		}
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, int(left.Milliseconds())+1)
		if err == unix.EINTR {
			continue
		}
		return err == nil && n > 0
	}
}
