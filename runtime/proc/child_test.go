package proc

import (
	"slices"
	"strings"
	"testing"
)

func TestSplitCommand(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
		err  bool
	}{
		{"java -version", []string{"java", "-version"}, false},
		{"  ./bitcoind   --rounds 3 ", []string{"./bitcoind", "--rounds", "3"}, false},
		{`sh -c 'exit 3'`, []string{"sh", "-c", "exit 3"}, false},
		{`echo "a  b" c`, []string{"echo", "a  b", "c"}, false},
		{`echo "say \"hi\"" a\ b`, []string{"echo", `say "hi"`, "a b"}, false},
		{`echo ''`, []string{"echo", ""}, false},
		{"", nil, false},
		{`echo 'open`, nil, true},
		{`echo "open`, nil, true},
	} {
		got, err := splitCommand(tc.in)
		if (err != nil) != tc.err {
			t.Errorf("splitCommand(%q) error = %v, want error %v", tc.in, err, tc.err)
			continue
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("splitCommand(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// FuzzSplitCommand checks that splitCommand never panics and that words
// quoted the way a shell reads them come back unchanged.
func FuzzSplitCommand(f *testing.F) {
	for _, s := range []string{"java -version", `sh -c 'exit 3'`, `a "b c" d\ e`, `'`, `"\`, "\t\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		words, err := splitCommand(s)
		if err != nil {
			return
		}
		quoted := make([]string, len(words))
		for i, w := range words {
			quoted[i] = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
		}
		again, err := splitCommand(strings.Join(quoted, " "))
		if err != nil || !slices.Equal(again, words) {
			t.Errorf("%q split into %q; quoted again %q, split into %q (%v)", s, words, quoted, again, err)
		}
	})
}
