package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"

	"github.com/gotrace/gotrace/internal/fixture"
	"github.com/gotrace/gotrace/internal/testcert"
	"github.com/gotrace/gotrace/internal/testenv"
	"github.com/gotrace/gotrace/runtime/capture"
	"github.com/gotrace/gotrace/runtime/stream"
)

// natsDeadline bounds every wait of the NATS tests: a server starting, a
// message arriving, gotrace ending.
const natsDeadline = 60 * time.Second

// natsServer is Debian's nats-server with JetStream, on a loopback port,
// its store in a directory of the test's.
type natsServer struct {
	t    *testing.T
	bin  string
	addr string
	dir  string
	conf string
	cmd  *exec.Cmd
}

// requireNATSHelper builds gotrace-nats, the publisher gotrace --nats
// runs, and has gotrace run it ($GOTRACE_NATS).
func requireNATSHelper(t *testing.T) {
	t.Helper()
	goTool := testenv.RequireTool(t, "go")
	bin := filepath.Join(t.TempDir(), stream.HelperName)
	if out, err := exec.Command(goTool, "build", "-o", bin, "../gotrace-nats").CombinedOutput(); err != nil {
		t.Fatalf("go build gotrace-nats: %v\n%s", err, out)
	}
	t.Setenv(stream.HelperEnv, bin)
}

// startNATSServer starts a server with JetStream on a free loopback port; conf,
// when not empty, is more of its configuration file (authorization).
func startNATSServer(t *testing.T, conf string) *natsServer {
	t.Helper()
	requireNATSHelper(t)
	s := &natsServer{t: t, bin: testenv.RequireTool(t, "nats-server"), addr: freePort(t), dir: t.TempDir(), conf: conf}
	s.start()
	t.Cleanup(s.stop)
	return s
}

// url is the server's nats:// URL.
func (s *natsServer) url() string { return "nats://" + s.addr }

