package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/gotrace/gotrace/lang"
)

// prelude is the text of the --include files, which goes before the
// script: bpftrace hands them to clang's preprocessor, gotrace's parser
// reads their #define macros and struct definitions itself (and skips
// their own #include lines, as it skips the script's).
type prelude struct {
	text  string
	files []includeFile
}

// includeFile is one --include file and the lines it takes in the
// prelude.
type includeFile struct {
	name, text  string
	first, last int
}

// includes reads the --include files.
func includes(names []string) (prelude, error) {
	var p prelude
	line := 1
	for _, name := range names {
		b, err := readFileAsUser(name)
		if err != nil {
			return prelude{}, fmt.Errorf("read --include file: %w", err)
		}
		text := string(b)
		if !strings.HasSuffix(text, "\n") {
			text += "\n"
		}
		n := strings.Count(text, "\n")
		p.files = append(p.files, includeFile{name: name, text: text, first: line, last: line + n - 1})
		p.text += text
		line += n
	}
	return p, nil
}

// diagnose prints err as the package's diagnose does, with each
// diagnostic's lines counted in the file it points into: the script's
// after the prelude, or an --include file's.
func (p prelude) diagnose(err error, file, src string, stderr io.Writer) (int, error) {
	var diags lang.ErrorList
	if len(p.files) == 0 || !errors.As(err, &diags) {
		return diagnose(err, file, src, stderr)
	}
	script := src[len(p.text):]
	skip := p.files[len(p.files)-1].last
	for _, e := range diags {
		moved := *e
		s := &moved.Span
		name, text, shift := file, script, skip
		end := int(s.End.Line)
		for _, f := range p.files {
			if end >= f.first && end <= f.last {
				name, text, shift = f.name, f.text, f.first-1
			}
		}
		if name == file && int(s.Start.Line) <= skip {
			// An attach point's span starts where the token before it
			// ends, which for the first is in the prelude: 1:1 as
			// without one.
			s.Start = lang.Pos{Line: int32(skip + 1), Col: 1}
		}
		s.Start.Line -= int32(shift)
		s.End.Line -= int32(shift)
		lang.ErrorList{&moved}.Write(stderr, name, text)
	}
	return 1, nil
}
