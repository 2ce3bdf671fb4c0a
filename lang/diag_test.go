package lang

import (
	"bytes"
	"errors"
	"testing"
)

func TestErrorListWrite(t *testing.T) {
	src := "BEGIN {\n\t$x = bufx(1, 2);\n  @m = 1\n}\n"
	tests := []struct {
		name string
		err  *Error
		want string
	}{
		{"one line, after a tab",
			&Error{Span: Span{Pos{2, 7}, Pos{2, 11}}, Msg: "Unknown function: bufx"},
			"f.bt:2:7-11: ERROR: Unknown function: bufx\n    $x = bufx(1, 2);\n         ~~~~\n"},
		{"tab inside the span",
			&Error{Span: Span{Pos{2, 1}, Pos{2, 3}}, Msg: "m"},
			"f.bt:2:1-3: ERROR: m\n    $x = bufx(1, 2);\n~~~~~\n"},
		{"several lines",
			&Error{Span: Span{Pos{1, 1}, Pos{3, 9}}, Msg: "usdt target file 'x' does not exist"},
			"f.bt:1-3: ERROR: usdt target file 'x' does not exist\n"},
		{"past the last line",
			&Error{Span: Span{Pos{5, 1}, Pos{5, 1}}, Msg: "syntax error, unexpected end of file, expecting }"},
			"f.bt:5:1-1: ERROR: syntax error, unexpected end of file, expecting }\n"},
		{"empty span on a line",
			&Error{Span: Span{Pos{1, 1}, Pos{1, 1}}, Msg: "No attach points for probe"},
			"f.bt:1:1-1: ERROR: No attach points for probe\nBEGIN {\n\n"},
		{"span beyond the end of the line",
			&Error{Span: Span{Pos{3, 3}, Pos{3, 12}}, Msg: "m"},
			"f.bt:3:3-12: ERROR: m\n  @m = 1\n  ~~~~~~\n"},
		{"hint",
			&Error{Span: Span{Pos{3, 3}, Pos{3, 5}}, Msg: "m", Hint: "did you mean @n?"},
			"f.bt:3:3-5: ERROR: m\n  @m = 1\n  ~~\nHINT: did you mean @n?\n"},
	}
	for _, tt := range tests {
		var b bytes.Buffer
		ErrorList{tt.err}.Write(&b, "f.bt", src)
		if b.String() != tt.want {
			t.Errorf("%s:\n got  %q\n want %q", tt.name, b.String(), tt.want)
		}
	}
}

func TestErrorListWriteAll(t *testing.T) {
	src := "BEGIN { $x = \"\\q\\e\"; }"
	_, err := Parse("stdin", src)
	var list ErrorList
	if !errors.As(err, &list) || len(list) != 2 {
		t.Fatalf("Parse = %v, want two errors", err)
	}
	var b bytes.Buffer
	list.Write(&b, "stdin", src)
	want := `stdin:1:14-17: ERROR: invalid escape character '\q'
BEGIN { $x = "\q\e"; }
             ~~~
stdin:1:14-19: ERROR: invalid escape character '\e'
BEGIN { $x = "\q\e"; }
             ~~~~~
`
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

func TestErrorStrings(t *testing.T) {
	one := &Error{Span: Span{Pos{2, 3}, Pos{2, 7}}, Msg: "boom"}
	two := &Error{Span: Span{Pos{1, 1}, Pos{4, 1}}, Msg: "bang"}
	tests := []struct {
		err  error
		want string
	}{
		{one, "2:3-7: boom"},
		{two, "1-4: bang"},
		{ErrorList{one}, "2:3-7: boom"},
		{ErrorList{one, two}, "2:3-7: boom (and 1 more errors)"},
		{ErrorList{}, "no errors"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
}
