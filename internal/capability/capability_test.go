package capability_test

import (
	"strings"
	"testing"

	"github.com/gotrace/gotrace/internal/capability"
	"github.com/gotrace/gotrace/internal/testenv"
)

// TestTable tries every feature as root: each row is decided (yes or no,
// never unknown), says what trying it showed and what needs it, and Of
// gives the same row as All, in Features' order.
func TestTable(t *testing.T) {
	testenv.RequireRoot(t)
	rows := capability.All()
	features := capability.Features()
	if len(rows) != len(features) {
		t.Fatalf("%d rows for %d features", len(rows), len(features))
	}
	for i, r := range rows {
		if r.Feature != features[i] {
			t.Errorf("row %d is %q, want %q", i, r.Feature, features[i])
		}
		if r.Unknown || r.Evidence == "" || r.Uses == "" {
			t.Errorf("%s: unknown %v, evidence %q, uses %q; want it decided, with evidence and uses", r.Feature, r.Unknown, r.Evidence, r.Uses)
		}
		if got := capability.Of(r.Feature); got != r {
			t.Errorf("Of(%q) = %+v, All has %+v", r.Feature, got, r)
		}
		if s := r.String(); !strings.HasPrefix(s, string(r.Feature)+": "+r.Answer()+" (") {
			t.Errorf("row printed as %q", s)
		}
	}
}

// TestRowAnswer checks the three answers a row prints.
func TestRowAnswer(t *testing.T) {
	for _, tc := range []struct {
		row  capability.Row
		want string
	}{
		{capability.Row{Available: true}, "yes"},
		{capability.Row{}, "no"},
		{capability.Row{Unknown: true}, "unknown"},
	} {
		if got := tc.row.Answer(); got != tc.want {
			t.Errorf("%+v: answer %q, want %q", tc.row, got, tc.want)
		}
	}
}
