// Package signals owns gotrace's numbering of Linux signals: the range a
// script's signal() may send and signal_name() describes, the first
// real-time signal, and the number a signal's name stands for. The
// checker, the code generator and the output formatter all read it here,
// so that the bound they apply is one number.
package signals

import (
	"strings"

	"golang.org/x/sys/unix"
)

// Max is the largest signal number (SIGRTMAX): the last one signal()
// sends, past which signal_name() prints "N/A".
const Max = 64

// RTMin is the C library's first real-time signal: glibc keeps the
// kernel's 32 and 33 for itself, so SIGRTMIN is 34.
const RTMin = 34

// Number returns the number of the signal called name, written with or
// without its "SIG" prefix ("SIGUSR1" or "USR1"), or 0 when no signal has
// that name.
func Number(name string) int {
	if !strings.HasPrefix(name, "SIG") {
		name = "SIG" + name
	}
	return int(unix.SignalNum(name))
}
