package robots

import (
	"strings"
	"testing"
	"time"
)

// Fuzz inputs are capped so the naive oracle (quadratic per query) stays
// fast; the package itself has no such limit.
const (
	fuzzMaxBody   = 64 << 10
	fuzzMaxTarget = 4 << 10
)

func addSeeds(f *testing.F) {
	for _, c := range conformance {
		f.Add(c.body, c.agent, c.target)
	}
	f.Add("User-agent: *\nDisallow: /"+strings.Repeat("a*", 200)+"$", "x", "/"+strings.Repeat("a", 500)+"b")
}

// FuzzParseMatch checks, for any body, agent and target: no panic, a bounded
// time, Allowed equals Decide, the reported rule really matches and gives
// the verdict, DecideStrict is never more lenient than Decide, and the
// verdict and line equal the naive Google oracle's.
func FuzzParseMatch(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, body, agent, target string) {
		if len(body) > fuzzMaxBody || len(target) > fuzzMaxTarget {
			return
		}
		start := time.Now()
		file := Parse([]byte(body))
		d := file.Group(agent).Decide(target)
		if el := time.Since(start); el > 2*time.Second {
			t.Fatalf("parse+decide took %v", el)
		}
		if file.Allowed(agent, target) != d.Allowed {
			t.Fatal("Allowed differs from Decide")
		}
		if d.Matched {
			if d.Rule.Allow != d.Allowed {
				t.Fatalf("rule %v but verdict %v", d.Rule, d.Allowed)
			}
			if !matchPattern(d.Rule.Pattern, requestPath(target)) {
				t.Fatalf("reported rule %q does not match %q", d.Rule.Pattern, target)
			}
		} else if !d.Allowed {
			t.Fatal("disallowed without a rule")
		}
		if strict := file.Group(agent).DecideStrict(target); strict.Allowed && !d.Allowed {
			t.Fatalf("DecideStrict allows what Decide refuses: %v", d)
		}
		if ok, line := refDecide(body, agent, target); ok != d.Allowed || line != d.Rule.Line {
			t.Fatalf("oracle: allowed %v line %d; package: %v", ok, line, d)
		}
	})
}

// FuzzMatchPattern compares the segment matcher with Google's position-set
// automaton on arbitrary patterns and paths.
func FuzzMatchPattern(f *testing.F) {
	for _, s := range [][2]string{
		{"/a*b$", "/axxb"}, {"*", ""}, {"$", ""}, {"/a$b$", "/a$b"}, {"**a**$", "xa"}, {"/*.php$", "/x.php5"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pattern, path string) {
		if len(pattern) > fuzzMaxTarget || len(path) > fuzzMaxTarget {
			return
		}
		if got, want := matchPattern(pattern, path), refMatches(path, pattern); got != want {
			t.Fatalf("matchPattern(%q, %q) = %v, oracle %v", pattern, path, got, want)
		}
	})
}

// FuzzUserAgent checks header-based group selection: the chosen group's
// token occurs whole in the header, and no longer token there names a group.
func FuzzUserAgent(f *testing.F) {
	f.Add("User-agent: Googlebot\nDisallow: /\nUser-agent: bot\nUser-agent: *\n", "Mozilla/5.0 (compatible; Googlebot/2.1)")
	f.Add("User-agent: MJ12bot\nDisallow: /", "MJ12bot/1.4")
	f.Fuzz(func(t *testing.T, body, header string) {
		if len(body) > fuzzMaxBody {
			return
		}
		file := Parse([]byte(body))
		g := file.GroupForUserAgent(header)
		tokens := strings.FieldsFunc(header, func(r rune) bool { return r > 0x7f || !isTokenChar(byte(r)) })
		longest := 0
		for _, tok := range tokens {
			if file.findAgent(tok) >= 0 {
				longest = max(longest, len(tok))
			}
		}
		switch {
		case longest == 0 && (g.id >= 0):
			t.Fatalf("picked %q though no token names a group", g.Name())
		case longest > 0 && (g.id < 0 || len(g.f.agentKey(int(g.id))) != longest):
			t.Fatalf("picked %q, a token of length %d names a group", g.Name(), longest)
		case g.id >= 0 && !strings.Contains(strings.ToLower(header), g.f.agentKey(int(g.id))):
			t.Fatalf("picked %q, not in header", g.Name())
		}
	})
}
