package certs

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
)

// ErrInvalidHost is wrapped by the errors for hosts no certificate can be
// minted for (empty, too long, or characters outside the DNS alphabet).
var ErrInvalidHost = errors.New("certs: invalid host")

// DNS length limits (RFC 1035 §2.3.4, presentation form without the root dot).
const (
	maxNameLen  = 253
	maxLabelLen = 63
)

// normalizeHost returns the canonical form of a host, which is the cache key
// and the certificate's subject: an IP address (brackets and zone dropped)
// in netip's canonical text, or a DNS name in lower case without a trailing
// dot. Names must be ASCII (IDNs in punycode) made of letters, digits, '-'
// and '_'. It does not allocate for hosts already in canonical form.
func normalizeHost(host string) (string, error) {
	h := host
	if len(h) >= 2 && h[0] == '[' && h[len(h)-1] == ']' {
		h = h[1 : len(h)-1]
	}
	if looksLikeIP(h) {
		if addr, err := netip.ParseAddr(h); err == nil {
			return canonicalIP(h, addr), nil
		}
	}
	h = strings.TrimSuffix(strings.ToLower(h), ".")
	if err := checkDNSName(h); err != nil {
		return "", fmt.Errorf("%w %q: %w", ErrInvalidHost, host, err)
	}
	return h, nil
}

// canonicalIP returns addr's canonical text without its zone, reusing text
// when it is already that.
func canonicalIP(text string, addr netip.Addr) string {
	addr = addr.WithZone("")
	var buf [64]byte
	if string(addr.AppendTo(buf[:0])) == text {
		return text
	}
	return addr.String()
}

// looksLikeIP reports whether h may be an IP address: it has a colon, or
// only digits and dots. It spares names netip.ParseAddr's error, which
// allocates.
func looksLikeIP(h string) bool {
	if strings.IndexByte(h, ':') >= 0 {
		return true
	}
	for i := 0; i < len(h); i++ {
		if (h[i] < '0' || h[i] > '9') && h[i] != '.' {
			return false
		}
	}
	return h != ""
}

// checkDNSName reports why name, lower-cased, is not a usable DNS name.
func checkDNSName(name string) error {
	if name == "" {
		return errors.New("empty")
	}
	if len(name) > maxNameLen {
		return fmt.Errorf("longer than %d characters", maxNameLen)
	}
	for {
		label, rest, more := strings.Cut(name, ".")
		if err := checkLabel(label); err != nil {
			return err
		}
		if !more {
			return nil
		}
		name = rest
	}
}

// checkLabel reports why one dot-separated label of a name is not usable.
func checkLabel(label string) error {
	if label == "" {
		return errors.New("empty label")
	}
	if len(label) > maxLabelLen {
		return fmt.Errorf("label longer than %d characters", maxLabelLen)
	}
	for i := 0; i < len(label); i++ {
		c := label[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return fmt.Errorf("character %q not allowed (internationalized names must be in punycode)", c)
		}
	}
	return nil
}

// hostOnly strips a port from an authority ("example.com:443",
// "[::1]:443"); anything without a port is returned unchanged.
func hostOnly(authority string) string {
	if h, _, err := net.SplitHostPort(authority); err == nil {
		return h
	}
	return authority
}
