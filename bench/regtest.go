package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The regtest case's workload, the same for both tools: the traced node
// syncs regtestPremine blocks from the miner, then gets regtestBlocks
// blocks that hold regtestTxs wallet transactions, sent just before (the
// node gets them in the blocks or relayed, as the miner's random relay
// delays fall).
// regtestPremine leaves 50 coinbase coins mature (after 100 blocks), one
// for each transaction: chains of unconfirmed change stop at 25.
const (
	regtestPremine = 150
	regtestTxs     = 50
	regtestBlocks  = 10
)

// regtestFence is the message type the traced node sends last (with
// sendmsgtopeer): its outbound line tells that the tool has printed
// every message of the workload.
const regtestFence = "benchfence"

// regtestReady is the line scripts/netmsg.bt prints from BEGIN, once
// every probe is attached.
const regtestReady = "Tracing bitcoind P2P messages... Hit Ctrl-C to end."

// regtestBound bounds each wait of the regtest case: a node's start, a
// sync, the tool's lines.
const regtestBound = 2 * time.Minute

// moduleRoot returns the directory of go.mod above the working directory.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("find the module: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("find the module: no go.mod above the working directory")
		}
		dir = parent
	}
}

// bitcoinBin returns the directory of the shared Bitcoin Core build,
// ../shared/bitcoin-core/bin from the module's root.
func bitcoinBin() (string, error) {
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(root, "..", "shared", "bitcoin-core", "bin")
	if _, err := os.Stat(filepath.Join(bin, "bitcoind")); err != nil {
		return "", fmt.Errorf("find bitcoind: %w", err)
	}
	return bin, nil
}

// measureRegtest runs tool on scripts/netmsg.bt with -p on a fresh
// regtest node that syncs from a fresh miner, through the workload: the
// CPU time the tool used (Value: the tracer's own cost, which the
// machine's load moves far less than wall times), the time from its
// start to BEGIN's line (Ready), to the fence message's line (Fence),
// and from SIGINT to its exit (Exit); its peak RSS until the fence and
// the message lines it printed.
func measureRegtest(tool, dir string) (Run, error) {
	bin, err := bitcoinBin()
	if err != nil {
		return Run{}, err
	}
	root, _ := moduleRoot()
	src, err := os.ReadFile(filepath.Join(root, "scripts", "netmsg.bt"))
	if err != nil {
		return Run{}, fmt.Errorf("read netmsg.bt: %w", err)
	}
	script := filepath.Join(dir, "netmsg.bt")
	pointed := strings.ReplaceAll(string(src), "usdt:./bitcoind:", "usdt:"+filepath.Join(bin, "bitcoind")+":")
	if err := os.WriteFile(script, []byte(pointed), 0o644); err != nil {
		return Run{}, fmt.Errorf("write script: %w", err)
	}
	miner, err := startNode(bin, filepath.Join(dir, "miner"))
	if err != nil {
		return Run{}, err
	}
	defer miner.stop()
	node, err := startNode(bin, filepath.Join(dir, "node"))
	if err != nil {
		return Run{}, err
	}
	defer node.stop()
	if _, err := miner.cli("createwallet", "w"); err != nil {
		return Run{}, err
	}
	addr, err := miner.cli("-rpcwallet=w", "getnewaddress")
	if err != nil {
		return Run{}, err
	}
	if _, err := miner.cli("generatetoaddress", strconv.Itoa(regtestPremine), addr); err != nil {
		return Run{}, err
	}

	cmd := exec.Command(tool, "-p", strconv.Itoa(node.cmd.Process.Pid), script)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return Run{}, fmt.Errorf("start %s: %w", filepath.Base(tool), err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return Run{}, fmt.Errorf("start %s: %w", filepath.Base(tool), err)
	}
	defer cmd.Process.Kill()
	lines := newLineWatch(out)
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	var r Run
	wait := func(line string) (float64, error) {
		select {
		case <-lines.seen(line):
			return time.Since(start).Seconds(), nil
		case err := <-exited:
			return 0, fmt.Errorf("%s exited before printing %q: %v: %s", filepath.Base(tool), line, err, firstLine(stderr.String()))
		case <-time.After(regtestBound):
			return 0, fmt.Errorf("%s printed no %q in %v", filepath.Base(tool), line, regtestBound)
		}
	}
	if r.Ready, err = wait(regtestReady); err != nil {
		return Run{}, err
	}
	if err := regtestWorkload(miner, node, addr); err != nil {
		return Run{}, err
	}
	if r.Fence, err = wait(" outbound " + regtestFence + " "); err != nil {
		return Run{}, err
	}
	// The tool's own peak so far, before SIGINT: ru_maxrss of an os/exec
	// child counts the bench's memory too (bench/rss/rss.c), and rss
	// would not pass SIGINT on to the tool. What netmsg.bt prints at exit
	// is a few small maps.
	if r.MaxRSS, err = peakRSS(cmd.Process.Pid); err != nil {
		return Run{}, err
	}
	interrupted := time.Now()
	cmd.Process.Signal(os.Interrupt)
	select {
	case err := <-exited:
		if err != nil {
			return Run{}, fmt.Errorf("%w: %s", err, firstLine(stderr.String()))
		}
	case <-time.After(regtestBound):
		return Run{}, fmt.Errorf("%s still runs %v after SIGINT", filepath.Base(tool), regtestBound)
	}
	r.Exit = time.Since(interrupted).Seconds()
	r.Wall = time.Since(start)
	r.Value = (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
	r.Messages = lines.messages()
	return r, nil
}

// peakRSS returns the peak resident set size in bytes of the running
// process pid, its VmHWM.
func peakRSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("read peak RSS: %w", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kib, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("read peak RSS %q: %w", line, err)
			}
			return kib * 1024, nil
		}
	}
	return 0, fmt.Errorf("read peak RSS: no VmHWM in /proc/%d/status", pid)
}

