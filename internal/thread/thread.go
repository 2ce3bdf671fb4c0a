// Package thread runs a function on an operating-system thread of its own
// whose rights have been lowered first (file-system rights, capabilities,
// a Landlock ruleset), so that no other code ever runs with the lowered
// rights: the thread is thrown away afterwards.
package thread

import "runtime"

// Restricted runs restrict and then fn on a new thread locked to a
// goroutine of their own, and returns the first error. The goroutine ends
// locked to the thread, so Go ends the thread with it. fn must do its work
// on that goroutine.
func Restricted(restrict, fn func() error) error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		// No UnlockOSThread: the thread ends with this goroutine.
		if err := restrict(); err != nil {
			done <- err
			return
		}
		done <- fn()
	}()
	return <-done
}
