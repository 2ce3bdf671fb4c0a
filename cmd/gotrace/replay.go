package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/gotrace/gotrace/runtime"
)

// replayCommandName is the subcommand that prints a capture. A script file
// of that name runs as ./replay or after "--", as one named completion.
const replayCommandName = "replay"

// addReplayCommand gives root the replay subcommand; *code receives its
// exit code: the traced script's exit(code), as the live run ended.
func addReplayCommand(root *cobra.Command, code *int) {
	var format, outFile string
	c := &cobra.Command{
		Use:   replayCommandName + " [-f FORMAT] [-o FILE] CAPTURE",
		Short: "print a capture written with -w as the live trace would have printed it",
		Long: `replay prints a capture file that gotrace -w FILE wrote, in text, JSON or
folded, as the trace would have printed it live: the same lines, maps and exit code.
A capture cut short or damaged is printed up to the damage, then the error
says where it is. docs/capture.md describes the format.

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
	root.AddCommand(c)
}
