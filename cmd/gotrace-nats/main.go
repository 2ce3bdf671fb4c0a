// Command gotrace-nats publishes a gotrace capture on NATS JetStream (the
// -w format, read from its standard input): gotrace --nats runs it and
// writes the live run's capture to it, gotrace replay --nats a capture
// file's (docs/streams.md). It is a program of its own so that the NATS
// client, whose packages' initialisers allocate at every start, is not in
// gotrace (issue 24). It takes gotrace's --nats flags; on its standard
// output it tells gotrace "ready" once it is connected or waits for the
// server, then "done", or "error: " and why instead of either.
package main

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/pflag"

	"github.com/gotrace/gotrace/runtime/stream"
	"github.com/gotrace/gotrace/runtime/stream/natspub"
)

func main() {
	// gotrace ends the capture when the trace ends: a Ctrl-C meant for
	// the trace must not end the publishing of its last records.
	signal.Ignore(syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	if err := run(os.Args[1:], os.Stdin, os.Stderr); err != nil {
		fmt.Printf("%s%v\n", stream.StatusError, err)
		os.Exit(1)
	}
	fmt.Println(stream.StatusDone)
}

// run publishes the capture read from in as the flags in args say.
func run(args []string, in io.Reader, stderr io.Writer) error {
	var cfg stream.Config
	var mode string
	fs := pflag.NewFlagSet(stream.HelperName, pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	stream.AddFlags(fs, &cfg, true)
	fs.StringVar(&cfg.Version, "nats-version", "", "gotrace's version, for the messages' headers")
	fs.StringVar(&mode, "nats-mode", stream.ModeLive, "live (a running trace) or replay (a capture file)")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%s: %w", stream.HelperName, err)
	}
	if mode != stream.ModeLive && mode != stream.ModeReplay {
		return fmt.Errorf("%s: --nats-mode %q: want %s or %s", stream.HelperName, mode, stream.ModeLive, stream.ModeReplay)
	}
	cfg.Err = stderr
	t, err := natspub.Start(cfg, mode == stream.ModeReplay)
	if err != nil {
		return err
	}
	fmt.Println(stream.StatusReady)
	if _, err := io.Copy(t, in); err != nil {
		t.Close()
		return fmt.Errorf("read capture: %w", err)
	}
	return t.Close()
}
