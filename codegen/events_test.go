package codegen

import (
	"slices"
	"testing"
)

// TestPackedStrings runs printfs whose strings are sent at their length
// (packedEvent): read by str() straight into the record, copied from a
// variable, empty after a failed read, longer than max_strlen, next to integers, a buf and a comm-sized literal at their fixed
// places; a record's text is its fields, space separated.
func TestPackedStrings(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		want      string
	}{
		{"str and variable", `BEGIN { $s = "a string longer than sixteen bytes"; printf("%s %d %s %s|\n", $s, 7, str(0), str(0, 5)); exit(); }`,
			"a string longer than sixteen bytes 7  "},
		{"literal at its place", `BEGIN { $s = "another string of some length"; printf("%s %s %s %d\n", "hi", $s, $s, -1); exit(); }`,
			"hi another string of some length another string of some length -1"},
		{"longer than max_strlen", `BEGIN { $s = "0123456789012345678901234567890123456789012345678901234567890123456789"; printf("%s|%s\n", $s, "x"); exit(); }`,
			"0123456789012345678901234567890123456789012345678901234567890123456789 x"},
		{"with a buf", `BEGIN { $s = "0123456789abcdefghij"; printf("%r %s %r\n", buf($s, 3), $s, buf($s, 2)); exit(); }`,
			`"012" 0123456789abcdefghij "01"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := load(t, compileSource(t, tc.src))
			if got := printfs(t, l); !slices.Equal(got, []string{tc.want}) {
				t.Errorf("printf records = %q, want %q", got, tc.want)
			}
		})
	}
}