// regtestWorkload connects the node to the miner and waits until it has
// the premined blocks, has the miner send regtestTxs transactions and
// mine regtestBlocks blocks, waits until the node has them, then makes
// the node send the fence message.
func regtestWorkload(miner, node *regtestNode, addr string) error {
	if _, err := node.cli("addnode", miner.p2pAddr(), "onetry"); err != nil {
		return err
	}
	if err := node.waitFor("getblockcount", strconv.Itoa(regtestPremine)); err != nil {
		return err
	}
	for range regtestTxs {
		if _, err := miner.cli("-rpcwallet=w", "sendtoaddress", addr, "0.1"); err != nil {
			return err
		}
	}
	if _, err := miner.cli("generatetoaddress", strconv.Itoa(regtestBlocks), addr); err != nil {
		return err
	}
	if err := node.waitFor("getblockcount", strconv.Itoa(regtestPremine+regtestBlocks)); err != nil {
		return err
	}
	var peers []struct {
		ID int `json:"id"`
	}
	out, err := node.cli("getpeerinfo")
	if err != nil {
		return err
	}
	if err := json.Unmarshal([]byte(out), &peers); err != nil || len(peers) != 1 {
		return fmt.Errorf("node's peers: %v: %s", err, out)
	}
	_, err = node.cli("sendmsgtopeer", strconv.Itoa(peers[0].ID), regtestFence, "")
	return err
}

// lineWatch reads a tool's standard output, counts its message lines and
// tells when a line containing a given text has been printed.
type lineWatch struct {
	mu    sync.Mutex
	lines []string
	msgs  int
	wait  map[string]chan struct{}
}

// newLineWatch starts reading r.
func newLineWatch(r io.Reader) *lineWatch {
	w := &lineWatch{wait: map[string]chan struct{}{}}
	for _, text := range []string{regtestReady, " outbound " + regtestFence + " "} {
		w.wait[text] = make(chan struct{})
	}
	go func() {
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			line := sc.Text()
			w.mu.Lock()
			if strings.Contains(line, " inbound ") || strings.Contains(line, " outbound ") {
				w.msgs++
			}
			for text, ch := range w.wait {
				if strings.Contains(line, text) {
					close(ch)
					delete(w.wait, text)
				}
			}
			w.mu.Unlock()
		}
		io.Copy(io.Discard, r)
	}()
	return w
}

