package origin

import (
	"errors"
	"net/netip"
	"strconv"
	"strings"
)

// parseIPv4 implements the WHATWG URL standard's IPv4 host parser, which is
// what browsers, curl and libc's inet_aton accept: one to four parts, each
// decimal, octal (leading 0) or hex (0x), the last filling the remaining
// bytes ("127.1", "0x7f.1", "2130706433" are all 127.0.0.1). ok is false
// when the host does not end in a number and so is a domain name; a host
// that ends in a number but is no valid address is an error, never a name.
func parseIPv4(host string) (addr netip.Addr, ok bool, err error) {
	// Split by hand: this runs for every host name, numeric or not.
	if _, numeric := ipv4Number(host[strings.LastIndexByte(host, '.')+1:]); !numeric {
		return netip.Addr{}, false, nil
	}
	nparts := strings.Count(host, ".") + 1
	if nparts > 4 {
		return netip.Addr{}, true, errors.New("more than four parts in a numeric host")
	}
	var v uint64
	rest := host
	for i := range nparts {
		var p string
		p, rest, _ = strings.Cut(rest, ".")
		n, numeric := ipv4Number(p)
		if !numeric {
			return netip.Addr{}, true, errors.New("non-numeric part in a numeric host")
		}
		last := i == nparts-1
		if !last {
			if n > 255 {
				return netip.Addr{}, true, errors.New("part over 255 in a numeric host")
			}
			v = v<<8 | n
			continue
		}
		fill := uint(5 - nparts) // bytes the last part fills
		if n >= 1<<(8*fill) {
			return netip.Addr{}, true, errors.New("numeric host out of range")
		}
		v = v<<(8*fill) | n
	}
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), true, nil
}

// ipv4Number parses one part: "0x"-prefixed hex (possibly empty digits, as
// the standard says), leading-zero octal, or decimal.
func ipv4Number(s string) (uint64, bool) {
	if s == "" {
		return 0, false
	}
	base := 10
	switch {
	case len(s) >= 2 && (s[:2] == "0x" || s[:2] == "0X"):
		s, base = s[2:], 16
		if s == "" {
			return 0, true
		}
	case len(s) >= 2 && s[0] == '0':
		s, base = s[1:], 8
	}
	if !digitsOf(s, base) {
		return 0, false // a label of a name: no ParseUint error to allocate on every request
	}
	n, err := strconv.ParseUint(s, base, 64)
	if err != nil {
		// A too-large number is still a number: the host is numeric and out
		// of range rather than a domain name.
		var ne *strconv.NumError
		if errors.As(err, &ne) && ne.Err == strconv.ErrRange {
			return 1 << 40, true
		}
		return 0, false
	}
	return n, true
}

// digitsOf reports whether s is all digits of base (8, 10 or 16).
func digitsOf(s string, base int) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '7':
		case (c == '8' || c == '9') && base >= 10:
		case base == 16 && (c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'):
		default:
			return false
		}
	}
	return true
}
