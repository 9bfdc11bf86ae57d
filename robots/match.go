package robots

import (
	"fmt"
	"strings"
)

// Rule is an allow or disallow line of a robots.txt.
type Rule struct {
	Allow bool
	// Pattern is the path pattern as matched: non-ASCII octets %-encoded and
	// %xx escapes upper-cased, as Google's parser stores it.
	Pattern string
	// Line is the 1-based line number in the file.
	Line int
	// Implied is set for the "/dir/$" allow that Google derives from an
	// "Allow: /dir/index.htm" or "/dir/index.html" line (reported at its line).
	Implied bool
}

// String formats the rule as it would appear in a robots.txt.
func (r Rule) String() string {
	verb := "Disallow"
	if r.Allow {
		verb = "Allow"
	}
	return verb + ": " + r.Pattern
}

// Decision is the verdict on one request-target for one group, with why.
type Decision struct {
	// Allowed is the verdict.
	Allowed bool
	// Matched reports that Rule decided; otherwise no rule matched (allowed).
	Matched bool
	// Rule is the deciding rule when Matched: the matching rule with the
	// longest pattern, allow on a tie, the earliest line among equals.
	Rule Rule
	// Group is the group that judged the request.
	Group Group
	// Canonical is set when the verdict came from judging the canonical
	// form of the target (Group.DecideStrict, the evasion guard): it is
	// that form, and Rule is the pattern in canonical form. Decoded: it
	// was the decoded form (DecodedTarget), reserved characters decoded.
	Canonical string
	Decoded   bool
	// TooCostly reports that judging the target would have needed more
	// than MaxMatchWork octets of comparisons, which only a file built to
	// exhaust its reader needs; the verdict is then the conservative one,
	// disallowed, with no deciding rule.
	TooCostly bool
}

// MaxMatchWork bounds the octets of the path that the wildcard rules of one
// decision may examine between them (2 MiB: a millisecond or less). A
// matcher that tries each rule in turn, as Google's does, costs about the
// path's length for each wildcard rule: a 500 KiB file holds some 27,000
// rules like "/*b1x", and against a 2 KiB path made of b's and digits they
// cost 10 ms per request. No real file comes near the bound: every query
// of the benchmark corpus, whose files reach 500 KiB, stays far below it.
const MaxMatchWork = 2 << 20

// String explains the decision in one line, e.g.
// `disallowed by "Disallow: /private" (line 3, group "*")`.
func (d Decision) String() string {
	verdict := "allowed"
	if !d.Allowed {
		verdict = "disallowed"
	}
	group := "no group"
	if d.Group.Found() {
		group = fmt.Sprintf("group %q", d.Group.Name())
	}
	if d.TooCostly {
		return fmt.Sprintf("%s: the rules are too costly to judge this target (%s)", verdict, group)
	}
	if !d.Matched {
		return fmt.Sprintf("%s: no rule matched (%s)", verdict, group)
	}
	if d.Canonical != "" {
		group += fmt.Sprintf(", judged as %q", d.Canonical)
	}
	return fmt.Sprintf("%s by %q (line %d, %s)", verdict, d.Rule.String(), d.Rule.Line, group)
}

// Allowed reports whether agent may fetch target by this file. It is
// Google's RobotsMatcher::OneAgentAllowedByRobots for a URL whose path part is
// target. agent is a product token ("FooBot"), compared whole; target is the
// request-target as sent, path[;params][?query]: it is matched as is (the
// caller supplies it %-encoded, as Google expects), a fragment is ignored and
// "" means "/". Like Google's library it does not single out /robots.txt
// (RFC 9309 §2.2.2 lets crawlers always fetch it): see IsRobotsTxt. Unlike
// it, it answers false when judging would cost more than MaxMatchWork (see
// Decision.TooCostly).
func (f *File) Allowed(agent, target string) bool {
	return f.Group(agent).Decide(target).Allowed
}

