package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gotrace/gotrace/internal/fixture"
	"github.com/gotrace/gotrace/internal/testcert"
	"github.com/gotrace/gotrace/internal/testenv"
)

// freePort returns a loopback address with a port nothing listens on.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// scrapeJob is one job of a Prometheus configuration's scrape_configs
// that scrapes target, with the settings extra (YAML at the job's
// indentation) added.
func scrapeJob(name, target, extra string) string {
	return fmt.Sprintf("  - job_name: %s\n    static_configs:\n      - targets: ['%s']\n%s", name, target, extra)
}

// startPrometheus starts a Prometheus server on loopback that runs the
// scrape jobs every second, and returns its address once it is ready.
func startPrometheus(t *testing.T, jobs ...string) string {
	t.Helper()
	prom := testenv.RequireTool(t, "prometheus")
	dir := t.TempDir()
	cfg := filepath.Join(dir, "prometheus.yml")
	conf := "global:\n  scrape_interval: 1s\nscrape_configs:\n" + strings.Join(jobs, "")
	if err := os.WriteFile(cfg, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := freePort(t)
	cmd := exec.Command(prom, "--config.file="+cfg, "--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+addr)
	logs, err := os.Create(filepath.Join(dir, "log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			b, _ := os.ReadFile(logs.Name())
			t.Logf("prometheus log:\n%s", b)
		}
	})
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if resp, err := http.Get("http://" + addr + "/-/ready"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return addr
			}
		}
	}
	t.Fatal("prometheus did not become ready in 30 s")
	return ""
}

// promQuery runs an instant PromQL query and returns each series' labels
// (as name=value strings joined by commas, sorted by Prometheus) and value.
func promQuery(t *testing.T, addr, query string) map[string]float64 {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/api/v1/query?query=" + url.QueryEscape(query))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var r struct {
		Status string
		Data   struct {
			Result []struct {
				Metric map[string]string
				Value  [2]any
			}
		}
	}
	if err := json.Unmarshal(body, &r); err != nil || r.Status != "success" {
		t.Fatalf("query %s: %v %s", query, err, body)
	}
	out := map[string]float64{}
	for _, s := range r.Data.Result {
		var labels []string
		for _, l := range []string{"key", "le"} {
			v, ok := s.Metric[l]
			if !ok {
				continue
			}
			// Prometheus writes le as a float (1.048575e+06, 0.0).
			if f, err := strconv.ParseFloat(v, 64); l == "le" && err == nil && v != "+Inf" {
				v = strconv.FormatFloat(f, 'f', -1, 64)
			}
			labels = append(labels, l+"="+v)
		}
		v, _ := strconv.ParseFloat(s.Value[1].(string), 64)
		out[strings.Join(labels, ",")] = v
	}
	return out
}

