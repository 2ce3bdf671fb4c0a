package syscalls

import "testing"

// TestName checks arm64's numbers, asm-generic's: GOARCH=arm64 go test
// -exec qemu-aarch64 runs it on x86-64.
func TestName(t *testing.T) {
	for _, tc := range []struct {
		n    int64
		want string
		ok   bool
	}{
		{63, "read", true},
		{56, "openat", true},
		{221, "execve", true},
		{25, "fcntl", true}, // through __NR3264_fcntl
		{244, "", false},    // arch_specific_syscall: a base, no call
		{-1, "", false},
		{1 << 40, "", false},
	} {
		if got, ok := Name(tc.n); got != tc.want || ok != tc.ok {
			t.Errorf("Name(%d) = %q, %v; want %q, %v", tc.n, got, ok, tc.want, tc.ok)
		}
	}
}