// seen returns a channel closed once a line containing text is read;
// text is one of those newLineWatch watches for.
func (w *lineWatch) seen(text string) <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	if ch, ok := w.wait[text]; ok {
		return ch
	}
	done := make(chan struct{})
	close(done)
	return done
}

// messages returns the message lines read so far.
func (w *lineWatch) messages() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.msgs
}

// regtestNode is a bitcoind -regtest of the bench, on loopback ports and
// in its own data directory. (internal/regtest is the tests' harness; it
// reports through testing.TB, which a command has not.)
type regtestNode struct {
	bin, dir string
	p2p, rpc int
	cmd      *exec.Cmd
	exited   chan struct{}
}

// regtestRPCUser is the RPC user and password of the bench's nodes: with
// a cookie, a bitcoin-cli -rpcwait started before bitcoind has written
// it fails at once instead of waiting.
const regtestRPCUser = "bench"

// freePort returns a loopback TCP port that nothing listens on.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// startNode starts bitcoind -regtest in dir, on v1 transport (netmsg.bt's
// sizes are the payloads of either), and waits until its RPC answers.
func startNode(bin, dir string) (*regtestNode, error) {
	n := &regtestNode{bin: bin, dir: dir, exited: make(chan struct{})}
	var err error
	if n.p2p, err = freePort(); err != nil {
		return nil, err
	}
	if n.rpc, err = freePort(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("make data directory: %w", err)
	}
	n.cmd = exec.Command(filepath.Join(bin, "bitcoind"), "-regtest", "-datadir="+dir,
		"-bind=127.0.0.1:"+strconv.Itoa(n.p2p), "-port="+strconv.Itoa(n.p2p), "-rpcport="+strconv.Itoa(n.rpc),
		"-listen=1", "-server", "-v2transport=0", "-fallbackfee=0.0002", "-printtoconsole=0",
		"-dnsseed=0", "-fixedseeds=0", "-rpcuser="+regtestRPCUser, "-rpcpassword="+regtestRPCUser)
	if err := n.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start bitcoind: %w", err)
	}
	go func() { n.cmd.Wait(); close(n.exited) }()
	if _, err := n.cli("-rpcwait", "-rpcwaittimeout="+strconv.Itoa(int(regtestBound.Seconds())), "getblockcount"); err != nil {
		n.stop()
		return nil, err
	}
	return n, nil
}

// p2pAddr is the node's P2P address.
func (n *regtestNode) p2pAddr() string { return "127.0.0.1:" + strconv.Itoa(n.p2p) }

// cli runs bitcoin-cli against the node and returns its output.
func (n *regtestNode) cli(args ...string) (string, error) {
	argv := append([]string{"-regtest", "-datadir=" + n.dir, "-rpcport=" + strconv.Itoa(n.rpc),
		"-rpcuser=" + regtestRPCUser, "-rpcpassword=" + regtestRPCUser}, args...)
	out, err := exec.Command(filepath.Join(n.bin, "bitcoin-cli"), argv...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("bitcoin-cli %s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return strings.TrimSpace(string(out)), nil
}

// waitFor calls the RPC method until its answer contains want.
func (n *regtestNode) waitFor(method, want string) error {
	for deadline := time.Now().Add(regtestBound); ; time.Sleep(50 * time.Millisecond) {
		out, err := n.cli(method)
		if err != nil {
			return err
		}
		if strings.Contains(out, want) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s has no %q after %v: %s", method, want, regtestBound, out)
		}
	}
}

// stop stops the node with the stop RPC, kills it if it is still up after
// regtestBound, and removes its data directory.
func (n *regtestNode) stop() {
	n.cli("stop")
	select {
	case <-n.exited:
	case <-time.After(regtestBound):
		n.cmd.Process.Kill()
		<-n.exited
	}
	os.RemoveAll(n.dir)
}
