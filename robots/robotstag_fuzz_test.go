package robots

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// FuzzRobotsTag checks, for any two Robots-Tag field lines: no panic, a
// bounded time, an error only wrapping ErrRobotsTag and always past
// MaxRobotsTagBytes, rules that are RFC 9651 keys (lower case, never
// empty), and RobotsTagRules giving only rules the field names; and that
// ParseContentSignal and ParseContentUsage never panic.
func FuzzRobotsTag(f *testing.F) {
	for _, s := range [][2]string{
		{"*;noai, ExampleBot;noindex", ""}, {"*;noindex;nosnippet, ExampleBot;", "FooBot;noml"},
		{`"FooBot";noai=?0;max-snippet=20`, "(a b);x"}, {"FooBot: noai", "*;NoAI"},
		{strings.Repeat("*;noai, ", 1100), "x"}, {"search=yes, ai-train=no, use=no", "ai-input=no"},
	} {
		f.Add(s[0], s[1], "Mozilla/5.0 (compatible; FooBot/2.1)")
	}
	f.Fuzz(func(t *testing.T, a, b, ua string) {
		start := time.Now()
		ParseContentSignal([]string{a, b}, 0)
		ParseContentUsage([]string{a, b}, 0)
		items, err := ParseRobotsTag([]string{a, b})
		if el := time.Since(start); el > time.Second {
			t.Fatalf("parse took %v", el)
		}
		if len(a)+2+len(b) > MaxRobotsTagBytes && err == nil {
			t.Fatalf("a value of %d bytes parsed", len(a)+2+len(b))
		}
		if err != nil {
			if !errors.Is(err, ErrRobotsTag) || items != nil {
				t.Fatalf("error %v with %d items", err, len(items))
			}
			return
		}
		all := map[string]bool{}
		for _, it := range items {
			for _, r := range it.Rules {
				if r == "" || r != strings.ToLower(r) {
					t.Fatalf("rule %q", r)
				}
				all[r] = true
			}
		}
		for _, r := range RobotsTagRules(items, ua) {
			if !all[r] {
				t.Fatalf("RobotsTagRules gives %q, which no member names", r)
			}
		}
	})
}
