package robots

import (
	"strings"
	"time"
)

// Group is what applies to one agent: every group of the file that names
// the agent's product token, merged, or else the merged "*" groups, or else
// nothing. Groups naming the agent and "*" groups are never combined. A Group
// is a small value tied to its File; the zero Group allows everything.
type Group struct {
	f  *File
	id int32 // index into f.agents, or groupGlobal / groupNone
}

const (
	groupNone   = -1
	groupGlobal = -2
)

// Group returns the group for a product token such as "Googlebot", compared
// whole and ignoring ASCII case with the token of each user-agent line, as
// Google's matcher does. A token with characters outside [A-Za-z_-] never
// names a specific group.
func (f *File) Group(token string) Group {
	if f == nil {
		return Group{}
	}
	if i := f.findAgent(token); i >= 0 {
		return Group{f: f, id: int32(i)}
	}
	return f.fallback()
}

// GroupForUserAgent returns the group for an HTTP User-Agent header. Every
// run of [A-Za-z_-] in the header is a candidate token (so "Mozilla/5.0
// (compatible; Googlebot/2.1)" offers "Googlebot"); among the tokens that
// name a group the longest wins, the first on a tie. Without one, the "*"
// group applies. It does not allocate.
func (f *File) GroupForUserAgent(header string) Group {
	if f == nil {
		return Group{}
	}
	best, bestLen := -1, 0
	for i := 0; i < len(header); {
		if !isTokenChar(header[i]) {
			i++
			continue
		}
		start := i
		for i < len(header) && isTokenChar(header[i]) {
			i++
		}
		if i-start > bestLen {
			if a := f.findAgent(header[start:i]); a >= 0 {
				best, bestLen = a, i-start
			}
		}
	}
	if best >= 0 {
		return Group{f: f, id: int32(best)}
	}
	return f.fallback()
}

func (f *File) fallback() Group {
	if int(f.global) < len(f.members) {
		return Group{f: f, id: groupGlobal}
	}
	return Group{f: f, id: groupNone}
}

// ProductToken returns the leading run of [A-Za-z_-] of s, the part of a
// user-agent line or name that takes part in matching ("Googlebot/2.1" gives
// "Googlebot").
func ProductToken(s string) string {
	return s[:tokenLen(s)]
}

func isTokenChar(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '-' || c == '_'
}

func tokenLen[S ~string | ~[]byte](s S) int {
	i := 0
	for i < len(s) && isTokenChar(s[i]) {
		i++
	}
	return i
}