// Decide judges target (see File.Allowed) by the group's rules. It does not
// allocate when target starts with "/".
func (g Group) Decide(target string) Decision { return g.decide(target, MaxMatchWork) }

// decide is Decide with the work bound set to limit octets (tests use a
// lower one to show how far real files stay below MaxMatchWork).
func (g Group) decide(target string, limit int) Decision {
	d := Decision{Allowed: true, Group: g}
	ms := g.members()
	if len(ms) == 0 {
		return d
	}
	f := g.f
	path := requestPath(target)
	pre := prefix4(path)
	// match reports exhaustion once work passes MaxMatchWork: starting
	// below zero lowers the bound to limit.
	best, work := -1, MaxMatchWork-limit
	for i, m := range ms {
		if i > 0 && ms[i-1].run == m.run {
			continue
		}
		rs := f.runs[m.run].rules
		for j := rs.start; j < rs.end; j++ {
			r := &f.rules[j]
			if best >= 0 && byPrecedence(*r, f.rules[best]) >= 0 {
				break // this run has nothing that could beat best
			}
			matched, exhausted := f.match(r, path, pre, &work)
			if matched {
				best = int(j)
				break
			}
			if exhausted {
				d.Allowed, d.TooCostly = false, true
				return d
			}
		}
	}
	if best < 0 {
		return d
	}
	r := &f.rules[best]
	d.Matched = true
	d.Allowed = r.flags()&ruleAllow != 0
	d.Rule = Rule{
		Allow:   d.Allowed,
		Pattern: f.rulePattern(r),
		Line:    int(r.line()),
		Implied: r.flags()&ruleImplied != 0,
	}
	return d
}

// DecideStrict judges target as Decide does and, unless that disallows, also
// judges its canonical form (CanonicalTarget) against the patterns in
// canonical form, then its decoded form (DecodedTarget) against the
// patterns in decoded form; the request is refused if any judgement
// disallows. This closes the evasions Google's raw comparison leaves open,
// since origins decode and normalise paths: with "Disallow: /private",
// "/%70rivate", "/public/../private" and "//private" are refused; with
// "Disallow: /~joe/", "/%7Ejoe/x" is, and with "Disallow: /%7Ejoe/",
// "/~joe/x" is; with "Disallow: /@admin", "/%40admin" is. It does not
// allocate when the target and every pattern are canonical already.
func (g Group) DecideStrict(target string) Decision {
	d := g.Decide(target)
	if !d.Allowed || g.f == nil {
		return d
	}
	path := requestPath(target)
	ct := CanonicalTarget(path)
	if dc, refused := g.decideNormal(g.f.canonical(), ct, ct == path); refused {
		return dc
	}
	if strings.IndexByte(path, '%') < 0 && g.f.decodedFile() == nil {
		return d // nothing to decode: the decoded form is the canonical one
	}
	dt := DecodedTarget(path)
	if dd, refused := g.decideNormal(g.f.decodedFile(), dt, dt == path); refused {
		dd.Decoded = true
		return dd
	}
	return d
}

// decideNormal judges a normal form nt of the target against normal, the
// file with its patterns in that form (nil: the patterns are already),
// and reports whether it refuses; same: nt is the target itself.
func (g Group) decideNormal(normal *File, nt string, same bool) (Decision, bool) {
	if normal == nil {
		if same {
			return Decision{}, false // the raw judgement already
		}
		normal = g.f
	}
	d := Group{f: normal, id: g.id}.Decide(nt)
	if d.Allowed {
		return d, false
	}
	d.Group, d.Canonical = g, nt
	return d, true
}

// IsRobotsTxt reports whether target is the robots.txt file itself, which
// RFC 9309 §2.2.2 says is implicitly allowed whatever the rules say.
func IsRobotsTxt(target string) bool {
	path, _, _ := strings.Cut(requestPath(target), "?")
	return path == "/robots.txt"
}