// TestMetricsPrometheus traces the fixture with --metrics while a real
// Prometheus scrapes gotrace every second; PromQL then returns the message
// counts and histogram buckets that gotrace prints at exit.
func TestMetricsPrometheus(t *testing.T) {
	testenv.RequireRoot(t)
	bin := fixture.Private(t, "bitcoind")
	gotrace := gotraceCommand(t)
	metricsAddr := freePort(t)
	prom := startPrometheus(t, scrapeJob("gotrace", metricsAddr, ""))
	start := filepath.Join(t.TempDir(), "start")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	// The fixture waits for the start file, fires its messages, then
	// lingers long enough for two scrapes of the final counts.
	tracer := exec.CommandContext(ctx, gotrace, "--metrics", metricsAddr,
		"-c", fmt.Sprintf("%s --wait-file %s --wait-timeout-ms 60000 --linger-ms 3000 --output %s", bin, start, os.DevNull),
		"-e", fmt.Sprintf(`usdt:%s:net:inbound_message { @msgs[str(arg3)] = count(); @size = hist(arg4); }`, bin))
	stdout, err := tracer.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	tracer.Stderr = os.Stderr
	if err := tracer.Start(); err != nil {
		t.Fatal(err)
	}
	rd := bufio.NewReader(stdout)
	if line, err := rd.ReadString('\n'); err != nil || !strings.HasPrefix(line, "Attaching") {
		t.Fatalf("gotrace printed %q, %v", line, err)
	}
	// Prometheus sees gotrace up before the workload starts.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if promQuery(t, prom, `up{job="gotrace"}`)[""] == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("prometheus did not scrape gotrace in 30 s")
		}
	}
	if err := os.WriteFile(start, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	rest, _ := io.ReadAll(rd)
	if err := tracer.Wait(); err != nil {
		t.Fatalf("gotrace: %v\n%s", err, rest)
	}
	printed := string(rest)

	msgs := promQuery(t, prom, `last_over_time(gotrace_msgs_total[5m])`)
	countLine := regexp.MustCompile(`(?m)^@msgs\[(\w+)\]: (\d+)$`)
	matches := countLine.FindAllStringSubmatch(printed, -1)
	if len(matches) == 0 {
		t.Fatalf("gotrace printed no @msgs:\n%s", printed)
	}
	for _, m := range matches {
		if got, want := msgs["key="+m[1]], m[2]; strconv.FormatFloat(got, 'f', -1, 64) != want {
			t.Errorf("PromQL says %s messages of %s, gotrace printed %s", strconv.FormatFloat(got, 'f', -1, 64), m[1], want)
		}
	}
	if len(msgs) != len(matches) {
		t.Errorf("PromQL has %d commands, gotrace printed %d", len(msgs), len(matches))
	}

	// Each printed bucket [lo, hi) holds as many values as the
	// difference of the cumulative counts at le=hi-1 and at the bucket
	// before.
	buckets := promQuery(t, prom, `last_over_time(gotrace_size_bucket[5m])`)
	histLine := regexp.MustCompile(`(?m)^\[(\d+)[KM]?(?:, (\d+)([KM]?)\))?\]?\s+(\d+) \|`)
	prev := buckets["le=0"]
	lines := histLine.FindAllStringSubmatch(printed, -1)
	if len(lines) < 4 {
		t.Fatalf("gotrace printed %d hist buckets, want several:\n%s", len(lines), printed)
	}
	for _, m := range lines {
		count, _ := strconv.ParseFloat(m[4], 64)
		hi := m[1]
		if m[2] != "" {
			n, _ := strconv.ParseUint(m[2], 10, 64)
			n <<= map[string]uint{"": 0, "K": 10, "M": 20}[m[3]]
			hi = strconv.FormatUint(n-1, 10)
		}
		cum, ok := buckets["le="+hi]
		if !ok {
			t.Errorf("no bucket le=%s in Prometheus: %v", hi, buckets)
			continue
		}
		if hi != "0" && cum-prev != count {
			t.Errorf("bucket ending at %s: Prometheus counts %v, gotrace printed %v", hi, cum-prev, count)
		}
		prev = cum
	}
	if buckets["le=+Inf"] != prev {
		t.Errorf("le=+Inf is %v, the last bucket's cumulative count %v", buckets["le=+Inf"], prev)
	}
}

// promTargets returns the health and last error of each of Prometheus'
// scrape jobs.
func promTargets(t *testing.T, addr string) map[string][2]string {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/api/v1/targets")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r struct {
		Data struct {
			ActiveTargets []struct {
				Labels    map[string]string
				Health    string
				LastError string
			}
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		t.Fatalf("prometheus targets: %v", err)
	}
	out := map[string][2]string{}
	for _, tg := range r.Data.ActiveTargets {
		out[tg.Labels["job"]] = [2]string{tg.Health, tg.LastError}
	}
	return out
}

