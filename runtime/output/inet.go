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

// MacaddrText formats a MAC address, macaddr()'s six bytes, as bpftrace
// prints one: upper-case hex bytes joined by colons, 00:1C:42:B5:20:09.
func MacaddrText(b []byte) string {
	const digits = "0123456789ABCDEF"
	out := make([]byte, 0, 3*len(b))
	for i, c := range b {
		if i > 0 {
			out = append(out, ':')
		}
		out = append(out, digits[c>>4], digits[c&0xf])
	}
	return string(out)
}
