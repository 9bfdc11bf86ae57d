// Package origin names the origin a request goes to (scheme, host and port)
// in one canonical spelling. It is the only place that normalises hosts, so
// the robots.txt cache, pacing, logs and the egress guard can never disagree
// about whether two spellings are the same host: letter case, a trailing
// dot, IPv6 brackets, IDNs in Unicode or punycode, numeric IPv4 shorthands
// and an explicit default port all reduce to one Origin.
//
// It must not resolve names or do any other I/O.
package origin

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"strconv"
	"strings"

	"golang.org/x/net/idna"
)

// Origin is a canonical scheme + host + port. It is comparable, so it serves
// directly as a map or cache key. The zero Origin is invalid.
type Origin struct {
	// Scheme is "http" or "https".
	Scheme string
	// Host is lower-case ASCII (IDNs in punycode) without a trailing dot, or
	// an IP address in its canonical text form, IPv6 without brackets.
	Host string
	// Port is always set: 80 or 443 when the URL named none.
	Port uint16
}

// ErrInvalid is wrapped by every error of this package.
var ErrInvalid = errors.New("invalid origin")

// Parse returns the origin of an absolute http or https URL.
func Parse(rawURL string) (Origin, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return Origin{}, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return FromURL(u)
}

// FromURL returns the origin of an absolute http or https URL.
func FromURL(u *url.URL) (Origin, error) {
	if u.Opaque != "" {
		return Origin{}, fmt.Errorf("%w: %q is not a hierarchical URL", ErrInvalid, u.String())
	}
	return New(u.Scheme, u.Host)
}

// New returns the origin for a scheme and an authority's host[:port] (as in
// a URL or a CONNECT request; brackets around IPv6 literals).
func New(scheme, hostport string) (Origin, error) {
	scheme = strings.ToLower(scheme)
	var defaultPort uint16
	switch scheme {
	case "http":
		defaultPort = 80
	case "https":
		defaultPort = 443
	default:
		return Origin{}, fmt.Errorf("%w: scheme %q is not http or https", ErrInvalid, scheme)
	}
	host, portText, err := splitHostPort(hostport)
	if err != nil {
		return Origin{}, err
	}
	port := defaultPort
	if portText != "" {
		p, err := strconv.ParseUint(portText, 10, 16)
		if err != nil || p == 0 {
			return Origin{}, fmt.Errorf("%w: port %q", ErrInvalid, portText)
		}
		port = uint16(p)
	}
	host, err = CanonicalHost(host)
	if err != nil {
		return Origin{}, err
	}
	return Origin{Scheme: scheme, Host: host, Port: port}, nil
}

// splitHostPort splits host[:port], accepting "[v6]:port", "[v6]" and a
// bare "host:" (empty port, as URLs allow).
func splitHostPort(hp string) (host, port string, err error) {
	if strings.HasPrefix(hp, "[") {
		end := strings.IndexByte(hp, ']')
		if end < 0 {
			return "", "", fmt.Errorf("%w: unclosed '[' in %q", ErrInvalid, hp)
		}
		host, rest := hp[1:end], hp[end+1:]
		if rest != "" && !strings.HasPrefix(rest, ":") {
			return "", "", fmt.Errorf("%w: junk after ']' in %q", ErrInvalid, hp)
		}
		if _, err := netip.ParseAddr(host); err != nil || !strings.Contains(host, ":") {
			return "", "", fmt.Errorf("%w: %q is not an IPv6 address", ErrInvalid, host)
		}
		return host, strings.TrimPrefix(rest, ":"), nil
	}
	if i := strings.LastIndexByte(hp, ':'); i >= 0 {
		if strings.Contains(hp[:i], ":") {
			return "", "", fmt.Errorf("%w: IPv6 address %q needs brackets", ErrInvalid, hp)
		}
		return hp[:i], hp[i+1:], nil
	}
	return hp, "", nil
}

