//go:build !unix

package listener

// DescriptorLimit returns 0: the limit is not known on this system.
func DescriptorLimit() uint64 { return 0 }
