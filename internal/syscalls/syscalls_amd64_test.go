package syscalls

import "testing"

// TestName checks x86-64's numbers.
func TestName(t *testing.T) {
	for _, tc := range []struct {
		n    int64
		want string
		ok   bool
	}{
		{0, "read", true},
		{59, "execve", true},
		{257, "openat", true},
		{400, "", false}, // between the table's two runs
		{-1, "", false},
		{1 << 40, "", false},
	} {
		if got, ok := Name(tc.n); got != tc.want || ok != tc.ok {
			t.Errorf("Name(%d) = %q, %v; want %q, %v", tc.n, got, ok, tc.want, tc.ok)
		}
	}
}
