package runtime

import (
	"strconv"
	"syscall"
	"unicode"
)

// errnoText is the C library's message for errno n, which strerror()
// prints: Go's table holds the same text in lower case, without the
// messages of 0 and of errnos glibc names that Go does not.
func errnoText(n int64) string {
	switch n {
	case 0:
		return "Success"
	case 133: // EHWPOISON
		return "Memory page has hardware error"
	}
	unknown := "Unknown error " + strconv.FormatInt(n, 10)
	if n < 0 || n > 4095 {
		return unknown
	}
	text := syscall.Errno(n).Error()
	if text == "errno "+strconv.FormatInt(n, 10) {
		return unknown
	}
	r := []rune(text)
	r[0] = unicode.ToUpper(r[0])
	return string(r)
}