// match reports whether r matches path; pre is prefix4(path). It adds to
// *work the octets of path its wildcard search examined and reports
// exhausted once they pass MaxMatchWork.
func (f *File) match(r *rule, path string, pre uint32, work *int) (matched, exhausted bool) {
	if pre&prefixMask[min(r.lit, 4)] != r.pre {
		return false, false // rejected without touching the arena
	}
	if r.lit > 4 && !strings.HasPrefix(path, f.arena[r.off:r.off+uint32(r.lit)]) {
		return false, false
	}
	if len(path) < int(r.lit) {
		return false, false
	}
	flags := r.flags()
	switch {
	case flags&ruleStar != 0:
		end := r.off + uint32(r.n)
		anchored := flags&ruleAnchored != 0
		if anchored {
			end--
		}
		matched = matchWild(f.arena[r.off+uint32(r.lit)+1:end], path[r.lit:], anchored, work)
		return matched, !matched && *work > MaxMatchWork
	case flags&ruleAnchored != 0:
		return len(path) == int(r.lit), false
	}
	return true, false
}

// matchPattern reports whether a robots.txt pattern matches path from its
// start: '*' matches any run of octets, a final '$' anchors the end, any
// other octet (a '$' elsewhere included) matches itself.
func matchPattern(pattern, path string) bool {
	var work int
	return MatchPattern(pattern, path, &work)
}

// MatchPattern reports whether a robots.txt pattern matches path from its
// start, as Group.Decide matches a rule: '*' matches any run of octets, a
// final '$' anchors the end, any other octet (a '$' elsewhere included)
// matches itself; pattern and path are compared as they are (no escaping
// or decoding). Its wildcard search places each segment between stars at
// its leftmost position, in about one pass over path (no backtracking),
// and adds to *work the octets of path it examined, so that a caller
// matching many patterns can bound the total (as Decide does with
// MaxMatchWork).
func MatchPattern(pattern, path string, work *int) bool {
	anchored := strings.HasSuffix(pattern, "$")
	if anchored {
		pattern = pattern[:len(pattern)-1]
	}
	star := strings.IndexByte(pattern, '*')
	if star < 0 {
		if anchored {
			return path == pattern
		}
		return strings.HasPrefix(path, pattern)
	}
	if !strings.HasPrefix(path, pattern[:star]) {
		return false
	}
	return matchWild(pattern[star+1:], path[star:], anchored, work)
}

// matchWild matches the part of a pattern after its first '*' against the
// rest of the path (anchored: the pattern's final '$' already removed). It
// adds to *work the octets of s it examined: what each search passed over.
func matchWild(p, s string, anchored bool, work *int) bool {
	if anchored {
		// What follows the last '*' must end the path: check it first, then
		// place the other segments in what precedes it.
		last := strings.LastIndexByte(p, '*')
		tail := p[last+1:]
		*work += len(tail)
		if !strings.HasSuffix(s, tail) {
			return false
		}
		s, p = s[:len(s)-len(tail)], p[:last+1]
	} else if last := strings.LastIndexByte(p, '*'); last >= 0 && index(s, p[last+1:], work) < 0 {
		// A path without the last segment cannot match: one scan finds
		// that out, instead of placing every segment before it first (a
		// file of /*a*a*…*b rules against a path without a b).
		return false
	}
	for {
		i := strings.IndexByte(p, '*')
		if i < 0 {
			return index(s, p, work) >= 0 // p is "" when anchored
		}
		seg := p[:i]
		p = p[i+1:]
		if seg == "" {
			continue
		}
		j := index(s, seg, work)
		if j < 0 {
			return false
		}
		s = s[j+len(seg):]
	}
}

// index is strings.Index, adding to *work the octets of s it went over.
func index(s, seg string, work *int) int {
	j := strings.Index(s, seg)
	if j < 0 {
		*work += len(s)
	} else {
		*work += j + len(seg)
	}
	return j
}
