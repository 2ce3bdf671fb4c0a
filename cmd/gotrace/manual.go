package main

import (
	_ "embed"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gotrace/gotrace/usdt"
)

// manualPage is gotrace(8) in roff, generated from the command line's
// definitions and manual.md by TestManualPage (go generate rewrites it),
// with dateMark where the date goes. It is generated at build time rather
// than at run time because the generator (cobra's doc package and
// go-md2man's markdown renderer) initialised on every gotrace run, about
// 1.5 ms and 0.6 MiB of start-up (issue 24), for a page printed only at
// installation.
//
//go:generate go test -run ^TestManualPage$ -update .
//go:embed gotrace.8
var manualPage string

// dateMark stands for the page's date in manualPage.
const dateMark = "@DATE@"

// manCommandName is the hidden subcommand that prints gotrace(8); the
// package script runs it. Its name cannot be mistaken for a script.
const manCommandName = "__man"

// addToolCommands gives the root command its subcommands: completion
// (cobra's, shown in --help) and the hidden one that prints the manual
// page. A first argument that names neither is the script, as before; a
// script file named like a subcommand runs as ./NAME or after "--".
func addToolCommands(root *cobra.Command) {
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

// writeManual writes gotrace(8) for the __man command. It is a variable
// for TestManualPage, which puts the generator in printManual's place to
// get the command tree the page is generated from.
var writeManual = printManual

// printManual writes gotrace(8) with its date: SOURCE_DATE_EPOCH's, for
// reproducible packages, or today's, as cobra's generator dates it.
func printManual(w io.Writer, _ *cobra.Command) error {
	date := time.Now()
	if epoch := os.Getenv("SOURCE_DATE_EPOCH"); epoch != "" {
		secs, err := strconv.ParseInt(epoch, 10, 64)
		if err != nil {
			return fmt.Errorf("read SOURCE_DATE_EPOCH %q: %w", epoch, err)
		}
		date = time.Unix(secs, 0)
	}
	_, err := io.WriteString(w, strings.Replace(manualPage, dateMark, date.Format("Jan 2006"), 1))
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
	// Read with the user's rights, as every ELF file (usdt.SetOpenRights);
	// names only, as -l without -v.
	probes, err := usdt.ReadNames(path)
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
