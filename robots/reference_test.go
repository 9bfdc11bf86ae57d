package robots

import (
	"strings"
)

// This file holds a deliberately naive second implementation of Google's
// matcher, used as an oracle: it re-reads the whole body for every query
// with a streaming handler and matches with a position-set automaton, the
// way Google's C++ does, sharing no code with the package. Fuzz targets and
// the corpus comparison check that Parse+Decide agrees with it.

type refMatch struct{ priority, line int }

type refMatcher struct {
	agent, path                            string
	allowSpecific, allowGlobal             refMatch
	disallowSpecific, disallowGlobal       refMatch
	seenGlobal, seenSpecific, everSpecific bool
	seenSeparator                          bool
}

// refDecide returns Google's verdict and the line of the deciding match
// (0 when no rule with a non-empty pattern matched).
func refDecide(body, agent, target string) (allowed bool, line int) {
	path := target
	if i := strings.IndexByte(path, '#'); i >= 0 {
		path = path[:i]
	}
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	m := &refMatcher{agent: agent, path: path}
	for _, x := range []*refMatch{&m.allowSpecific, &m.allowGlobal, &m.disallowSpecific, &m.disallowGlobal} {
		*x = refMatch{-1, 0}
	}
	refParse(body, m)
	return m.verdict()
}

func (m *refMatcher) verdict() (bool, int) {
	pick := func(allow, disallow refMatch) (bool, int) {
		if disallow.priority > allow.priority {
			return false, disallow.line
		}
		return true, allow.line
	}
	if m.allowSpecific.priority > 0 || m.disallowSpecific.priority > 0 {
		return pick(m.allowSpecific, m.disallowSpecific)
	}
	if m.everSpecific {
		return true, 0
	}
	if m.allowGlobal.priority > 0 || m.disallowGlobal.priority > 0 {
		return pick(m.allowGlobal, m.disallowGlobal)
	}
	return true, 0
}

func refParse(body string, m *refMatcher) {
	bom := "\xEF\xBB\xBF"
	bomPos := 0
	var line []byte
	num := 0
	lastCR := false
	for i := 0; i < len(body); i++ {
		ch := body[i]
		if bomPos < 3 {
			matched := ch == bom[bomPos]
			bomPos++
			if matched {
				continue
			}
			bomPos = 3
		}
		if ch != '\n' && ch != '\r' {
			if len(line) < 2083*8-1 {
				line = append(line, ch)
			}
			continue
		}
		if !(len(line) == 0 && lastCR && ch == '\n') {
			num++
			refLine(m, num, string(line))
		}
		line = line[:0]
		lastCR = ch == '\r'
	}
	num++
	refLine(m, num, string(line))
}

func refLine(m *refMatcher, num int, line string) {
	if i := strings.IndexByte(line, 0); i >= 0 {
		line = line[:i]
	}
	if i := strings.IndexByte(line, '#'); i >= 0 {
		line = line[:i]
	}
	line = strings.Trim(line, " \t\n\v\f\r")
	sep := strings.IndexByte(line, ':')
	if sep < 0 {
		sep = strings.IndexAny(line, " \t")
		if sep < 0 {
			return
		}
		if strings.ContainsAny(strings.TrimLeft(line[sep:], " \t"), " \t") {
			return
		}
	}
	key := strings.Trim(line[:sep], " \t\n\v\f\r")
	value := strings.Trim(line[sep+1:], " \t\n\v\f\r")
	if key == "" {
		return
	}
	k := strings.ToLower(key)
	has := func(p ...string) bool {
		for _, x := range p {
			if strings.HasPrefix(k, x) {
				return true
			}
		}
		return false
	}
	switch {
	case has("user-agent", "useragent", "user agent"):
		m.userAgent(value)
	case has("allow"):
		m.rule(num, refEscape(value), true)
	case has("disallow", "dissallow", "dissalow", "disalow", "diasllow", "disallaw"):
		m.rule(num, refEscape(value), false)
	}
}

func refEscape(v string) string {
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		c := v[i]
		hex := func(x byte) bool { return strings.IndexByte("0123456789abcdefABCDEF", x) >= 0 }
		if c == '%' && i+2 < len(v) && hex(v[i+1]) && hex(v[i+2]) {
			b.WriteString("%" + strings.ToUpper(v[i+1:i+3]))
			i += 2
		} else if c >= 0x80 {
			b.WriteByte('%')
			b.WriteByte("0123456789ABCDEF"[c>>4])
			b.WriteByte("0123456789ABCDEF"[c&15])
		} else {
			b.WriteByte(c)
		}
	}
	return b.String()
}

func (m *refMatcher) userAgent(v string) {
	if m.seenSeparator {
		m.seenSpecific, m.seenGlobal, m.seenSeparator = false, false, false
	}
	if len(v) >= 1 && v[0] == '*' && (len(v) == 1 || strings.ContainsRune(" \t\n\v\f\r", rune(v[1]))) {
		m.seenGlobal = true
		return
	}
	end := 0
	for end < len(v) && (v[end] >= 'a' && v[end] <= 'z' || v[end] >= 'A' && v[end] <= 'Z' || v[end] == '-' || v[end] == '_') {
		end++
	}
	if strings.EqualFold(v[:end], m.agent) && isASCII(m.agent) {
		m.seenSpecific, m.everSpecific = true, true
	}
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

func (m *refMatcher) rule(num int, pattern string, allow bool) {
	if !m.seenGlobal && !m.seenSpecific {
		return
	}
	m.seenSeparator = true
	if !refMatches(m.path, pattern) {
		if allow {
			if slash := strings.LastIndexByte(pattern, '/'); slash >= 0 && strings.HasPrefix(pattern[slash:], "/index.htm") {
				m.rule(num, pattern[:slash+1]+"$", true)
			}
		}
		return
	}
	target := &m.disallowGlobal
	switch {
	case allow && m.seenSpecific:
		target = &m.allowSpecific
	case allow:
		target = &m.allowGlobal
	case m.seenSpecific:
		target = &m.disallowSpecific
	}
	if target.priority < len(pattern) {
		*target = refMatch{len(pattern), num}
	}
}

// refMatches is Google's position-set matcher: pos holds every prefix length
// of path that the pattern read so far can match.
func refMatches(path, pattern string) bool {
	pos := []int{0}
	for i := 0; i < len(pattern); i++ {
		c := pattern[i]
		if c == '$' && i == len(pattern)-1 {
			return pos[len(pos)-1] == len(path)
		}
		if c == '*' {
			first := pos[0]
			pos = pos[:0]
			for p := first; p <= len(path); p++ {
				pos = append(pos, p)
			}
			continue
		}
		next := pos[:0]
		for _, p := range pos {
			if p < len(path) && path[p] == c {
				next = append(next, p+1)
			}
		}
		pos = next
		if len(pos) == 0 {
			return false
		}
	}
	return true
}