// start runs the server and returns once its port accepts connections.
func (s *natsServer) start() {
	s.t.Helper()
	host, port, _ := net.SplitHostPort(s.addr)
	conf := filepath.Join(s.dir, "server.conf")
	text := fmt.Sprintf("listen: %q\njetstream { store_dir: %q }\n%s", net.JoinHostPort(host, port), filepath.Join(s.dir, "store"), s.conf)
	if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
		s.t.Fatal(err)
	}
	logs, err := os.OpenFile(filepath.Join(s.dir, "log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		s.t.Fatal(err)
	}
	defer logs.Close()
	s.cmd = exec.Command(s.bin, "-c", conf)
	s.cmd.Stdout, s.cmd.Stderr = logs, logs
	if err := s.cmd.Start(); err != nil {
		s.t.Fatalf("start nats-server: %v", err)
	}
	waitFor(s.t, "nats-server accepting on "+s.addr, func() bool {
		c, err := net.Dial("tcp", s.addr)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
}

// stop kills the server (SIGKILL: no goodbye to its clients) and waits
// for it; its store stays for a start after.
func (s *natsServer) stop() {
	if s.cmd == nil {
		return
	}
	s.cmd.Process.Kill()
	s.cmd.Wait()
	s.cmd = nil
	if s.t.Failed() {
		b, _ := os.ReadFile(filepath.Join(s.dir, "log"))
		s.t.Logf("nats-server log:\n%s", b)
	}
}

// waitFor polls done until it holds, failing t after natsDeadline.
func waitFor(t *testing.T, what string, done func() bool) {
	t.Helper()
	for deadline := time.Now().Add(natsDeadline); !done(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s", natsDeadline, what)
		}
	}
}

// streamMessages reads every message the stream holds, in its order.
func streamMessages(t *testing.T, url, name string, opts ...nats.Option) []jetstream.Msg {
	t.Helper()
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		t.Fatalf("connect to %s: %v", url, err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), natsDeadline)
	defer cancel()
	st, err := js.Stream(ctx, name)
	if err != nil {
		t.Fatalf("stream %s: %v", name, err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cons, err := st.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	var msgs []jetstream.Msg
	for uint64(len(msgs)) < info.State.Msgs {
		batch, err := cons.Fetch(int(info.State.Msgs)-len(msgs), jetstream.FetchMaxWait(natsDeadline))
		if err != nil {
			t.Fatal(err)
		}
		n := len(msgs)
		for m := range batch.Messages() {
			msgs = append(msgs, m)
		}
		if batch.Error() != nil || len(msgs) == n {
			t.Fatalf("read %d of the stream's %d messages: %v", len(msgs), info.State.Msgs, batch.Error())
		}
	}
	return msgs
}

// kindsScript prints a record of each kind a script can print: printf,
// print of a value and a tuple, time, system, cat, warnf and errorf, maps
// of each kind printed by print() and at exit.
const kindsScript = `BEGIN {
	printf("begin %d %s\n", 1, "x");
	print(42);
	print((1, "two"));
	time("%Y\n");
	system("echo system");
	cat("/proc/sys/kernel/ostype");
	warnf("careful %d", 7);
	errorf("wrong %d", 8);
	@c["a"] = count(); @c["b"] = count();
	@h = hist(5); @l = lhist(3, 0, 10, 1); @s = stats(3); @a = avg(4); @m = 9;
	print(@c);
}
interval:ms:10 { @ticks = count(); print(@ticks); exit(); }`

// TestNATSRecordKinds publishes a record of every kind and finds each in
// the stream as -f json prints it, byte for byte, in order, with headers
// that number them from 1.
func TestNATSRecordKinds(t *testing.T) {
	testenv.RequireRoot(t)
	srv := startNATSServer(t, "")
	gotrace := gotraceCommand(t)
	want := runTool(gotrace, t.TempDir(), []string{"--unsafe", "-f", "json", "-e", kindsScript})
	if want.Err != nil || want.Code != 0 {
		t.Fatalf("gotrace -f json: %v, exit %d\n%s", want.Err, want.Code, want.Stderr)
	}
	capFile := filepath.Join(t.TempDir(), "kinds.cap")
	got := runTool(gotrace, t.TempDir(), []string{"--unsafe", "--nats", srv.url(), "--nats-subject", "test.kinds", "--nats-stream", "KINDS", "--nats-host", "node1", "-w", capFile, "-e", kindsScript})
	if got.Err != nil || got.Code != 0 || got.Stdout != "" {
		t.Fatalf("gotrace --nats: %v, exit %d, printed %q\n%s", got.Err, got.Code, got.Stdout, got.Stderr)
	}
	var wantLines []string
	for line := range strings.Lines(want.Stdout) {
		if line = strings.TrimSuffix(line, "\n"); line != "" {
			wantLines = append(wantLines, line)
		}
	}
	var gotLines []string
	diags := map[string]string{}
	kinds := map[string]bool{}
	run := ""
	for i, m := range streamMessages(t, srv.url(), "KINDS") {
		h := m.Headers()
		if seq := h.Get(stream.HeaderSeq); seq != strconv.Itoa(i+1) {
			t.Errorf("message %d has sequence number %q", i+1, seq)
		}
		if run == "" {
			run = h.Get(stream.HeaderRun)
		}
		if h.Get(stream.HeaderRun) != run || run == "" || h.Get(stream.HeaderHost) != "node1" || h.Get(stream.HeaderScript) != "stdin" ||
			len(h.Get(stream.HeaderHash)) != 64 || h.Get(stream.HeaderVersion) != version {
			t.Errorf("message %d's headers: %v", i+1, h)
		}
		kind := m.Subject()[strings.LastIndexByte(m.Subject(), '.')+1:]
		if prefix := "test.kinds.node1.stdin."; m.Subject() != prefix+kind {
			t.Errorf("message %d's subject %s, want %s<kind>", i+1, m.Subject(), prefix)
		}
		kinds[kind] = true
		if kind == "warnf" || kind == "errorf" {
			// -f json prints them on standard error, as text.
			diags[kind] = string(m.Data())
			continue
		}
		if !strings.Contains(string(m.Data()), `"type": "`+kind+`"`) {
			t.Errorf("message %d on %s: %s", i+1, m.Subject(), m.Data())
		}
		gotLines = append(gotLines, string(m.Data()))
	}
	if d := lineDiff("messages", wantLines, gotLines); d != "" {
		t.Errorf("the stream's messages are not what -f json prints:\n%s", d)
	}
	for _, k := range []string{"attached_probes", "printf", "value", "time", "syscall", "cat", "map", "hist", "stats", "warnf", "errorf"} {
		if !kinds[k] {
			t.Errorf("no message of kind %s: %v", k, kinds)
		}
	}
	if diags["warnf"] != `{"type": "warnf", "data": "careful 7"}` || diags["errorf"] != `{"type": "errorf", "data": "wrong 8"}` {
		t.Errorf("warnf and errorf messages: %q", diags)
	}

	// The -w capture of the same run, published after the fact, gives
	// the same messages on the same subjects.
	r := runTool(gotrace, t.TempDir(), []string{"replay", "--nats", srv.url(), "--nats-subject", "test.replayed", "--nats-stream", "REPLAYED", "--nats-host", "node1", capFile})
	if r.Err != nil || r.Code != 0 || r.Stdout != "" || r.Stderr != "" {
		t.Fatalf("gotrace replay --nats: %v, exit %d, printed %q\n%s", r.Err, r.Code, r.Stdout, r.Stderr)
	}
	live, replayed := streamMessages(t, srv.url(), "KINDS"), streamMessages(t, srv.url(), "REPLAYED")
	var liveLines, replayedLines []string
	for _, m := range live {
		liveLines = append(liveLines, strings.TrimPrefix(m.Subject(), "test.kinds.")+" "+string(m.Data()))
	}
	for _, m := range replayed {
		replayedLines = append(replayedLines, strings.TrimPrefix(m.Subject(), "test.replayed.")+" "+string(m.Data()))
	}
	if d := lineDiff("replayed", liveLines, replayedLines); d != "" {
		t.Errorf("replay --nats published other messages than the live run:\n%s", d)
	}
}

// natsSeqs follows the messages of subjects on a plain subscription that
// survives the server's restart, and keeps the highest sequence number
// seen.
type natsSeqs struct {
	nc   *nats.Conn
	seqs chan uint64
	high uint64
}

// followNATS subscribes to subjects on srv.
func followNATS(t *testing.T, srv *natsServer, subjects string) *natsSeqs {
	t.Helper()
	nc, err := nats.Connect(srv.url(), nats.MaxReconnects(-1), nats.ReconnectWait(20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	f := &natsSeqs{nc: nc, seqs: make(chan uint64, 1<<16)}
	if _, err := nc.Subscribe(subjects, func(m *nats.Msg) {
		n, _ := strconv.ParseUint(m.Header.Get(stream.HeaderSeq), 10, 64)
		select {
		case f.seqs <- n:
		default:
		}
	}); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return f
}

// waitSeq returns once a message numbered n or more has been seen.
func (f *natsSeqs) waitSeq(t *testing.T, n uint64) {
	t.Helper()
	deadline := time.After(natsDeadline)
	for f.high < n {
		select {
		case s := <-f.seqs:
			f.high = max(f.high, s)
		case <-deadline:
			t.Fatalf("waited %s for message %d; the last seen is %d", natsDeadline, n, f.high)
		}
	}
}

// startNATSTrace starts gotrace with args; it is killed in cleanup if the
// test ends first.
func startNATSTrace(t *testing.T, args ...string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(gotraceCommand(t), args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	return cmd, &out
}

// waitExit waits for cmd to end, failing t after natsDeadline.
func waitExit(t *testing.T, cmd *exec.Cmd, out *bytes.Buffer) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("gotrace: %v\n%s", err, out)
		}
	case <-time.After(natsDeadline):
		cmd.Process.Kill()
		<-done
		t.Fatalf("gotrace did not end in %s\n%s", natsDeadline, out)
	}
}

// spoolSize returns the size of the one spool file in dir, 0 before
// there is one.
func spoolSize(t *testing.T, dir string) int64 {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "gotrace-nats-*.cap"))
	if len(files) != 1 {
		return 0
	}
	fi, err := os.Stat(files[0])
	if err != nil {
		return 0
	}
	return fi.Size()
}