// findAgent returns the index of the agent whose key equals token ignoring
// ASCII case, or -1.
func (f *File) findAgent(token string) int {
	lo, hi := 0, len(f.agents)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		c := compareFold(token, f.agentKey(mid))
		if c == 0 {
			return mid
		}
		if c > 0 {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return -1
}

// compareFold compares s, lowered as ASCII, with the lower-case key.
func compareFold(s, key string) int {
	n := min(len(s), len(key))
	for i := range n {
		c := lowerASCII(s[i])
		if c != key[i] {
			if c < key[i] {
				return -1
			}
			return 1
		}
	}
	switch {
	case len(s) < len(key):
		return -1
	case len(s) > len(key):
		return 1
	}
	return 0
}

// Found reports whether any group applies: one naming the agent or "*".
func (g Group) Found() bool { return g.f != nil && g.id != groupNone }

// Global reports whether the "*" group applies (no group names the agent).
func (g Group) Global() bool { return g.id == groupGlobal }

// Name returns the group's product token as first written in the file, "*"
// for the global group, or "" when no group applies.
func (g Group) Name() string {
	switch {
	case g.f == nil || g.id == groupNone:
		return ""
	case g.id == groupGlobal:
		return "*"
	}
	return g.f.agentName(int(g.id))
}

func (g Group) members() []member {
	switch {
	case g.f == nil || g.id == groupNone:
		return nil
	case g.id == groupGlobal:
		return g.f.members[g.f.global:]
	}
	s := g.f.agents[g.id].members
	return g.f.members[s.start:s.end]
}

// Lines returns the line numbers of the user-agent lines that name the
// group, in order.
func (g Group) Lines() []int {
	ms := g.members()
	out := make([]int, len(ms))
	for i, m := range ms {
		out[i] = int(m.line)
	}
	return out
}

// eachRun calls fn once for every run of the group, in file order.
func (g Group) eachRun(fn func(i uint32, r *run)) {
	ms := g.members()
	for i, m := range ms {
		if i > 0 && ms[i-1].run == m.run {
			continue
		}
		fn(m.run, &g.f.runs[m.run])
	}
}

// CrawlDelay returns the largest Crawl-delay of the group's lines, or 0.
func (g Group) CrawlDelay() time.Duration {
	var d time.Duration
	g.eachRun(func(_ uint32, r *run) { d = max(d, r.crawlDelay.duration()) })
	return d
}

// RequestInterval returns the interval a Request-rate line asks for (a rate
// of n per T is an interval of T/n), the largest if several, or 0.
func (g Group) RequestInterval() time.Duration {
	var d time.Duration
	g.eachRun(func(_ uint32, r *run) { d = max(d, r.requestInterval.duration()) })
	return d
}

// Interval returns how far apart the group asks requests to start: the larger
// of CrawlDelay and RequestInterval.
func (g Group) Interval() time.Duration {
	return max(g.CrawlDelay(), g.RequestInterval())
}

// ContentUsage returns the AI-usage statements (IETF aipref Content-Usage
// lines, ParseContentUsage) that apply to target: that of the line with the
// longest matching path pattern; when several lines tie, all of them, which
// draft-ietf-aipref-attach-05 §3.1 has apply separately (any "n" wins). It
// returns nil when none apply. The caller must not modify the statements.
func (g Group) ContentUsage(target string) []Statement {
	path := requestPath(target)
	var out []Statement
	bestLen := -1
	g.eachRun(func(run uint32, _ *run) {
		for i := range g.f.extras().aiPrefs().usage {
			u := &g.f.extras().aiPrefs().usage[i]
			switch {
			case u.run != run || len(u.pattern) < bestLen || !matchPattern(u.pattern, path):
			case len(u.pattern) > bestLen:
				out, bestLen = append(out[:0], u.stmt), len(u.pattern)
			default:
				out = append(out, u.stmt)
			}
		}
	})
	return out
}

// requestPath turns a request-target into the path Google matches: the
// fragment is cut and a missing leading "/" supplied.
func requestPath(target string) string {
	if i := strings.IndexByte(target, '#'); i >= 0 {
		target = target[:i]
	}
	if target == "" {
		return "/"
	}
	if target[0] != '/' {
		return "/" + target // rare ("?q" or ";p"): allocates
	}
	return target
}

// DecideHost judges a host without seeing its paths (a tunnel that is not
// intercepted): the rule is the one that decides "/", and the host is
// refused only when the group refuses every path (DisallowsAll); otherwise
// it is allowed, whatever that rule says. The proxy decides blind tunnels
// with it, and robotsgate verify replays their records with it.
func (g Group) DecideHost() Decision {
	d := g.Decide("/")
	d.Allowed = !g.DisallowsAll()
	return d
}

// DisallowsAll reports whether the group refuses every path: a disallow rule
// matching every path ("/", "*", "/*") and no allow rule at all. It is the
// one decision possible about a host without seeing its paths (a tunnel that
// is not intercepted). An unknown or empty group disallows nothing.
func (g Group) DisallowsAll() bool {
	blanket := false
	for _, m := range g.members() {
		rs := g.f.runs[m.run].rules
		for _, r := range g.f.rules[rs.start:rs.end] {
			if r.flags()&ruleAllow != 0 {
				return false
			}
			switch g.f.rulePattern(&r) {
			case "/", "*", "/*", "*$", "/*$":
				blanket = true
			}
		}
	}
	return blanket
}