// TestMetricsTLS serves --metrics over TLS with basic auth
// (--web.config.file) while a real Prometheus scrapes it three ways: over
// TLS with the password, whose series arrive; over TLS without it, which
// gets 401; and over plain HTTP, which the TLS server refuses.
func TestMetricsTLS(t *testing.T) {
	testenv.RequireRoot(t)
	dir := t.TempDir()
	certs := testcert.Write(t, dir, "gotrace")
	webConfig := filepath.Join(dir, "web.yml")
	testcert.WriteWebConfig(t, webConfig, &certs, map[string]string{"prometheus": "s3cret pass"})
	metricsAddr := freePort(t)
	tlsJob := fmt.Sprintf("    scheme: https\n    tls_config:\n      ca_file: %s\n      server_name: localhost\n", certs.CA)
	prom := startPrometheus(t,
		scrapeJob("password", metricsAddr, tlsJob+"    basic_auth:\n      username: prometheus\n      password: 's3cret pass'\n"),
		scrapeJob("nopassword", metricsAddr, tlsJob),
		scrapeJob("plain", metricsAddr, ""))

	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	tracer, rd := startTicker(t, ctx, io.Discard, "--metrics", metricsAddr, "--web.config.file", webConfig)

	var targets map[string][2]string
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		ticks := promQuery(t, prom, `gotrace_ticks_total{job="password"}`)[""]
		targets = promTargets(t, prom)
		if ticks > 0 && targets["nopassword"][1] != "" && targets["plain"][1] != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("in 60 s: gotrace_ticks_total over TLS with the password %v, targets %v", ticks, targets)
		}
	}
	t.Logf("prometheus' targets: %v", targets)
	if targets["password"][0] != "up" {
		t.Errorf("the scrape over TLS with the password: %v", targets["password"])
	}
	for job, want := range map[string]string{"nopassword": "401 Unauthorized", "plain": "400 Bad Request"} {
		if got := targets[job]; got[0] != "down" || !strings.Contains(got[1], want) {
			t.Errorf("job %s: %v, want down with %q", job, got, want)
		}
	}
	if got := promQuery(t, prom, `gotrace_ticks_total{job=~"nopassword|plain"}`); len(got) != 0 {
		t.Errorf("series arrived without the password or without TLS: %v", got)
	}

	stopTicker(t, tracer, rd)
}

// startTicker starts gotrace with the flags given and a script that
// counts ticks in @ticks, its stderr to stderr, and returns it with its
// stdout once it has attached. It is killed at the test's end.
func startTicker(t *testing.T, ctx context.Context, stderr io.Writer, flags ...string) (*exec.Cmd, *bufio.Reader) {
	t.Helper()
	tracer := exec.CommandContext(ctx, gotraceCommand(t), append(flags, "-e", "interval:ms:100 { @ticks = count(); }")...)
	stdout, err := tracer.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	tracer.Stderr = stderr
	if err := tracer.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		tracer.Process.Kill()
		tracer.Wait()
	})
	rd := bufio.NewReader(stdout)
	if line, err := rd.ReadString('\n'); err != nil || !strings.HasPrefix(line, "Attaching") {
		t.Fatalf("gotrace printed %q, %v", line, err)
	}
	return tracer, rd
}

// stopTicker interrupts a gotrace of startTicker and checks that it exits
// cleanly, printing @ticks.
func stopTicker(t *testing.T, tracer *exec.Cmd, stdout *bufio.Reader) {
	t.Helper()
	tracer.Process.Signal(os.Interrupt)
	rest, _ := io.ReadAll(stdout)
	if err := tracer.Wait(); err != nil {
		t.Fatalf("gotrace: %v", err)
	}
	if !regexp.MustCompile(`(?m)^@ticks: \d+$`).Match(rest) {
		t.Errorf("gotrace printed at exit:\n%s", rest)
	}
}

// childPIDs returns the processes that the threads of process pid
// started.
func childPIDs(t *testing.T, pid int) []int {
	t.Helper()
	files, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, f := range files {
		b, _ := os.ReadFile(f)
		for _, field := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(field); err == nil {
				pids = append(pids, n)
			}
		}
	}
	return pids
}

// TestMetricsServerGone: when gotrace-metrics dies while the trace runs,
// gotrace says so once and traces on, and prints its maps at exit.
func TestMetricsServerGone(t *testing.T) {
	testenv.RequireRoot(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	stderr, stderrW := io.Pipe()
	t.Cleanup(func() { stderrW.Close() })
	tracer, rd := startTicker(t, ctx, stderrW, "--metrics", freePort(t))
	// The metrics server has said it serves before gotrace attaches.
	children := childPIDs(t, tracer.Process.Pid)
	if len(children) != 1 {
		t.Fatalf("gotrace has children %v, want its metrics server alone", children)
	}
	if err := syscall.Kill(children[0], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stderr).ReadString('\n')
	if want := "WARNING: --metrics: the metrics server gotrace-metrics exited; the trace runs without serving metrics\n"; err != nil || line != want {
		t.Fatalf("gotrace's stderr: %q, %v; want %q", line, err, want)
	}
	// Whatever else gotrace says goes unread.
	go io.Copy(io.Discard, stderr)
	stopTicker(t, tracer, rd)
}