// TestNATSServerRestart kills the server while the fixture's messages
// are published, waits until the spool holds records the server has not
// taken, starts the server again and ends the trace: the stream then
// holds every message, numbered from 1 without a gap or a repeat, and as
// many printf messages as the exit map counts.
func TestNATSServerRestart(t *testing.T) {
	testenv.RequireRoot(t)
	srv := startNATSServer(t, "")
	bin := fixture.Private(t, "bitcoind")
	spool := t.TempDir()
	start := filepath.Join(t.TempDir(), "start")
	seen := followNATS(t, srv, "restart.>")
	trace, out := startNATSTrace(t, "--nats", srv.url(), "--nats-subject", "restart", "--nats-stream", "RESTART", "--nats-spool", spool,
		"-c", fmt.Sprintf("%s --wait-file %s --wait-timeout-ms 60000 --rate 500 --rounds 1000000 --output %s", bin, start, os.DevNull),
		"-e", fmt.Sprintf(`usdt:%s:net:inbound_message { printf("%%s %%d\n", str(arg3), arg4); @in = count(); }`, bin))
	// Message 1 is attached_probes: the workload starts then.
	seen.waitSeq(t, 1)
	if err := os.WriteFile(start, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	seen.waitSeq(t, 100)
	srv.stop()
	before := spoolSize(t, spool)
	waitFor(t, "the spool to grow by 4 KiB while the server is away", func() bool { return spoolSize(t, spool) >= before+4096 })
	srv.start()
	// Messages that waited in the spool, then some sent after it.
	high := seen.high
	seen.waitSeq(t, high+500)
	trace.Process.Signal(syscall.SIGINT)
	waitExit(t, trace, out)

	msgs := streamMessages(t, srv.url(), "RESTART")
	seqs := map[uint64]bool{}
	printfs, exitCount := 0, -1
	mapLine := regexp.MustCompile(`^\{"type": "map", "data": \{"@in": (\d+)\}\}$`)
	for _, m := range msgs {
		n, err := strconv.ParseUint(m.Headers().Get(stream.HeaderSeq), 10, 64)
		if err != nil || seqs[n] {
			t.Errorf("sequence number %q: repeated or not a number", m.Headers().Get(stream.HeaderSeq))
		}
		seqs[n] = true
		if strings.HasSuffix(m.Subject(), ".printf") {
			printfs++
		}
		if mm := mapLine.FindSubmatch(m.Data()); mm != nil {
			exitCount, _ = strconv.Atoi(string(mm[1]))
		}
	}
	gaps := 0
	for n := uint64(1); n <= uint64(len(msgs)); n++ {
		if !seqs[n] {
			gaps++
		}
	}
	t.Logf("restart: %d messages published (highest sequence number), %d in the stream, %d missing; %d seen before the kill, the spool grew from %d bytes; %d printf, @in %d",
		len(seqs), len(msgs), gaps, high, before, printfs, exitCount)
	if gaps != 0 {
		t.Errorf("%d sequence numbers of 1..%d are missing from the stream", gaps, len(msgs))
	}
	if printfs != exitCount {
		t.Errorf("%d printf messages, but the exit map counts %d\n%s", printfs, exitCount, out)
	}
}

// spoolScript prints 500 lines at once.
const spoolScript = `BEGIN { for ($i : 0..500) { printf("line %d\n", $i); } exit(); }`

// groups counts a capture's records that are not the inputs or entries of
// another, and its Lost records' sum.
func groups(t *testing.T, path string) (n int, lost uint64) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rd, err := capture.NewReader(bufio.NewReader(f))
	if err != nil {
		t.Fatal(err)
	}
	for {
		rec, err := rd.Next()
		if err != nil {
			return n, lost
		}
		switch rec.Kind {
		case capture.Input, capture.Entries, capture.End:
		case capture.Lost:
			v, _ := rec.Uint64()
			lost += v
		default:
			n++
		}
	}
}

