package transparent

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// ip6tSOOriginalDst is IP6T_SO_ORIGINAL_DST (linux/netfilter_ipv6/
// ip6_tables.h): SO_ORIGINAL_DST's number at the IPv6 level.
const ip6tSOOriginalDst = 80

// OriginalDst returns where the client of c, a TCP connection accepted by
// a listener that REDIRECT rules send connections to, connected: the
// address and port before the redirection, as the kernel's connection
// tracking recorded them. A connection that was not redirected returns the
// listener's own address.
func OriginalDst(c net.Conn) (netip.AddrPort, error) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return netip.AddrPort{}, fmt.Errorf("original destination: %T is not a socket", c)
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return netip.AddrPort{}, err
	}
	local, _ := netip.ParseAddrPort(c.LocalAddr().String())
	var dst netip.AddrPort
	var opErr error
	err = raw.Control(func(fd uintptr) {
		if local.Addr().Is4() || local.Addr().Is4In6() {
			dst, opErr = originalDst4(int(fd))
			return
		}
		dst, opErr = originalDst6(int(fd))
	})
	if err == nil {
		err = opErr
	}
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("original destination (SO_ORIGINAL_DST): %w", err)
	}
	return dst, nil
}

// originalDst4 reads a struct sockaddr_in (x/sys has no getsockopt for
// it; IPv6Mreq is the 16 bytes it takes).
func originalDst4(fd int) (netip.AddrPort, error) {
	m, err := unix.GetsockoptIPv6Mreq(fd, unix.SOL_IP, unix.SO_ORIGINAL_DST)
	if err != nil {
		return netip.AddrPort{}, err
	}
	b := m.Multiaddr
	port := binary.BigEndian.Uint16(b[2:4])
	return netip.AddrPortFrom(netip.AddrFrom4([4]byte(b[4:8])), port), nil
}

// originalDst6 reads a struct sockaddr_in6 (IPv6MTUInfo begins with one).
func originalDst6(fd int) (netip.AddrPort, error) {
	m, err := unix.GetsockoptIPv6MTUInfo(fd, unix.SOL_IPV6, ip6tSOOriginalDst)
	if err != nil {
		return netip.AddrPort{}, err
	}
	var raw [2]byte // the port as the kernel wrote it: network byte order
	binary.NativeEndian.PutUint16(raw[:], m.Addr.Port)
	port := binary.BigEndian.Uint16(raw[:])
	return netip.AddrPortFrom(netip.AddrFrom16(m.Addr.Addr).Unmap(), port), nil
}

// MarkedDialer returns a dialer whose connections carry the socket mark
// (SO_MARK, which needs CAP_NET_ADMIN), so that firewall rules can leave
// robotsgate's own upstream connections alone.
func MarkedDialer(mark uint32, timeout time.Duration) *net.Dialer {
	return &net.Dialer{Timeout: timeout, Control: func(_, _ string, c syscall.RawConn) error {
		var opErr error
		err := c.Control(func(fd uintptr) {
			opErr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_MARK, int(mark))
		})
		if err == nil {
			err = opErr
		}
		if err != nil {
			return fmt.Errorf("set the socket mark %#x (SO_MARK needs CAP_NET_ADMIN): %w", mark, err)
		}
		return nil
	}}
}
