package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gotrace/gotrace/runtime"
	"github.com/gotrace/gotrace/runtime/capture"
	"github.com/gotrace/gotrace/runtime/chart"
	"github.com/gotrace/gotrace/runtime/flamegraph"
	"github.com/gotrace/gotrace/runtime/output"
)

// drawing is what a drawing subcommand (flamegraph, chart) collects from
// the maps a trace prints and how it draws them.
type drawing interface {
	// take is offered each map the trace prints; it keeps those it
	// draws (and returns true: they are not printed as text).
	take(m *output.Map) bool
	// write draws what was taken, as an HTML page or an SVG file.
	write(w io.Writer, html bool, title string) error
}

// drawFlags are a drawing subcommand's flags.
type drawFlags struct {
	outFile string
	program string
	command string
	pid     string
	title   string
	quiet   bool
	unsafe  bool
}

// addDrawCommand gives root a subcommand that traces a script (or
// replays a capture), prints the trace as text but for the maps newDrawing's
// drawing takes, and draws those into -o's file; *code receives its exit
// code.
func addDrawCommand(root *cobra.Command, code *int, name, short, long string, newDrawing func() drawing) {
	var df drawFlags
	c := &cobra.Command{
		Use:   name + " -o FILE.svg|FILE.html [-c CMD | -p PID] (SCRIPT [ARG...] | -e 'PROGRAM' [ARG...] | CAPTURE)",
		Short: short,
		Long:  long,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := draw(cmd, &df, args, newDrawing())
			*code = c
			return err
		},
	}
	fs := c.Flags()
	fs.StringVarP(&df.outFile, "output", "o", "", "write the drawing to `FILE`: FILE.svg (an SVG file) or FILE.html (a page holding it)")
	fs.StringVarP(&df.program, "program", "e", "", "trace this `PROGRAM`")
	fs.StringVarP(&df.command, "command", "c", "", "run `CMD`, trace only it and draw when it exits")
	fs.StringVarP(&df.pid, "pid", "p", "", "trace only process `PID`")
	fs.StringVar(&df.title, "title", "", "the drawing's `TITLE` (by default gotrace and the script's name)")
	fs.BoolVarP(&df.quiet, "quiet", "q", false, "do not print \"Attaching N probes...\"")
	fs.BoolVar(&df.unsafe, "unsafe", false, "allow unsafe builtins (system, cat)")
	root.AddCommand(c)
}

// draw runs a drawing subcommand: the trace (or the capture's replay),
// then the drawing.
func draw(cmd *cobra.Command, df *drawFlags, args []string, d drawing) (int, error) {
	html, err := drawingKind(df.outFile)
	if err != nil {
		return 1, err
	}
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	title := df.title
	code := 0
	if replayFile, ok := isCapture(df, args); ok {
		if title == "" {
			title = "gotrace " + filepath.Base(replayFile)
		}
		code, err = replayInto(replayFile, stdout, stderr, d)
	} else {
		if title == "" {
			title = "gotrace " + scriptTitle(df, args)
		}
		f := flags{
			program: df.program, command: df.command, pid: df.pid, quiet: df.quiet, unsafe: df.unsafe,
			format: "text", buffering: "full", takeMap: d.take,
		}
		code, err = execute(cmd.Context(), &f, args, stdout, stderr)
	}
	if err != nil || code != 0 {
		// The trace failed (what it printed says why), or its script
		// asked for another exit code: nothing is drawn.
		return code, err
	}
	var b bytes.Buffer
	if err := d.write(&b, html, title); err != nil {
		return 1, err
	}
	out, err := createAsUser(df.outFile)
	if err != nil {
		return 1, fmt.Errorf("open output file: %w", err)
	}
	if _, err := b.WriteTo(out); err != nil {
		out.Close()
		return 1, fmt.Errorf("write %s: %w", df.outFile, err)
	}
	if err := out.Close(); err != nil {
		return 1, fmt.Errorf("write %s: %w", df.outFile, err)
	}
	return code, nil
}

// drawingKind says from -o's name whether the drawing is an HTML page
// (.html, .htm) or an SVG file (.svg).
func drawingKind(outFile string) (html bool, err error) {
	switch strings.ToLower(filepath.Ext(outFile)) {
	case ".svg":
		return false, nil
	case ".html", ".htm":
		return true, nil
	case "":
		if outFile == "" {
			return false, errors.New("-o FILE is required: the drawing goes to FILE.svg or FILE.html")
		}
	}
	return false, fmt.Errorf("-o %s: name the file .svg (an SVG file) or .html (a page holding it)", outFile)
}

// isCapture says whether the command line names a capture (gotrace -w)
// rather than a script: one file, no -e, that starts with a capture's
// magic.
func isCapture(df *drawFlags, args []string) (string, bool) {
	if df.program != "" || len(args) != 1 {
		return "", false
	}
	f, err := os.Open(args[0])
	if err != nil {
		return "", false
	}
	defer f.Close()
	magic := make([]byte, len(capture.Magic))
	if _, err := io.ReadFull(f, magic); err != nil {
		return "", false
	}
	return args[0], string(magic) == capture.Magic
}

// replayInto replays the capture file as gotrace replay prints it, giving
// d its maps.
func replayInto(file string, stdout, stderr io.Writer, d drawing) (int, error) {
	in, err := os.Open(file)
	if err != nil {
		return 1, fmt.Errorf("open capture: %w", err)
	}
	defer in.Close()
	err = runtime.Replay(in, runtime.Options{Out: stdout, Err: stderr, Format: "text", TakeMap: d.take})
	if c, ok := exitCode(err); ok {
		return c, nil
	}
	if err != nil {
		return 1, err
	}
	return 0, nil
}

