package runtime

import (
	"context"
	"testing"

	"github.com/gotrace/gotrace/internal/testenv"
)

// delete() of a hist or lhist key removes all its buckets and nothing of
// the other keys. bpftrace 0.17 removes one bucket at most, so the key
// stays printed with the rest: gotrace does what the call says.
func TestRunDeleteHistKey(t *testing.T) {
	testenv.RequireRoot(t)
	for _, tc := range []struct {
		name, body, want string
	}{
		{"hist", `@h[1] = hist(1); @h[1] = hist(100); @h[2] = hist(5); delete(@h[1]);`,
			"@h[2]: \n[4, 8)                 1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n\n"},
		{"lhist, under and over buckets", `@l[1] = lhist(-5, 0, 1000, 1); @l[1] = lhist(3, 0, 1000, 1); @l[1] = lhist(5000, 0, 1000, 1); @l[2] = lhist(3, 0, 1000, 1); delete(@l[1]);`,
			"@l[2]: \n[3, 4)                 1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n\n"},
		{"tuple key", `@t[1, "a"] = hist(7); @t[2, "b"] = hist(8); delete(@t[1, "a"]);`,
			"@t[2, b]: \n[8, 16)                1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n\n"},
		{"every key", `@h[1] = hist(1); delete(@h[1]); @c = count();`, "@c: 1\n\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, _, err := runScript(t, context.Background(), "BEGIN { "+tc.body+" exit(); }", Options{Quiet: true})
			if err != nil {
				t.Fatal(err)
			}
			if want := "\n\n" + tc.want; out != want {
				t.Errorf("output:\n%q\nwant:\n%q", out, want)
			}
		})
	}
}
