package output

import (
	"errors"
	"strconv"
	"syscall"
	"unicode"

	"github.com/gotrace/gotrace/internal/signals"
	"github.com/gotrace/gotrace/internal/syscalls"
)

// ErrnoText is the C library's message for errno n, which strerror()
// prints: Go's table holds the same text in lower case, without the
// messages of 0 and of errnos glibc names that Go does not.
func ErrnoText(n int64) string {
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
	return capitalized(text)
}

// Strerror is the C library's message for the errno err carries, as
// bpftrace prints it ("No such file or directory"), or err's own text when
// it carries none.
func Strerror(err error) string {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return ErrnoText(int64(errno))
	}
	return err.Error()
}

// SignalText is signal_name()'s text for signal n: the C library's
// description (strsignal), as Go's table holds it in lower case, and
// bpftrace's "N/A" past the real-time signals.
func SignalText(n int64) string {
	switch {
	case n < 0 || n > signals.Max:
		return "N/A"
	case n >= signals.RTMin:
		return "Real-time signal " + strconv.FormatInt(n-signals.RTMin, 10)
	}
	text := syscall.Signal(n).String()
	if text == "signal "+strconv.FormatInt(n, 10) {
		return "Unknown signal " + strconv.FormatInt(n, 10)
	}
	return capitalized(text)
}

// capitalized is text with its first letter in upper case.
func capitalized(text string) string {
	r := []rune(text)
	r[0] = unicode.ToUpper(r[0])
	return string(r)
}

// SyscallText is syscall_name()'s text for system call n: its name, or
// "unknown" for a number the x86-64 table does not have.
func SyscallText(n int64) string {
	if name, ok := syscalls.Name(n); ok {
		return name
	}
	return "unknown"
}
