package runtime

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gotrace/gotrace/internal/testenv"
)

const (
	python3  = "/usr/bin/python3.11"
	postgres = "/usr/lib/postgresql/15/bin/postgres"
	libjvm   = "/usr/lib/jvm/java-17-openjdk-amd64/lib/server/libjvm.so"
)

// mapLines returns the "@..." lines of a trace's output, sorted: bpftrace
// prints entries with equal values in hash order.
func mapLines(out string) []string {
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "@") {
			lines = append(lines, l)
		}
	}
	slices.Sort(lines)
	return lines
}

// TestRunPythonMatchesBpftrace counts Python function entries by name in
// the same program under gotrace and bpftrace: the counts must agree.
// Python 3.11 fires function__entry for every call only while its line
// probe is enabled (otherwise for a few frames only), so the script runs
// with and without it.
func TestRunPythonMatchesBpftrace(t *testing.T) {
	testenv.RequireFile(t, python3)
	bpftrace := testenv.RequireBpftrace(t)
	dir := t.TempDir()
	prog := filepath.Join(dir, "fib.py")
	if err := os.WriteFile(prog, []byte("def fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\n\nfib(15)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PYTHONHASHSEED", "0")
	entry := fmt.Sprintf(`usdt:%s:python:function__entry { @calls[str(arg1)] = count(); }`, python3)
	line := fmt.Sprintf(`usdt:%s:python:line { @lines = count(); }`, python3)
	for _, tc := range []struct {
		name, src string
		fib       bool
	}{
		{"entry", entry, false},
		{"entry+line", entry + "\n" + line, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			command := python3 + " " + prog
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			out, stderr, err := runScript(t, ctx, tc.src, Options{Command: command})
			if err != nil {
				t.Fatalf("%v\n%s", err, stderr)
			}
			got := mapLines(out)
			if len(got) == 0 || (tc.fib && !slices.Contains(got, "@calls[fib]: 1973")) {
				t.Errorf("gotrace counted %q, want entries (with fib 1973 times: %v)", got, tc.fib)
			}
			ref, err := exec.CommandContext(ctx, bpftrace, "-e", tc.src, "-c", command).Output()
			if err != nil {
				t.Fatalf("bpftrace: %v", err)
			}
			if want := mapLines(string(ref)); !slices.Equal(got, want) {
				t.Errorf("gotrace counted\n%s\nbpftrace counted\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}

// TestRunJavaLibraryLoadedLater traces libjvm.so, which java loads with
// dlopen after it starts (where bpftrace 0.17 fails to find the probe):
// named by path, gotrace attaches by path and PID before the library is
// mapped; without a path, it finds the library when the dynamic loader has
// mapped it.
func TestRunJavaLibraryLoadedLater(t *testing.T) {
	testenv.RequireRoot(t)
	testenv.RequireFile(t, libjvm)
	testenv.RequireTool(t, "java")
	for _, path := range []string{libjvm, ""} {
		t.Run("path="+path, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
			defer cancel()
			out, stderr, err := runScript(t, ctx, fmt.Sprintf(`usdt:%s:hotspot:class__loaded { @loaded = count(); }`, path), Options{Command: "java -version"})
			if err != nil {
				t.Fatalf("%v\n%s", err, stderr)
			}
			m := regexp.MustCompile(`@loaded: (\d+)`).FindStringSubmatch(out)
			if m == nil {
				t.Fatalf("no count in output:\n%s", out)
			}
			if n, _ := strconv.Atoi(m[1]); n <= 300 {
				t.Errorf("%d classes loaded, want more than 300", n)
			}
		})
	}
}

// postgresServer starts a PostgreSQL server in a temporary directory, as
// user postgres (the server refuses root), listening only on a Unix
// socket, and returns the socket directory and the port.
func postgresServer(t *testing.T) (string, string) {
	t.Helper()
	u, err := user.Lookup("postgres")
	if err != nil {
		testenv.Unavailable(t, "needs user postgres: %v", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	cred := &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
	dir := t.TempDir()
	// The server runs as postgres: let it through the test's directories.
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	data, sock := filepath.Join(dir, "data"), filepath.Join(dir, "sock")
	for _, d := range []string{data, sock} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(d, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Dir(postgres)
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", data, "-A", "trust", "-U", "postgres")
	initdb.SysProcAttr = cred
	if out, err := initdb.CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	port := "54329"
	server := exec.Command(postgres, "-D", data, "-k", sock, "-p", port, "-c", "listen_addresses=")
	server.SysProcAttr = cred
	logf, err := os.Create(filepath.Join(dir, "server.log"))
	if err != nil {
		t.Fatal(err)
	}
	server.Stdout, server.Stderr = logf, logf
	if err := server.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		server.Process.Signal(syscall.SIGINT)
		server.Wait()
		logf.Close()
	})
	// The socket appears before the server accepts connections ("the
	// database system is starting up"): wait until pg_isready says it does.
	deadline := time.Now().Add(30 * time.Second)
	for {
		ready := exec.Command(filepath.Join(bin, "pg_isready"), "-q", "-h", sock, "-p", port)
		if ready.Run() == nil {
			break
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(dir, "server.log"))
			t.Fatalf("postgres did not start:\n%s", log)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return sock, port
}

// TestRunPostgresQueries reads the query strings of a real PostgreSQL
// server's query__start probe, which a semaphore guards.
func TestRunPostgresQueries(t *testing.T) {
	testenv.RequireRoot(t)
	testenv.RequireFile(t, postgres)
	psql := testenv.RequireTool(t, "psql")
	sock, port := postgresServer(t)
	p, info := compileScript(t, fmt.Sprintf(`usdt:%s:postgresql:query__start { printf("query: %%s\n", str(arg0)); @queries = count(); }`, postgres))
	out := newSyncBuffer("gotrace_done")
	errOut := newSyncBuffer("")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	attached := make(chan struct{})
	go func() {
		done <- Run(ctx, p, info, Options{Out: out, Err: errOut, Attached: func() { close(attached) }})
	}()
	// Wait until the probe is attached, then query until the marker shows
	// up.
	queries := []string{"SELECT 1 AS gotrace_one", "SELECT count(*) FROM pg_class", "SELECT 'gotrace_done'"}
	deadline := time.After(60 * time.Second)
	select {
	case <-attached:
	case err := <-done:
		t.Fatalf("Run ended early: %v\n%s", err, errOut)
	case <-deadline:
		t.Fatal("gotrace did not attach in 60 s")
	}
	for _, q := range queries {
		c := exec.Command(psql, "-h", sock, "-p", port, "-U", "postgres", "-d", "postgres", "-X", "-q", "-c", q)
		if b, err := c.CombinedOutput(); err != nil {
			t.Fatalf("psql %q: %v\n%s", q, err, b)
		}
	}
	select {
	case <-out.watch:
	case err := <-done:
		t.Fatalf("Run ended early: %v\n%s", err, errOut)
	case <-deadline:
		t.Fatalf("no marker query in the trace:\n%s", out)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	checkNoBPFFiles(t)
	for _, q := range queries {
		if !strings.Contains(out.String(), "query: "+q+"\n") {
			t.Errorf("trace lacks %q:\n%s", q, out)
		}
	}
}