// scriptTitle names the traced script in a drawing's default title.
func scriptTitle(df *drawFlags, args []string) string {
	switch {
	case df.program != "":
		return "-e '" + df.program + "'"
	case len(args) > 0:
		return filepath.Base(args[0])
	}
	return ""
}

// flameGraph is gotrace flamegraph's drawing: the stacks of every map
// keyed by a stack, added up over every time the trace printed them.
type flameGraph struct {
	// stacks holds each map's stacks by their folded frames.
	stacks map[string]map[string]flamegraph.Stack
	err    error
}

// The drawing subcommands' names.
const (
	flameGraphCommandName = "flamegraph"
	chartCommandName      = "chart"
)

// addFlameGraphCommand gives root the flamegraph subcommand.
func addFlameGraphCommand(root *cobra.Command, code *int) {
	addDrawCommand(root, code, flameGraphCommandName,
		"trace a script, or replay a capture, and draw its stack maps as a flame graph",
		`flamegraph traces a script (or -e PROGRAM, with -c or -p) until it exits,
its -c command exits or Ctrl-C, or replays a capture of gotrace -w, and draws
the maps keyed by ustack or kstack as an interactive flame graph: an SVG file
or an HTML page, with nothing outside it (no script, no network). Click a
frame to zoom, Search (or Ctrl-F) highlights the frames matching a regular
expression and shows their share, Reset zoom (or Escape) goes back.

Stacks are folded as -f folded folds them (docs/flamegraph.md); each time the
trace prints a stack map its stacks add up. With more than one stack map each
map's stacks stand on a frame of its name. Everything else the trace prints
goes to standard output as text.

  sudo gotrace flamegraph -o bitcoind.svg -c './bitcoind -regtest' \
      -e 'profile:hz:99 /pid == cpid/ { @[ustack] = count(); }'
  gotrace flamegraph -o trace.html trace.gtc`,
		func() drawing { return &flameGraph{stacks: map[string]map[string]flamegraph.Stack{}} })
}

// take keeps m's stacks when its key holds one.
func (g *flameGraph) take(m *output.Map) bool {
	if !m.HasStackKey() {
		return false
	}
	folded, err := output.FoldStacks(m)
	if err != nil {
		g.err = errors.Join(g.err, err)
		return true
	}
	byFrames := g.stacks[m.Name]
	if byFrames == nil {
		byFrames = map[string]flamegraph.Stack{}
		g.stacks[m.Name] = byFrames
	}
	for _, s := range folded {
		key := strings.Join(s.Frames, ";")
		st := byFrames[key]
		st.Frames = s.Frames
		st.Weight += s.Weight
		byFrames[key] = st
	}
	return true
}

// write draws the stacks taken.
func (g *flameGraph) write(w io.Writer, html bool, title string) error {
	if g.err != nil {
		return g.err
	}
	var stacks []flamegraph.Stack
	for name, byFrames := range g.stacks {
		for _, s := range byFrames {
			if len(g.stacks) > 1 {
				s.Frames = append([]string{name}, s.Frames...)
			}
			stacks = append(stacks, s)
		}
	}
	err := flamegraph.Write(w, stacks, flamegraph.Options{Title: title, HTML: html})
	if errors.Is(err, flamegraph.ErrEmpty) {
		return errors.New("nothing to draw: the trace printed no map keyed by ustack or kstack, or only empty ones")
	}
	return err
}

// charts is gotrace chart's drawing: the hist, lhist and tseries maps,
// and the maps of numbers printed more than once, over their prints
// (chart.Prints).
type charts struct {
	prints chart.Prints
}

// addChartCommand gives root the chart subcommand.
func addChartCommand(root *cobra.Command, code *int) {
	addDrawCommand(root, code, chartCommandName,
		"trace a script, or replay a capture, and draw its histograms and time series as SVG",
		`chart traces a script (or -e PROGRAM, with -c or -p) until it exits, its -c
command exits or Ctrl-C, or replays a capture of gotrace -w, and draws its
hist(), lhist() and tseries() maps: a panel per map entry, a bar per bucket
(from the first to the last that counted something, as the text prints them)
or a line through a time series' intervals, each with its value as a
tooltip. A map printed more than once (at every interval) is drawn over its
prints: a histogram as a panel per print, one under the other on one scale;
a time series through the intervals of all its prints; a map of numbers
(count, sum, avg...), which also prints as text, as a line through its
prints. Everything else the trace prints goes to standard output as text
(docs/flamegraph.md).

  sudo gotrace chart -o sizes.svg -e 'usdt:./bitcoind:net:inbound_message { @[str(arg3)] = hist(arg4); }'`,
		func() drawing { return &charts{} })
}

// take keeps the series of a hist, lhist or tseries map, and the values
// of a map of numbers, which still prints as text.
func (c *charts) take(m *output.Map) bool {
	return c.prints.Add(m)
}

// write draws the series taken, the maps in name order.
func (c *charts) write(w io.Writer, html bool, title string) error {
	series := c.prints.Series()
	err := chart.Write(w, series, chart.Options{Title: title, HTML: html})
	if errors.Is(err, chart.ErrEmpty) {
		return errors.New("nothing to draw: the trace printed no hist, lhist or tseries map, or only empty ones")
	}
	return err
}