// TestNATSSpoolFull traces with a server that never answers and a spool
// bound of 2,000 bytes: gotrace warns that the server does not answer,
// drops what does not fit and says how many, which is exactly what a -w
// capture of the same run holds more than the spool it leaves; that
// spool is a capture whose lost_events says the same.
func TestNATSSpoolFull(t *testing.T) {
	testenv.RequireRoot(t)
	requireNATSHelper(t)
	gotrace := gotraceCommand(t)
	full := filepath.Join(t.TempDir(), "full.cap")
	if r := runTool(gotrace, t.TempDir(), []string{"-w", full, "-e", spoolScript}); r.Err != nil || r.Code != 0 {
		t.Fatalf("gotrace -w: %v, exit %d\n%s", r.Err, r.Code, r.Stderr)
	}
	spool := t.TempDir()
	url := "nats://" + freePort(t)
	r := runTool(gotrace, t.TempDir(), []string{"--nats", url, "--nats-spool", spool, "--nats-spool-max", "2000", "--nats-drain", "1s", "-e", spoolScript})
	if r.Err != nil || r.Code != 1 {
		t.Fatalf("gotrace --nats: %v, exit %d (want 1: records undelivered)\n%s", r.Err, r.Code, r.Stderr)
	}
	dropped := regexp.MustCompile(`WARNING: --nats: (\d+) records dropped in all`).FindStringSubmatch(r.Stderr)
	if dropped == nil || !strings.Contains(r.Stderr, "WARNING: --nats "+url+": the server does not answer") {
		t.Fatalf("no warnings of the server and the drops:\n%s", r.Stderr)
	}
	left := regexp.MustCompile(`the rest wait in (\S+) `).FindStringSubmatch(r.Stderr)
	if left == nil {
		t.Fatalf("gotrace does not say where the spool is:\n%s", r.Stderr)
	}
	all, _ := groups(t, full)
	kept, lost := groups(t, left[1])
	n, _ := strconv.Atoi(dropped[1])
	t.Logf("spool full: %d records in a -w capture, %d kept in the spool, %d reported dropped", all, kept, n)
	if n == 0 || n != all-kept || lost != uint64(n) {
		t.Errorf("gotrace reports %d dropped; the -w capture has %d records, the spool %d, with lost_events %d", n, all, kept, lost)
	}

	// The spool left behind goes to a server later, as gotrace said.
	srv := startNATSServer(t, "")
	if r := runTool(gotrace, t.TempDir(), []string{"replay", "--nats", srv.url(), left[1]}); r.Err != nil || r.Code != 0 {
		t.Fatalf("gotrace replay --nats of the spool: %v, exit %d\n%s", r.Err, r.Code, r.Stderr)
	}
	printfs, lostMsg := 0, ""
	for _, m := range streamMessages(t, srv.url(), stream.DefaultStream) {
		switch {
		case strings.HasSuffix(m.Subject(), ".printf"):
			printfs++
		case strings.HasSuffix(m.Subject(), ".lost_events"):
			lostMsg = string(m.Data())
		}
	}
	if want := fmt.Sprintf(`{"type": "lost_events", "data": {"events": %d}}`, n); lostMsg != want {
		t.Errorf("the replayed spool's lost_events: %q, want %q", lostMsg, want)
	}
	t.Logf("the spool replayed: %d printf messages", printfs)
}

