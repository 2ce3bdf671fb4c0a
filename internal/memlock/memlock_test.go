package memlock

import (
	"testing"

	"golang.org/x/sys/unix"
)

// TestRaise lifts the soft limit at least to the hard one it found (to
// infinity where the process may raise the hard limit too).
func TestRaise(t *testing.T) {
	var before, after unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_MEMLOCK, &before); err != nil {
		t.Fatal(err)
	}
	Raise()
	if err := unix.Getrlimit(unix.RLIMIT_MEMLOCK, &after); err != nil {
		t.Fatal(err)
	}
	if after.Cur != after.Max || after.Max < before.Max {
		t.Errorf("limit %d (hard %d) after Raise, from %d (hard %d)", after.Cur, after.Max, before.Cur, before.Max)
	}
}
