package main

import (
	"bytes"
	"slices"
	"testing"

	"github.com/spf13/cobra"
)

// TestCommandTreeWords checks that commandTreeWords names every command
// and alias of the tree, cobra's help and completion commands among them,
// so that no subcommand is missed by a command line that leaves the tree
// out.
func TestCommandTreeWords(t *testing.T) {
	root := &cobra.Command{Use: "gotrace"}
	code := 0
	addCommandTree(root, &code)
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	var names []string
	for _, c := range root.Commands() {
		names = append(names, c.Name())
		names = append(names, c.Aliases...)
	}
	if len(names) < 6 {
		t.Fatalf("the tree has %d commands (%v): is it built?", len(names), names)
	}
	for _, name := range names {
		if !slices.Contains(commandTreeWords, name) {
			t.Errorf("the subcommand %s is not in commandTreeWords: gotrace %s would run a script of that name", name, name)
		}
	}
}

// TestNeedsCommandTree checks which command lines get the tree.
func TestNeedsCommandTree(t *testing.T) {
	tests := []struct {
		args []string
		want bool
	}{
		{[]string{"-e", "BEGIN { exit(); }"}, false},
		{[]string{"script.bt", "1", "-5"}, false},
		{[]string{"--version"}, false},
		{[]string{"-l", "usdt:./bitcoind:*"}, false},
		{[]string{"-qe", "BEGIN { exit(); }"}, false},
		{[]string{"-c", "./bitcoind -datadir=/tmp/x", "-o", "out.txt", "s.bt"}, false},
		{[]string{"-h"}, true},
		{[]string{"-qh"}, true},
		{[]string{"-h=true"}, true},
		{[]string{"--help"}, true},
		{[]string{"--help=false"}, true},
		{[]string{"-e", "BEGIN { exit(); }", "--help"}, true},
		{[]string{"help", "replay"}, true},
		{[]string{"replay", "x.gtc"}, true},
		{[]string{"flamegraph", "-o", "f.svg", "x.gtc"}, true},
		{[]string{"chart", "-o", "f.svg", "x.gtc"}, true},
		{[]string{"completion", "bash"}, true},
		{[]string{"__complete", "-l", "usdt:"}, true},
		{[]string{"__completeNoDesc", ""}, true},
		{[]string{"__man"}, true},
		// A script named like a subcommand costs the tree, and runs.
		{[]string{"--", "replay"}, true},
		// A value holding an h only costs the tree.
		{[]string{"-ehello"}, true},
	}
	for _, tt := range tests {
		if got := needsCommandTree(tt.args); got != tt.want {
			t.Errorf("needsCommandTree(%q) = %v, want %v", tt.args, got, tt.want)
		}
	}
}

// TestCommandLineWithoutTree runs command lines that leave the tree out
// both ways, without it and with it, and compares what they print and
// their exit codes: leaving the tree out changes nothing but the time.
func TestCommandLineWithoutTree(t *testing.T) {
	t.Cleanup(func() { wantsCommandTree = needsCommandTree })
	for _, args := range [][]string{
		{"--version"},
		{"-V"},
		{"--bogus"},
		{"-e", "BEGIN { }", "--aa=20"},
		{"-p"},
		{"-x"},
		{"-f", "xml", "-e", "BEGIN { exit(); }"},
		{"-p", "notanumber", "-e", "BEGIN { exit(); }"},
		{"-p", "1", "-c", "true", "-e", "BEGIN { exit(); }"},
		{"-B", "bogus", "-e", "BEGIN { exit(); }"},
		{"-I", "/usr/include", "-e", "BEGIN { exit(); }"},
		{"--include", "nosuch.h", "-e", "BEGIN { exit(); }"},
		{"-d=bogus", "-e", "BEGIN { exit(); }"},
		{"--metrics-max-series", "x"},
		{"--user", "nobody", "-e", "BEGIN { exit(); }"},
		{"-l", "-p", "0"},
		{"nosuch.bt"},
		{},
	} {
		if needsCommandTree(args) {
			t.Fatalf("%q gets the tree: pick a command line that does not", args)
		}
		var outs [2]struct {
			stdout, stderr bytes.Buffer
			code           int
		}
		for i, tree := range []bool{false, true} {
			wantsCommandTree = func([]string) bool { return tree }
			outs[i].code = run(args, &outs[i].stdout, &outs[i].stderr)
		}
		lean, full := &outs[0], &outs[1]
		if lean.code != full.code || lean.stdout.String() != full.stdout.String() || lean.stderr.String() != full.stderr.String() {
			t.Errorf("gotrace %q without the tree: exit %d, stdout %q, stderr %q; with it: exit %d, stdout %q, stderr %q",
				args, lean.code, lean.stdout.String(), lean.stderr.String(), full.code, full.stdout.String(), full.stderr.String())
		}
	}
}
