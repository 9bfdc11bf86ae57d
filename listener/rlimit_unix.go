//go:build unix

package listener

import "syscall"

// DescriptorLimit returns the number of descriptors the process may open
// (RLIMIT_NOFILE's soft limit, which the Go runtime raises to the hard
// limit at start); 0 when it cannot be read.
func DescriptorLimit() uint64 {
	var r syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r) != nil {
		return 0
	}
	return uint64(r.Cur)
}
