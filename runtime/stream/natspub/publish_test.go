package natspub

import "testing"

// TestKind: a JSON line's type becomes the subject's last token.
func TestKind(t *testing.T) {
	for line, want := range map[string]string{
		`{"type": "printf", "data": "x"}`:                    "printf",
		`{"type": "attached_probes", "data": {"probes": 1}}`: "attached_probes",
		`{"type": "a.b", "data": 1}`:                         "a_b",
		`{"type": "unterminated`:                             "other",
		`[1, 2]`:                                             "other",
	} {
		if got := kind([]byte(line)); got != want {
			t.Errorf("kind(%s) = %q, want %q", line, got, want)
		}
	}
}
