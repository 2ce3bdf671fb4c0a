package signals

import "testing"

// TestNumber checks names with and without their prefix, and names of no
// signal.
func TestNumber(t *testing.T) {
	for _, tc := range []struct {
		name string
		want int
	}{
		{"SIGUSR1", 10},
		{"USR1", 10},
		{"SIGKILL", 9},
		{"TERM", 15},
		{"SIGNOPE", 0},
		{"", 0},
		{"usr1", 0},
	} {
		if got := Number(tc.name); got != tc.want {
			t.Errorf("Number(%q) = %d, want %d", tc.name, got, tc.want)
		}
	}
}