// lookupProfile maps Unicode hosts to punycode as browsers do (UTS #46,
// non-transitional) but, like them, accepts '_' and "--" in labels, which
// real hosts use (e.g. "r3---sn-abc.example").
var lookupProfile = idna.New(
	idna.MapForLookup(),
	idna.Transitional(false),
	idna.StrictDomainName(false),
	idna.CheckHyphens(false),
	idna.BidiRule(),
)

// CanonicalHost returns the canonical spelling of a host without port or
// brackets: an IP address in canonical form (numeric IPv4 shorthands such as
// "127.1" or "0x7f000001" resolved as browsers and libc do), or a lower-case
// ASCII domain name without a trailing dot.
func CanonicalHost(host string) (string, error) {
	if host == "" {
		return "", fmt.Errorf("%w: empty host", ErrInvalid)
	}
	if strings.Contains(host, ":") {
		a, err := netip.ParseAddr(host)
		if err != nil || a.Zone() != "" {
			return "", fmt.Errorf("%w: host %q", ErrInvalid, host)
		}
		return a.String(), nil
	}
	name := strings.TrimSuffix(host, ".")
	if !isASCII(name) {
		ascii, err := lookupProfile.ToASCII(name)
		if err != nil {
			return "", fmt.Errorf("%w: host %q: %v", ErrInvalid, host, err)
		}
		name = strings.TrimSuffix(ascii, ".")
	}
	name = strings.ToLower(name)
	if ip, ok, err := parseIPv4(name); ok || err != nil {
		if err != nil {
			return "", fmt.Errorf("%w: host %q: %v", ErrInvalid, host, err)
		}
		return ip.String(), nil
	}
	if err := checkDomain(name); err != nil {
		return "", fmt.Errorf("%w: host %q: %v", ErrInvalid, host, err)
	}
	return name, nil
}

func isASCII(s string) bool {
	for i := range len(s) {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// checkDomain accepts what DNS names and URL hosts use in practice: labels
// of letters, digits, '-' and '_', none empty, at most 63 octets, 253 in all.
func checkDomain(name string) error {
	if len(name) > 253 {
		return errors.New("longer than 253 octets")
	}
	for label := range strings.SplitSeq(name, ".") {
		if label == "" || len(label) > 63 {
			return fmt.Errorf("bad label %q", label)
		}
		for i := range len(label) {
			c := label[i]
			if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
				return fmt.Errorf("character %q not allowed", c)
			}
		}
	}
	return nil
}

// String returns the origin as a URL prefix: "https://example.com",
// "http://[::1]:8080"; the default port is omitted.
func (o Origin) String() string { return o.URL("") }

// URL returns the origin followed by target ("/path?query", or ""), built
// in one allocation: it runs for every request.
func (o Origin) URL(target string) string {
	var buf [128]byte
	return string(append(o.AppendTo(buf[:0]), target...))
}

// AppendTo appends the origin as String spells it to b.
func (o Origin) AppendTo(b []byte) []byte {
	b = o.appendHost(append(append(b, o.Scheme...), "://"...))
	if !o.defaultPort() {
		b = strconv.AppendUint(append(b, ':'), uint64(o.Port), 10)
	}
	return b
}

// HostPort returns "host:port" for dialing, IPv6 in brackets.
func (o Origin) HostPort() string {
	var buf [64]byte
	return string(strconv.AppendUint(append(o.appendHost(buf[:0]), ':'), uint64(o.Port), 10))
}

// RobotsURL returns the URL of the origin's robots.txt.
func (o Origin) RobotsURL() string { return o.URL("/robots.txt") }

// appendHost appends the host as a URL spells it, IPv6 in brackets.
func (o Origin) appendHost(b []byte) []byte {
	if strings.Contains(o.Host, ":") {
		return append(append(append(b, '['), o.Host...), ']')
	}
	return append(b, o.Host...)
}

func (o Origin) defaultPort() bool {
	return o.Scheme == "http" && o.Port == 80 || o.Scheme == "https" && o.Port == 443
}
