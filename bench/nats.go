package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// The bus of the NATS case: its stream and subject prefix.
const (
	natsStream  = "BENCH"
	natsSubject = "bench"
)

// natsBus is the nats-server a NATS case publishes to, started for the
// case (startNATS) and stopped after it; nil for other cases.
var natsBus *natsServer

// natsServer is Debian's nats-server with JetStream on a loopback port.
type natsServer struct {
	cmd *exec.Cmd
	url string
}

// startNATS starts a server with JetStream, its store in dir, and returns
// once its port accepts connections.
func startNATS(dir string) (*natsServer, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("find a port for nats-server: %w", err)
	}
	addr := ln.Addr().(*net.TCPAddr)
	ln.Close()
	cmd := exec.Command("nats-server", "-js", "-sd", filepath.Join(dir, "nats"), "-a", "127.0.0.1", "-p", fmt.Sprint(addr.Port))
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start nats-server (hack/setup.sh installs it): %w", err)
	}
	s := &natsServer{cmd: cmd, url: "nats://" + addr.String()}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if c, err := net.Dial("tcp", addr.String()); err == nil {
			c.Close()
			return s, nil
		}
		if time.Now().After(deadline) {
			s.stop()
			return nil, fmt.Errorf("nats-server does not accept on %s after 30 s", addr)
		}
	}
}

// stop kills the server.
func (s *natsServer) stop() {
	s.cmd.Process.Kill()
	s.cmd.Wait()
}

// args are gotrace's flags that publish to the server.
func (s *natsServer) args() []string {
	return []string{"--nats", s.url, "--nats-stream", natsStream, "--nats-subject", natsSubject}
}

// delivered returns how many printf messages the stream holds, and
// empties it for the next run.
func (s *natsServer) delivered() (int, error) {
	nc, err := nats.Connect(s.url)
	if err != nil {
		return 0, fmt.Errorf("connect to nats-server: %w", err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := js.Stream(ctx, natsStream)
	if err != nil {
		return 0, fmt.Errorf("find stream %s: %w", natsStream, err)
	}
	info, err := st.Info(ctx, jetstream.WithSubjectFilter(natsSubject+".*.*.printf"))
	if err != nil {
		return 0, fmt.Errorf("read stream %s: %w", natsStream, err)
	}
	n := 0
	for _, c := range info.State.Subjects {
		n += int(c)
	}
	return n, st.Purge(ctx)
}

// buildNATSHelper builds gotrace-nats beside gotrace, where gotrace
// --nats looks for it.
func buildNATSHelper(gotrace string) error {
	cmd := exec.Command("go", "build", "-o", filepath.Join(filepath.Dir(gotrace), "gotrace-nats"), "github.com/gotrace/gotrace/cmd/gotrace-nats")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("build gotrace-nats: %w\n%s", err, out)
	}
	return nil
}
