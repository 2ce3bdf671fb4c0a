package main

import (
	"bytes"
	_ "embed"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/cpuguy83/go-md2man/v2/md2man"
	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
	"github.com/spf13/pflag"

	"github.com/gotrace/gotrace/usdt"
)

// manualSections is the hand-written part of gotrace(8), in go-md2man's
// markdown: the language, the differences from bpftrace, privileges and
// completion, which the command definitions cannot tell.
//
//go:embed manual.md
var manualSections []byte

// manCommandName is the hidden subcommand that prints gotrace(8); the
// package script runs it. Its name cannot be mistaken for a script.
const manCommandName = "__man"

// addToolCommands gives the root command its subcommands: completion
// (cobra's, shown in --help) and the hidden one that prints the manual
// page. A first argument that names neither is the script, as before; a
// script file named like a subcommand runs as ./NAME or after "--".
func addToolCommands(root *cobra.Command) {
	// With subcommands, cobra refuses positional arguments of the root
	// command unless told otherwise: they are the script and its
	// parameters.
	root.Args = cobra.ArbitraryArgs
	root.AddCommand(&cobra.Command{
		Use:    manCommandName,
		Short:  "print the gotrace(8) manual page in roff",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return writeManual(cmd.OutOrStdout(), root)
		},
	})
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() == "completion" {
			c.Long += "\nA script file named completion runs as 'gotrace ./completion' or 'gotrace -- completion'.\n"
		}
	}
	root.ValidArgsFunction = completeArgs
}

// writeManual writes gotrace(8): cobra's pages of the command line (name,
// synopsis, description, options) followed by the hand-written sections.
func writeManual(w io.Writer, root *cobra.Command) error {
	// The completion command is described in the hand-written part, not
	// as a page of its own.
	for _, c := range root.Commands() {
		c.Hidden = true
	}
	root.DisableAutoGenTag = true
	root.Flags().VisitAll(func(f *pflag.Flag) {
		// "``" only hides the value's name from --help; a usage starting
		// with "(" would follow the "[=VALUE]" that cobra writes and make
		// a markdown link of the two.
		f.Usage = strings.TrimPrefix(f.Usage, "``")
		if strings.HasPrefix(f.Usage, "(") {
			f.Usage = `\` + f.Usage
		}
	})
	// NAME says "gotrace - what it is" without the name twice.
	root.Short = strings.TrimPrefix(root.Short, root.Name()+": ")
	var page bytes.Buffer
	header := &doc.GenManHeader{Title: "GOTRACE", Section: "8", Source: "gotrace " + version, Manual: "System Manager's Manual"}
	if err := doc.GenMan(root, header, &page); err != nil {
		return fmt.Errorf("generate manual page: %w", err)
	}
	// md2man makes a document's first heading the page title (.TH): a
	// placeholder takes that place and is cut off with the preamble.
	sections := md2man.Render(append([]byte("# gotrace\n"), manualSections...))
	if i := bytes.Index(sections, []byte("\n.SH ")); i >= 0 {
		page.Write(sections[i+1:])
	}
	_, err := w.Write(page.Bytes())
	return err
}

// completeArgs completes the script (files) and, after -l
// usdt:FILE:, the probes of FILE's notes, read with the user's rights.
func completeArgs(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	rest, ok := strings.CutPrefix(toComplete, "usdt:")
	if !ok {
		return nil, cobra.ShellCompDirectiveDefault
	}
	path, _, ok := strings.Cut(rest, ":")
	if !ok || path == "" {
		return nil, cobra.ShellCompDirectiveDefault
	}
	// Read with the user's rights, as every ELF file (usdt.SetOpenRights).
	probes, err := usdt.ReadFile(path)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var names []string
	for _, p := range probes {
		name := "usdt:" + path + ":" + p.Provider + ":" + p.Name
		if strings.HasPrefix(name, toComplete) {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names, cobra.ShellCompDirectiveNoFileComp
}
