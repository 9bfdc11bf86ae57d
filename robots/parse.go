package robots

import (
	"bytes"
	"cmp"
	"slices"
)

// Parse parses a robots.txt body. It never fails: lines it cannot read are
// skipped, as Google's parser skips them. Only the first MaxFileSize bytes
// are read. The returned File does not refer to body.
func Parse(body []byte) *File {
	truncated := len(body) > MaxFileSize
	if truncated {
		body = body[:MaxFileSize]
	}
	b := builder{agentKeys: map[string]uint32{}}
	sc := newLineScanner(body)
	for {
		text, ok := sc.next()
		if !ok {
			break
		}
		b.line(uint32(sc.num), text)
	}
	f := b.finish()
	f.Truncated = truncated
	return f
}

// builder accumulates a File while the lines are read.
type builder struct {
	arena    []byte
	rules    []rule
	runs     []run
	members  []pendingMember
	usage    []usageRule
	sitemaps []byte // joined by '\n'
	host     []byte
	signals  []Statement
	visits   []visitRule
	licenses []LicenseLine
	// sawRule is Google's seen_separator_: an allow/disallow line was read
	// since the last user-agent line, so the next one starts a new run.
	sawRule bool
	// agentKeys maps a lower-case token to its offset in arena, so that an
	// agent named many times is stored once.
	agentKeys map[string]uint32
}

type pendingMember struct {
	global  bool
	keyOff  uint32 // lower-case token in arena
	nameOff uint32 // token as written, in arena
	n       uint32
	run     uint32
	line    uint32
}

func (b *builder) line(num uint32, text []byte) {
	key, value, _, ok := splitLine(text)
	if !ok {
		return
	}
	kind, _ := classifyKey(key)
	switch kind {
	case keyUserAgent:
		b.userAgent(num, value)
	case keyAllow, keyDisallow:
		b.rule(num, kind == keyAllow, value)
	case keySitemap:
		if len(value) > 0 && len(b.sitemaps) > 0 {
			b.sitemaps = append(b.sitemaps, '\n')
		}
		b.sitemaps = append(b.sitemaps, value...)
	case keyHost:
		if len(b.host) == 0 {
			b.host = append(b.host, value...)
		}
	case keyContentSignal:
		if len(value) > 0 {
			b.signals = append(b.signals, ParseContentSignal([]string{string(value)}, int(num)))
		}
	case keyLicense:
		if len(value) > 0 && len(b.licenses) < MaxLicenses {
			b.licenses = append(b.licenses, LicenseLine{URL: string(value), Line: int(num)})
		}
	case keyCrawlDelay, keyRequestRate, keyContentUsage, keyVisitTime:
		b.groupExtension(num, kind, value)
	}
}

func (b *builder) userAgent(num uint32, value []byte) {
	if len(b.runs) == 0 || b.sawRule {
		n := uint32(len(b.rules))
		b.runs = append(b.runs, run{rules: span{n, n}, line: num})
		b.sawRule = false
	}
	m := pendingMember{run: uint32(len(b.runs) - 1), line: num}
	if isGlobalAgent(value) {
		m.global = true
	} else {
		token := value[:tokenLen(value)]
		m.n = uint32(len(token))
		m.keyOff = b.agentKey(token)
		m.nameOff = uint32(len(b.arena))
		b.arena = append(b.arena, token...)
	}
	b.members = append(b.members, m)
}

// isGlobalAgent reports a user-agent value Google reads as "*": a star
// alone or followed by whitespace and anything.
func isGlobalAgent(v []byte) bool {
	return len(v) > 0 && v[0] == '*' && (len(v) == 1 || isSpace(v[1]))
}

func (b *builder) agentKey(token []byte) uint32 {
	var lower [64]byte
	k := lower[:0]
	if len(token) > len(lower) {
		k = make([]byte, 0, len(token))
	}
	for _, c := range token {
		k = append(k, lowerASCII(c))
	}
	if off, ok := b.agentKeys[string(k)]; ok {
		return off
	}
	off := uint32(len(b.arena))
	b.arena = append(b.arena, k...)
	b.agentKeys[string(k)] = off
	return off
}

func (b *builder) rule(num uint32, allow bool, value []byte) {
	if len(b.runs) == 0 {
		return // rules before any user-agent line belong to no group
	}
	b.sawRule = true
	if len(value) == 0 {
		return // an empty pattern matches with priority 0: no effect
	}
	off := len(b.arena)
	b.arena = appendEscaped(b.arena, value)
	b.addRule(num, allow, off, false)
	// Google normalises "allow: /dir/index.htm(l)" to also allow "/dir/$".
	p := b.arena[off:]
	if slash := bytes.LastIndexByte(p, '/'); allow && slash >= 0 && bytes.HasPrefix(p[slash:], []byte("/index.htm")) {
		implied := len(b.arena)
		b.arena = append(b.arena, b.arena[off:off+slash+1]...)
		b.arena = append(b.arena, '$')
		b.addRule(num, true, implied, true)
	}
	b.runs[len(b.runs)-1].rules.end = uint32(len(b.rules))
}

