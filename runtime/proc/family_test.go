package proc

import "testing"

// TestFamilyDue checks the polling's back-off: every poll looks until
// familyQuiet polls in a row found no new descendant, then one in
// familySlow does, and a new descendant makes every poll look again.
func TestFamilyDue(t *testing.T) {
	for _, tc := range []struct {
		name string
		// newAt are the polls (from 1) that find a new descendant.
		newAt map[int]bool
		polls int
		want  int
	}{
		{"quiet from the start", nil, familyQuiet, familyQuiet},
		{"slow once quiet", nil, familyQuiet + 10*familySlow, familyQuiet + 10},
		{"a new descendant wakes it", map[int]bool{familyQuiet + familySlow: true}, familyQuiet + familySlow + familyQuiet, familyQuiet + 1 + familyQuiet},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := NewFamily(0)
			due := 0
			for poll := 1; poll <= tc.polls; poll++ {
				if !f.Due() {
					continue
				}
				due++
				if tc.newAt[poll] {
					f.seen[poll] = true
					f.quiet = 0
				}
			}
			if due != tc.want {
				t.Errorf("%d of %d polls due, want %d", due, tc.polls, tc.want)
			}
		})
	}
}
