package output

import "testing"

// strerror() prints glibc's messages (compared with bpftrace 0.17, and
// with Python's os.strerror for errnos 0-139).
func TestErrnoText(t *testing.T) {
	for _, tc := range []struct {
		n    int64
		want string
	}{
		{0, "Success"},
		{1, "Operation not permitted"},
		{2, "No such file or directory"},
		{11, "Resource temporarily unavailable"},
		{41, "Unknown error 41"},
		{95, "Operation not supported"},
		{133, "Memory page has hardware error"},
		{134, "Unknown error 134"},
		{200, "Unknown error 200"},
		{-2, "Unknown error -2"},
	} {
		if got := ErrnoText(tc.n); got != tc.want {
			t.Errorf("ErrnoText(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
}
