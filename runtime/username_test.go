package runtime

import "testing"

// A uid with no user prints as an empty name, as in bpftrace.
func TestUserName(t *testing.T) {
	var tr tracer
	for _, tc := range []struct {
		uid  uint64
		want string
	}{
		{0, "root"},
		{65534, "nobody"},
		{4000000000, ""},
		{0, "root"},
	} {
		if got := tr.userName(tc.uid); got != tc.want {
			t.Errorf("userName(%d) = %q, want %q", tc.uid, got, tc.want)
		}
	}
}
