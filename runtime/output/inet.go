package output

import (
	"encoding/binary"
	"net/netip"
	"syscall"
)

// InetText formats ntop()'s value as inet_ntop does: layout.Inet's bytes,
// a little-endian u64 address family (AF_INET or AF_INET6), then 16 bytes
// of address of which an IPv4 address uses the first 4. Another family
// prints as nothing, as bpftrace prints it.
func InetText(b []byte) string {
	switch binary.LittleEndian.Uint64(b) {
	case syscall.AF_INET:
		return netip.AddrFrom4([4]byte(b[8:12])).String()
	case syscall.AF_INET6:
		return netip.AddrFrom16([16]byte(b[8:24])).String()
	}
	return ""
}
