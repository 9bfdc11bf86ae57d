package robots

import "bytes"

const (
	// MaxFileSize is how many bytes of a robots.txt are parsed; the rest is
	// ignored (RFC 9309 §2.5 requires at least 500 KiB).
	MaxFileSize = 500 << 10

	// maxLineLen is how many bytes of one line Google's parser keeps (its
	// line buffer holds 2083*8 bytes including the terminating NUL).
	maxLineLen = 2083*8 - 1
)

// lineScanner splits a robots.txt body into lines exactly as Google's parser
// does: LF, CR and CR LF end a line, a (partial) UTF-8 BOM at the start is
// skipped, and the text after the last line ending is a line of its own.
type lineScanner struct {
	body   []byte
	pos    int
	num    int // number of the line last returned, from 1
	lastCR bool
	done   bool
	// crOnly counts lines ended by a lone CR, for diagnostics.
	crOnly int
}

var utf8BOM = [3]byte{0xEF, 0xBB, 0xBF}

func newLineScanner(body []byte) lineScanner {
	// Google skips whatever prefix of the BOM the body starts with.
	i := 0
	for i < len(utf8BOM) && i < len(body) && body[i] == utf8BOM[i] {
		i++
	}
	return lineScanner{body: body, pos: i}
}

// next returns the next line without its line ending, or ok=false at the end.
func (s *lineScanner) next() (text []byte, ok bool) {
	for !s.done {
		rest := s.body[s.pos:]
		i := lineEnd(rest)
		if i < 0 {
			s.done = true
			s.num++
			return rest, true
		}
		ch := rest[i]
		if i == 0 && s.lastCR && ch == '\n' {
			// The LF of a CR LF pair ends no line of its own.
			s.pos++
			s.lastCR = false
			continue
		}
		s.lastCR = ch == '\r'
		if s.lastCR && (i+1 >= len(rest) || rest[i+1] != '\n') {
			s.crOnly++
		}
		s.pos += i + 1
		s.num++
		return rest[:i], true
	}
	return nil, false
}

// lineEnd returns the index of the first CR or LF in b, or -1.
func lineEnd(b []byte) int {
	lf := bytes.IndexByte(b, '\n')
	search := b
	if lf >= 0 {
		search = b[:lf]
	}
	if cr := bytes.IndexByte(search, '\r'); cr >= 0 {
		return cr
	}
	return lf
}

// lineShape records how a line was read, for diagnostics.
type lineShape uint8

const (
	shapeTruncated lineShape = 1 << iota // longer than maxLineLen
	shapeNUL                             // cut at a NUL byte
	shapeComment                         // had a '#' comment
	shapeNoColon                         // key and value separated by whitespace only
	shapeTooManyWS                       // no colon and more than two words: ignored
)

// cutLine applies Google's per-line truncation: the line buffer keeps
// maxLineLen bytes and, being a C string, ends at the first NUL.
func cutLine(text []byte) ([]byte, lineShape) {
	var shape lineShape
	if len(text) > maxLineLen {
		text = text[:maxLineLen]
		shape |= shapeTruncated
	}
	if i := bytes.IndexByte(text, 0); i >= 0 {
		text = text[:i]
		shape |= shapeNUL
	}
	return text, shape
}

// lineContent returns the part of a line Google's parser reads: the line as
// cutLine leaves it, without its '#' comment and surrounding whitespace.
func lineContent(text []byte) ([]byte, lineShape) {
	text, shape := cutLine(text)
	if i := bytes.IndexByte(text, '#'); i >= 0 {
		text = text[:i]
		shape |= shapeComment
	}
	return trimSpace(text), shape
}

