// Package syscalls names the Linux system calls by number, for
// syscall_name(), in the table of the architecture gotrace is built for
// (table_amd64.go, table_arm64.go: x86-64's numbers and asm-generic's
// differ).
package syscalls

//go:generate ./gen.sh

// Name is the name of system call n of the architecture gotrace is built
// for, and whether there is one.
func Name(n int64) (string, bool) {
	if n < 0 || n >= int64(len(table)) || table[n] == "" {
		return "", false
	}
	return table[n], true
}
