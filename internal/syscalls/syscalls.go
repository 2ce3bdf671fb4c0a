// Package syscalls names the x86-64 Linux system calls by number, for
// syscall_name().
package syscalls

//go:generate ./gen.sh

// Name is the name of x86-64 system call n, and whether there is one.
func Name(n int64) (string, bool) {
	if n < 0 || n >= int64(len(x86_64)) || x86_64[n] == "" {
		return "", false
	}
	return x86_64[n], true
}