// splitLine returns the key and value of one line the way Google's parser
// reads them: a '#' starts a comment, surrounding whitespace is dropped, the
// key ends at the first ':' or, when there is none, at whitespace between
// exactly two words. ok is false for lines that carry no key/value pair.
func splitLine(text []byte) (key, value []byte, shape lineShape, ok bool) {
	text, shape = lineContent(text)
	sep := bytes.IndexByte(text, ':')
	if sep < 0 {
		sep = bytes.IndexAny(text, " \t")
		if sep < 0 {
			return nil, nil, shape, false
		}
		shape |= shapeNoColon
		val := trimLeftSpaceTab(text[sep:])
		if bytes.ContainsAny(val, " \t") {
			return nil, nil, shape | shapeTooManyWS, false
		}
	}
	key = trimSpace(text[:sep])
	if len(key) == 0 {
		return nil, nil, shape, false
	}
	return key, trimSpace(text[sep+1:]), shape, true
}

// isSpace reports ASCII whitespace as absl::ascii_isspace does.
func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && isSpace(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && isSpace(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}

func trimLeftSpaceTab(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	return b
}

// keyKind is the directive a line's key names.
type keyKind uint8

const (
	keyUnknown keyKind = iota
	keyUserAgent
	keyAllow
	keyDisallow
	keySitemap
	keyCrawlDelay
	keyRequestRate
	keyHost
	keyContentUsage
	keyContentSignal
	keyVisitTime
	keyLicense
)

// classifyKey maps a key to its directive. The first four follow Google's
// parser exactly (case-insensitive prefix match, with its accepted typos);
// typo reports whether one of those typos was what matched. The extension
// keys are compared whole.
func classifyKey(key []byte) (kind keyKind, typo bool) {
	switch {
	case hasPrefixFold(key, "user-agent"):
		return keyUserAgent, false
	case hasPrefixFold(key, "useragent"), hasPrefixFold(key, "user agent"):
		return keyUserAgent, true
	case hasPrefixFold(key, "allow"):
		return keyAllow, false
	case hasPrefixFold(key, "disallow"):
		return keyDisallow, false
	case hasPrefixFold(key, "dissallow"), hasPrefixFold(key, "dissalow"),
		hasPrefixFold(key, "disalow"), hasPrefixFold(key, "diasllow"),
		hasPrefixFold(key, "disallaw"):
		return keyDisallow, true
	case hasPrefixFold(key, "sitemap"), hasPrefixFold(key, "site-map"):
		return keySitemap, false
	}
	for _, e := range extensionKeys {
		if equalFold(key, e.name) {
			return e.kind, false
		}
	}
	return keyUnknown, false
}

var extensionKeys = []struct {
	name string
	kind keyKind
}{
	{"crawl-delay", keyCrawlDelay},
	{"crawldelay", keyCrawlDelay},
	{"request-rate", keyRequestRate},
	{"host", keyHost},
	{"content-usage", keyContentUsage},
	{"content-signal", keyContentSignal},
	{"visit-time", keyVisitTime},
	{"license", keyLicense},
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// hasPrefixFold reports whether b starts with the lower-case ASCII prefix,
// ignoring ASCII case.
func hasPrefixFold(b []byte, prefix string) bool {
	return len(b) >= len(prefix) && equalFold(b[:len(prefix)], prefix)
}

// equalFold compares b with the lower-case ASCII string s, ignoring ASCII case.
func equalFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range len(b) {
		if lowerASCII(b[i]) != s[i] {
			return false
		}
	}
	return true
}

const upperHex = "0123456789ABCDEF"

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// appendEscaped appends v to dst the way Google escapes patterns: octets
// with the high bit set become %XX and existing %xx escapes are upper-cased.
func appendEscaped(dst, v []byte) []byte {
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case c == '%' && i+2 < len(v) && isHex(v[i+1]) && isHex(v[i+2]):
			dst = append(dst, '%', upperASCII(v[i+1]), upperASCII(v[i+2]))
			i += 2
		case c >= 0x80:
			dst = append(dst, '%', upperHex[c>>4], upperHex[c&0xF])
		default:
			dst = append(dst, c)
		}
	}
	return dst
}

func upperASCII(c byte) byte {
	if 'a' <= c && c <= 'z' {
		return c - ('a' - 'A')
	}
	return c
}
