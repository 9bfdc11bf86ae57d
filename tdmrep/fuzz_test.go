package tdmrep

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/robotsgate/robotsgate/robots"
)

// fuzzMaxBody and fuzzMaxTarget keep the inputs small enough for refMatch,
// which costs the product of a pattern's and the target's lengths; Parse
// and Match themselves take anything.
const fuzzMaxBody, fuzzMaxTarget = 64 << 10, 4 << 10

// FuzzTDMRep checks, for any body and target: no panic, a bounded time,
// rules in file order with at most maxProblems+1 problems, a valid JSON
// array parsed without error, and a match equal to the naive oracle's:
// the returned rule matches and no earlier one does, or none matches.
func FuzzTDMRep(f *testing.F) {
	for _, s := range [][2]string{
		{reportExample, "/directory-b/html/x"},
		{`[{"location":"/*a*a*a*a*b$","tdm-reservation":1}]`, "/" + strings.Repeat("a", 300)},
		{`[{"location":"/private/open/*","tdm-reservation":0},{"location":"/private/","tdm-reservation":1}]`, "/private/x"},
		{`[{"location":"/%7e*%24$","tdm-reservation":"1"},{"location":"x","tdm-reservation":1.0,"tdm-policy":7}]`, "/~a/./b$"},
		{"\xef\xbb\xbf[1,{},[],null,{\"location\":\"\"}]", ""},
		{`[{"location":"/a"`, "/a"},
	} {
		f.Add([]byte(s[0]), s[1])
	}
	f.Fuzz(func(t *testing.T, body []byte, target string) {
		if len(body) > fuzzMaxBody || len(target) > fuzzMaxTarget {
			return
		}
		start := time.Now()
		file := Parse(body)
		m := file.Match(target)
		if el := time.Since(start); el > 2*time.Second {
			t.Fatalf("parse+match took %v", el)
		}
		if len(file.Problems) > maxProblems+1 {
			t.Fatalf("%d problems", len(file.Problems))
		}
		for i := 1; i < len(file.Entries); i++ {
			if file.Entries[i].Index <= file.Entries[i-1].Index {
				t.Fatalf("entries out of order: %d after %d", file.Entries[i].Index, file.Entries[i-1].Index)
			}
		}
		var array []any
		if json.Unmarshal(body, &array) == nil && file.Err != nil {
			t.Fatalf("a valid JSON array gave Err %v", file.Err)
		}
		if m.TooCostly {
			if m.Entry != nil || !m.Reserved() {
				t.Fatalf("too costly: %+v", m)
			}
			return
		}
		ct := robots.MatchTarget(target)
		cost := 0
		for _, e := range file.Entries {
			cost += (len(e.pattern) + 1) * (len(ct) + 1)
		}
		if cost > 1<<22 {
			return // too slow for the oracle
		}
		want := -1
		for i := range file.Entries {
			if refMatch(file.Entries[i].pattern, ct) {
				want = i
				break
			}
		}
		switch {
		case want < 0 && m.Entry != nil:
			t.Fatalf("matched %v, oracle: no rule", m.Entry)
		case want >= 0 && m.Entry != &file.Entries[want]:
			t.Fatalf("matched %v, oracle: %v", m.Entry, file.Entries[want].String())
		case m.Reserved() != (m.Entry != nil && m.Entry.Reservation == Reserved):
			t.Fatalf("Reserved() %v for %+v", m.Reserved(), m.Entry)
		}
	})
}

// refMatch is a naive oracle for robots.txt pattern matching from the start
// of path: the set of pattern positions reachable after each octet.
func refMatch(pattern, path string) bool {
	anchored := strings.HasSuffix(pattern, "$")
	if anchored {
		pattern = pattern[:len(pattern)-1]
	}
	// reach[j]: pattern[:j] can match the path read so far.
	reach := make([]bool, len(pattern)+1)
	reach[0] = true
	closeStars := func() {
		for j := 0; j < len(pattern); j++ {
			if reach[j] && pattern[j] == '*' {
				reach[j+1] = true
			}
		}
	}
	closeStars()
	if !anchored && reach[len(pattern)] {
		return true
	}
	next := make([]bool, len(pattern)+1)
	for i := 0; i < len(path); i++ {
		clear(next)
		for j := 0; j < len(pattern); j++ {
			if !reach[j] {
				continue
			}
			if pattern[j] == '*' {
				next[j] = true
			} else if pattern[j] == path[i] {
				next[j+1] = true
			}
		}
		reach, next = next, reach
		closeStars()
		if !anchored && reach[len(pattern)] {
			return true
		}
	}
	return reach[len(pattern)]
}
