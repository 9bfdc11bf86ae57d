// Package transparent holds what robotsgate asks the kernel about
// connections it did not choose to receive: the original destination of a
// connection that iptables or nftables REDIRECT sent to a transparent
// listener (SO_ORIGINAL_DST, and its IPv6 form), and the socket mark that
// lets the firewall tell robotsgate's own upstream connections from the
// clients' (SO_MARK). Both are Linux only; elsewhere they return
// ErrUnsupported.
package transparent

import "errors"

// ErrUnsupported is returned where the kernel has no transparent
// redirection (every system but Linux).
var ErrUnsupported = errors.New("transparent listeners and socket marks need Linux")
