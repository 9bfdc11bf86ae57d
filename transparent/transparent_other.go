//go:build !linux

package transparent

import (
	"net"
	"net/netip"
	"syscall"
	"time"
)

// OriginalDst returns ErrUnsupported: only Linux redirects connections.
func OriginalDst(net.Conn) (netip.AddrPort, error) { return netip.AddrPort{}, ErrUnsupported }

// MarkedDialer returns a dialer whose every connection fails with
// ErrUnsupported: only Linux marks sockets.
func MarkedDialer(_ uint32, timeout time.Duration) *net.Dialer {
	return &net.Dialer{Timeout: timeout, Control: func(string, string, syscall.RawConn) error { return ErrUnsupported }}
}