// TestNATSFlagErrors: a bad URL and refused credentials end gotrace
// before it traces, naming the flag; an NKey the server knows is let in.
func TestNATSFlagErrors(t *testing.T) {
	testenv.RequireRoot(t)
	allowed, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := allowed.PublicKey()
	srv := startNATSServer(t, fmt.Sprintf("authorization { users = [ { nkey: %q } ] }\n", pub))
	dir := t.TempDir()
	seedFile := func(kp nkeys.KeyPair) string {
		seed, _ := kp.Seed()
		f, err := os.CreateTemp(dir, "seed")
		if err != nil {
			t.Fatal(err)
		}
		f.Write(seed)
		f.Close()
		return f.Name()
	}
	other, _ := nkeys.CreateUser()
	gotrace := gotraceCommand(t)
	script := `BEGIN { printf("hi\n"); exit(); }`
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"scheme", []string{"--nats", "http://127.0.0.1:4222"}, 1, `ERROR: --nats: parse URL "http://127.0.0.1:4222": scheme "http": want nats, tls, ws or wss`},
		{"no host", []string{"--nats", "nats://"}, 1, `ERROR: --nats: parse URL "nats://": no host`},
		{"subject", []string{"--nats", srv.url(), "--nats-subject", "a.*"}, 1, `ERROR: --nats-subject: "a.*" is not a subject prefix`},
		{"with -o", []string{"--nats", srv.url(), "-o", filepath.Join(dir, "out")}, 1, "ERROR: --nats and -o cannot be used together"},
		{"missing seed", []string{"--nats", srv.url(), "--nats-nkey", filepath.Join(dir, "none")}, 1, "ERROR: --nats-nkey: read file: stat "},
		{"refused nkey", []string{"--nats", srv.url(), "--nats-nkey", seedFile(other)}, 1, "ERROR: --nats-nkey: the server refused the credentials"},
		{"no credentials", []string{"--nats", srv.url()}, 1, "ERROR: --nats (no credentials given: --nats-creds or --nats-nkey): the server refused the credentials"},
		{"allowed nkey", []string{"--nats", srv.url(), "--nats-nkey", seedFile(allowed)}, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runTool(gotrace, dir, append(tc.args, "-e", script))
			if r.Err != nil || r.Code != tc.code || !strings.Contains(r.Stderr, tc.want) || tc.want == "" && r.Stderr != "" {
				t.Errorf("exit %d (want %d), stderr:\n%s\nwant it to hold %q (%v)", r.Code, tc.code, r.Stderr, tc.want, r.Err)
			}
		})
	}
}

