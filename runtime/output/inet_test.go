package output

import (
	"encoding/binary"
	"syscall"
	"testing"
)

func TestInetText(t *testing.T) {
	for _, tc := range []struct {
		name   string
		family uint64
		addr   []byte
		want   string
	}{
		{"ipv4", syscall.AF_INET, []byte{10, 0, 0, 1}, "10.0.0.1"},
		{"ipv4 loopback", syscall.AF_INET, []byte{127, 0, 0, 1}, "127.0.0.1"},
		{"ipv6", syscall.AF_INET6, []byte{0x20, 0x01, 0x0d, 0xb8, 15: 1}, "2001:db8::1"},
		{"ipv6 unspecified", syscall.AF_INET6, nil, "::"},
		{"ipv4-mapped ipv6", syscall.AF_INET6, []byte{10: 0xff, 11: 0xff, 12: 192, 13: 0, 14: 2, 15: 1}, "::ffff:192.0.2.1"},
		{"unknown family", 99, []byte{1, 2, 3, 4}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := make([]byte, 24)
			binary.LittleEndian.PutUint64(b, tc.family)
			copy(b[8:], tc.addr)
			if got := InetText(b); got != tc.want {
				t.Errorf("InetText = %q, want %q", got, tc.want)
			}
		})
	}
}
