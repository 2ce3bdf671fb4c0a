// Package svg holds what gotrace's drawings (runtime/flamegraph,
// runtime/chart) write the same way: text escaped for XML and
// coordinates in short decimals.
package svg

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Escape escapes s for XML text and attribute values. Control characters,
// which XML cannot hold, and invalid UTF-8 become '?'.
func Escape(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '&':
			b.WriteString("&amp;")
		case r == '<':
			b.WriteString("&lt;")
		case r == '>':
			b.WriteString("&gt;")
		case r == '"':
			b.WriteString("&quot;")
		case r < 0x20 || r == 0xFFFD:
			b.WriteByte('?')
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Coord formats a coordinate with two decimals at most: 10, 2.5, 3.14.
func Coord(v float64) string {
	s := strconv.FormatFloat(v, 'f', 2, 64)
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}

// WriteDocument writes a drawing to w: the svg element that drawSVG
// writes, as an SVG file (behind the XML declaration) or, with html, as
// an HTML page of the given title that holds it, scaled to the
// window's width.
func WriteDocument(w io.Writer, html bool, title string, drawSVG func(w *bufio.Writer) error) error {
	bw := bufio.NewWriter(w)
	if html {
		fmt.Fprintf(bw, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>%s</title>\n<style>body { margin: 0; } body > svg { width: 100%%; height: auto; }</style>\n</head>\n<body>\n", Escape(title))
	} else {
		bw.WriteString(XMLDeclaration)
	}
	if err := drawSVG(bw); err != nil {
		return err
	}
	if html {
		bw.WriteString("</body>\n</html>\n")
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write drawing: %w", err)
	}
	return nil
}

// XMLDeclaration starts an SVG file.
const XMLDeclaration = "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"

// Cut returns s whole when it has at most n characters, else its first
// n-2 and "..", or "" when n is below 3.
func Cut(s string, n int) string {
	if n < 3 {
		return ""
	}
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-2]) + ".."
}
