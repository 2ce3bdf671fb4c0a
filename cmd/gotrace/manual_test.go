package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/cpuguy83/go-md2man/v2/md2man"
	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
	"github.com/spf13/pflag"

	"github.com/gotrace/gotrace/internal/golden"
)

// generateManual writes gotrace(8): cobra's pages of the command line
// (name, synopsis, description, options) followed by the hand-written
// sections of manual.md, dated dateMark.
func generateManual(w io.Writer, root *cobra.Command) error {
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
		// pflag's text of an empty StringArray, which the page showed
		// before stringList.
		if f.Value.Type() == stringListType && f.DefValue == "" {
			f.DefValue = "[]"
		}
	})
	// NAME says "gotrace - what it is" without the name twice.
	root.Short = strings.TrimPrefix(root.Short, root.Name()+": ")
	// A date that no other text of the page holds, replaced by dateMark.
	date := time.Date(1901, time.February, 1, 0, 0, 0, 0, time.UTC)
	var page bytes.Buffer
	header := &doc.GenManHeader{Title: "GOTRACE", Section: "8", Source: "gotrace " + version, Manual: "System Manager's Manual", Date: &date}
	if err := doc.GenMan(root, header, &page); err != nil {
		return fmt.Errorf("generate manual page: %w", err)
	}
	text, ok := strings.CutPrefix(page.String(), ".nh\n.TH \"GOTRACE\" \"8\" \"Feb 1901\"")
	if !ok {
		return fmt.Errorf("generate manual page: no .TH line with the date in %.80q", page.String())
	}
	sectionText, err := os.ReadFile("manual.md")
	if err != nil {
		return fmt.Errorf("generate manual page: %w", err)
	}
	// md2man makes a document's first heading the page title (.TH): a
	// placeholder takes that place and is cut off with the preamble.
	sections := md2man.Render(append([]byte("# gotrace\n"), sectionText...))
	if i := bytes.Index(sections, []byte("\n.SH ")); i >= 0 {
		text += string(sections[i+1:])
	}
	_, err = io.WriteString(w, ".nh\n.TH \"GOTRACE\" \"8\" \""+dateMark+"\""+text)
	return err
}

// TestManualPage generates gotrace(8) as gotrace used to at run time and
// compares it with gotrace.8, which the binary prints; -update (go
// generate) rewrites the file. Then gotrace __man must print the page
// dated by SOURCE_DATE_EPOCH.
func TestManualPage(t *testing.T) {
	t.Cleanup(func() { writeManual = printManual })
	writeManual = generateManual
	var gen, stderr bytes.Buffer
	if code := run([]string{manCommandName}, &gen, &stderr); code != 0 {
		t.Fatalf("generating the page: exit %d: %s", code, stderr.String())
	}
	golden.Compare(t, "gotrace.8", gen.Bytes())

	writeManual = printManual
	t.Setenv("SOURCE_DATE_EPOCH", "1764806400") // 4 December 2025
	var printed bytes.Buffer
	stderr.Reset()
	if code := run([]string{manCommandName}, &printed, &stderr); code != 0 {
		t.Fatalf("gotrace __man: exit %d: %s", code, stderr.String())
	}
	if want := strings.Replace(manualPage, dateMark, "Dec 2025", 1); printed.String() != want {
		t.Errorf("gotrace __man printed\n%.300s\nwant\n%.300s", printed.String(), want)
	}
}
