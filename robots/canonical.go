package robots

import "strings"

// CanonicalTarget returns the canonical form of a request-target's path, the
// form origin servers act on once they have decoded and normalised it:
// %XX escapes of unreserved characters (RFC 3986 §2.3) decoded, other escapes
// upper-cased, non-ASCII octets %-encoded, repeated slashes collapsed and
// dot segments removed (RFC 3986 §5.2.4); a '%' that starts no escape becomes
// %25. The query and fragment are kept as
// they are. It returns target itself, without allocating, when it is
// already canonical.
func CanonicalTarget(target string) string {
	return normalTarget(target, false)
}

// DecodedTarget returns the path of a request-target decoded as far as an
// origin server may decode it before acting on it: CanonicalTarget, with
// every %XX escape of an ASCII octet decoded too, reserved characters
// included ("/%40admin" is "/@admin", "/a%2Bb" is "/a+b"), except %2F,
// %25, %3F and %23: decoded, they would change where the path ends or
// where its segments are ("/a%2Fb" is not "/a/b"). It returns target
// itself, without allocating, when it has no escape and is canonical.
func DecodedTarget(target string) string {
	return normalTarget(target, true)
}

func normalTarget(target string, decodeAll bool) string {
	path, rest := target, ""
	if i := strings.IndexAny(target, "?#"); i >= 0 {
		path, rest = target[:i], target[i:]
	}
	if isCanonicalPath(path) {
		return target
	}
	return canonicalPath(path, decodeAll) + rest
}

// isCanonicalPath reports whether canonicalPath would leave p unchanged,
// cheaply: no escapes, no non-ASCII octets, no "//" and no dot segment.
func isCanonicalPath(p string) bool {
	for i := 0; i < len(p); i++ {
		switch c := p[i]; {
		case c == '%' || c >= 0x80:
			return false
		case c == '/' && i+1 < len(p) && p[i+1] == '/':
			return false
		case c == '.' && (i == 0 || p[i-1] == '/'):
			// "." or ".." as a whole segment
			j := i + 1
			if j < len(p) && p[j] == '.' {
				j++
			}
			if j == len(p) || p[j] == '/' {
				return false
			}
		}
	}
	return true
}

func canonicalPath(p string, decodeAll bool) string {
	b := make([]byte, 0, len(p)+8)
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c == '%' && i+2 < len(p) && isHex(p[i+1]) && isHex(p[i+2]):
			v := unhex(p[i+1])<<4 | unhex(p[i+2])
			if isUnreserved(v) || decodeAll && decodable(v) {
				b = append(b, v)
			} else {
				b = append(b, '%', upperASCII(p[i+1]), upperASCII(p[i+2]))
			}
			i += 2
		case c >= 0x80 || c == '%':
			// A '%' that starts no escape is a literal '%': written %25 so
			// that decoding cannot make a new escape of it ("%0%61").
			b = append(b, '%', upperHex[c>>4], upperHex[c&0xF])
		case c == '/' && len(b) > 0 && b[len(b)-1] == '/':
			// collapse "//"
		default:
			b = append(b, c)
		}
	}
	return removeDotSegments(string(b))
}

func unhex(c byte) byte {
	switch {
	case '0' <= c && c <= '9':
		return c - '0'
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}

// decodable reports whether DecodedTarget decodes the escape of c: any
// ASCII octet but those that would change the path's structure.
func decodable(c byte) bool {
	return c < 0x80 && c != '/' && c != '%' && c != '?' && c != '#'
}

func isUnreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '-' || c == '.' || c == '_' || c == '~'
}

// removeDotSegments is RFC 3986 §5.2.4 on a path without "//".
func removeDotSegments(p string) string {
	if !strings.Contains(p, ".") {
		return p
	}
	var out []string
	segs := strings.Split(p, "/")
	for i, s := range segs {
		last := i == len(segs)-1
		switch s {
		case ".":
			if last {
				out = append(out, "")
			}
		case "..":
			if len(out) > 1 {
				out = out[:len(out)-1]
			}
			if last {
				out = append(out, "")
			}
		default:
			out = append(out, s)
		}
	}
	if len(out) == 1 && out[0] == "" && strings.HasPrefix(p, "/") {
		return "/"
	}
	return strings.Join(out, "/")
}

// buildNormal returns f with every rule pattern in normal form (canonical,
// or with decodeAll decoded: see CanonicalTarget, DecodedTarget), for
// judging targets in that form, or nil when no pattern changes, which is
// the common case and costs nothing.
func buildNormal(f *File, decodeAll bool) *File {
	changed := false
	for i := range f.rules {
		if p := f.rulePattern(&f.rules[i]); normalPattern(p, decodeAll) != p {
			changed = true
			break
		}
	}
	if !changed {
		return nil
	}
	b := builder{runs: f.runs}
	for i := range f.rules {
		r := &f.rules[i]
		off := len(b.arena)
		b.arena = append(b.arena, normalPattern(f.rulePattern(r), decodeAll)...)
		b.addRule(r.line(), r.flags()&ruleAllow != 0, off, r.flags()&ruleImplied != 0)
	}
	c := *f
	c.arena = string(b.arena)
	c.rules = b.rules
	for _, r := range c.runs {
		sortRules(c.rules[r.rules.start:r.rules.end])
	}
	return &c
}

// normalPattern is the normal form of a pattern that starts with '/' (the
// path part; the query is kept). Other patterns match no path in Google's
// matcher and are left as they are: canonicalising "." or "*/.." could
// turn them into patterns that match.
func normalPattern(p string, decodeAll bool) string {
	if !strings.HasPrefix(p, "/") {
		return p
	}
	if c := normalTarget(p, decodeAll); c != "" {
		return c
	}
	return p
}

// CanonicalPattern is a path pattern of a file that borrows robots.txt's
// matching (a tdmrep.json location, an RSL <content url>) in canonical
// form, a '$' other than a final one written %24, so that it matches what
// MatchTarget makes of a request-target.
func CanonicalPattern(p string) string {
	anchored := strings.HasSuffix(p, "$")
	if anchored {
		p = p[:len(p)-1]
	}
	p = strings.ReplaceAll(CanonicalTarget(p), "$", "%24")
	if anchored {
		p += "$"
	}
	return p
}

// MatchTarget is a request-target as CanonicalPattern patterns match it:
// without its fragment, with a leading '/', canonical, with '$' and '*'
// written %24 and %2A, their bare forms being special in patterns (a
// pattern names them so: "/path/foo-%24" matches "/path/foo-$").
func MatchTarget(target string) string {
	target, _, _ = strings.Cut(target, "#")
	if target == "" || target[0] != '/' {
		target = "/" + target
	}
	target = CanonicalTarget(target)
	if strings.ContainsAny(target, "$*") {
		target = strings.NewReplacer("$", "%24", "*", "%2A").Replace(target)
	}
	return target
}
