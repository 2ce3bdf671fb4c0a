package main

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/gotrace/gotrace/runtime"
	"github.com/gotrace/gotrace/runtime/stream"
)

// replayCommandName is the subcommand that prints a capture. A script file
// of that name runs as ./replay or after "--", as one named completion.
const replayCommandName = "replay"

// addReplayCommand gives root the replay subcommand; *code receives its
// exit code: the traced script's exit(code), as the live run ended.
func addReplayCommand(root *cobra.Command, code *int) {
	var format, outFile string
	var bus stream.Config
	c := &cobra.Command{
		Use:   replayCommandName + " [-f FORMAT] [-o FILE | --nats URL] CAPTURE",
		Short: "print a capture written with -w as the live trace would have printed it",
		Long: `replay prints a capture file that gotrace -w FILE wrote, in text, JSON or
folded, as the trace would have printed it live: the same lines, maps and exit code.
A capture cut short or damaged is printed up to the damage, then the error
says where it is. docs/capture.md describes the format. With --nats it
publishes the capture as a live run with --nats does (docs/streams.md).

A script file named replay runs as 'gotrace ./replay' or 'gotrace -- replay'.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutputFormat(format); err != nil {
				*code = 1
				return err
			}
			in, err := os.Open(args[0])
			if err != nil {
				*code = 1
				return fmt.Errorf("open capture: %w", err)
			}
			defer in.Close()
			if bus.URL != "" {
				// Published, not printed.
				if err := publishCapture(bus, in, cmd.ErrOrStderr()); err != nil {
					*code = 1
					return err
				}
				return nil
			}
			out := cmd.OutOrStdout()
			if outFile != "" {
				of, err := createAsUser(outFile)
				if err != nil {
					*code = 1
					return fmt.Errorf("open output file: %w", err)
				}
				defer of.Close()
				out = of
			}
			err = runtime.Replay(in, runtime.Options{Out: out, Err: cmd.ErrOrStderr(), Format: format})
			if c, ok := exitCode(err); ok {
				*code = c
				return nil
			}
			if err != nil {
				// A runtime error as the live run printed it, or
				// the capture's damage, which names itself.
				*code = 1
				return err
			}
			return nil
		},
	}
	c.Flags().StringVarP(&format, "format", "f", "text", formatHelp)
	c.Flags().StringVarP(&outFile, "output", "o", "", "write output to `FILE`")
	stream.AddFlags(c.Flags(), &bus, false)
	root.AddCommand(c)
}

// publishCapture publishes the capture read from in on NATS (replay
// --nats), as the live run with --nats would have.
func publishCapture(cfg stream.Config, in io.Reader, stderr io.Writer) error {
	cfg.Version = version
	bus, err := stream.StartHelper(cfg, stream.ModeReplay, stderr)
	if err != nil {
		return err
	}
	_, err = io.Copy(bus, in)
	if cerr := bus.Close(); err == nil {
		err = cerr
	}
	return err
}