// addRule records the pattern stored in arena from off to its end; the
// caller extends the current run over it.
func (b *builder) addRule(num uint32, allow bool, off int, implied bool) {
	p := b.arena[off:]
	var flags ruleFlags
	if allow {
		flags |= ruleAllow
	}
	if implied {
		flags |= ruleImplied
	}
	lit := len(p)
	if p[len(p)-1] == '$' {
		flags |= ruleAnchored
		lit--
	}
	if star := bytes.IndexByte(p, '*'); star >= 0 {
		flags |= ruleStar
		lit = star
	}
	b.rules = append(b.rules, rule{
		off:       uint32(off),
		n:         uint16(len(p)),
		lit:       uint16(lit),
		lineFlags: min(num, 1<<lineBits-1) | uint32(flags)<<lineBits,
		pre:       prefix4(p[:lit]),
	})
}

// finish sorts what was read into the File's lookup structures.
func (b *builder) finish() *File {
	var ex fileExtras
	if len(b.usage) > 0 || len(b.signals) > 0 {
		ex.ai = &aiPrefs{usage: exact(b.usage), signals: exact(b.signals)}
	}
	ex.sitemaps = b.appendArena(b.sitemaps)
	ex.host = b.appendArena(b.host)
	if len(b.licenses) > 0 {
		licenses := exact(b.licenses)
		ex.licenses = &licenses
	}
	if len(b.visits) > 0 {
		visits := exact(b.visits)
		ex.visits = &visits
	}
	f := &File{arena: string(b.arena), rules: b.rules, runs: b.runs}
	for _, r := range f.runs {
		sortRules(f.rules[r.rules.start:r.rules.end])
	}
	b.finishAgents(f)
	packTables(f)
	ex.canon, ex.decoded = buildNormal(f, false), buildNormal(f, true)
	if ex != (fileExtras{}) {
		f.extra = &ex
	}
	for _, twin := range []*File{ex.canon, ex.decoded} {
		if twin != nil {
			twin.extra = f.extra
		}
	}
	return f
}

// appendArena appends s to the arena and returns where it lies: the zero
// span when s is empty, so that a file without extras allocates none.
func (b *builder) appendArena(s []byte) span {
	if len(s) == 0 {
		return span{}
	}
	start := uint32(len(b.arena))
	b.arena = append(b.arena, s...)
	return span{start, uint32(len(b.arena))}
}

// exact returns s in an array of its length: a cached File should not
// carry the spare capacity of append's growth.
func exact[S ~[]E, E any](s S) S {
	if cap(s) == len(s) {
		return s
	}
	return slices.Clone(s)
}

func sortRules(rs []rule) { slices.SortFunc(rs, byPrecedence) }

// byPrecedence orders rules so that the first one matching a path decides:
// longest pattern first, allow before disallow on a tie, then by line (Google
// reports the first line among equals).
func byPrecedence(a, b rule) int {
	if c := cmp.Compare(b.n, a.n); c != 0 {
		return c
	}
	if c := cmp.Compare(b.flags()&ruleAllow, a.flags()&ruleAllow); c != 0 {
		return c
	}
	return cmp.Compare(a.line(), b.line())
}

// prefix4 packs the first four octets of s (zero-padded) little-endian.
func prefix4[S ~string | ~[]byte](s S) uint32 {
	var v uint32
	for i := range min(len(s), 4) {
		v |= uint32(s[i]) << (8 * i)
	}
	return v
}

// prefixMask keeps the octets of a prefix4 value that a literal of n octets
// has.
var prefixMask = [5]uint32{0, 0xff, 0xffff, 0xffffff, 0xffffffff}

func (b *builder) finishAgents(f *File) {
	var specific, global []pendingMember
	for _, m := range b.members {
		if m.global {
			global = append(global, m)
		} else {
			specific = append(specific, m)
		}
	}
	key := func(m pendingMember) string { return f.arena[m.keyOff : m.keyOff+m.n] }
	slices.SortFunc(specific, func(x, y pendingMember) int {
		return cmp.Or(cmp.Compare(key(x), key(y)), cmp.Compare(x.run, y.run), cmp.Compare(x.line, y.line))
	})
	f.members = make([]member, 0, len(b.members))
	for i, m := range specific {
		if i == 0 || key(specific[i-1]) != key(m) {
			start := uint32(len(f.members))
			f.agents = append(f.agents, agent{keyOff: m.keyOff, nameOff: m.nameOff, n: m.n, members: span{start, start}})
		}
		f.members = append(f.members, member{run: m.run, line: m.line})
		f.agents[len(f.agents)-1].members.end = uint32(len(f.members))
	}
	f.global = uint32(len(f.members))
	for _, m := range global {
		f.members = append(f.members, member{run: m.run, line: m.line})
	}
}