// TestNATSTLS publishes to a server that requires TLS: with its
// authority (--nats-tls-ca) the messages arrive; without it, gotrace ends
// before tracing and names the flag.
func TestNATSTLS(t *testing.T) {
	testenv.RequireRoot(t)
	dir := t.TempDir()
	certs := testcert.Write(t, dir, "nats")
	ca := certs.CA
	srv := startNATSServer(t, fmt.Sprintf("tls { cert_file: %q, key_file: %q }\n", certs.Cert, certs.Key))
	gotrace := gotraceCommand(t)
	script := `BEGIN { printf("over TLS\n"); exit(); }`
	r := runTool(gotrace, dir, []string{"--nats", srv.url(), "--nats-tls-ca", ca, "--nats-stream", "TLS", "-e", script})
	if r.Err != nil || r.Code != 0 || r.Stderr != "" {
		t.Fatalf("gotrace --nats-tls-ca: %v, exit %d\n%s", r.Err, r.Code, r.Stderr)
	}
	msgs := streamMessages(t, srv.url(), "TLS", nats.RootCAs(ca))
	var data []string
	for _, m := range msgs {
		data = append(data, string(m.Data()))
	}
	if len(data) != 2 || data[1] != `{"type": "printf", "data": "over TLS\n"}` {
		t.Errorf("the stream holds %q", data)
	}
	r = runTool(gotrace, dir, []string{"--nats", srv.url(), "--nats-stream", "TLS", "-e", script})
	if r.Code != 1 || !strings.Contains(r.Stderr, "ERROR: --nats-tls-ca: TLS with the server failed") {
		t.Errorf("without the authority: exit %d, stderr:\n%s", r.Code, r.Stderr)
	}
}
