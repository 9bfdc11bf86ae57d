package policy

import (
	"slices"
	"testing"
)

// FuzzRobotsTagNeverHidesNoai: a Robots-Tag field whose first line is
// "*;noai" refuses the training purposes whatever the other line says:
// parsed, the rule is for every agent; unparsable, noai is in it as a
// word. And a Content-Signal field whose last line is "ai-train=no"
// refuses ai-train whatever the line before says: parsed, the last value
// of a key wins (RFC 9651 §4.2.2); unparsable, it is read for its "no"s.
func FuzzRobotsTagNeverHidesNoai(f *testing.F) {
	for _, s := range []string{"", "FooBot;noai=?0", "*;noai=?0", "ExampleBot;", "(x);y", "\x00", "ai-train=yes, use=yes"} {
		f.Add(s, "Mozilla/5.0 (compatible; FooBot/2.1)")
	}
	f.Fuzz(func(t *testing.T, other, agent string) {
		signals := listed(t, header("Robots-Tag", "*;noai", "Robots-Tag", other), nil, agent, nil)
		if len(signals) != 1 || !slices.Contains(signals[0].Refuses, "train-ai") {
			t.Fatalf("Robots-Tag *;noai and %q: %s", other, signalsText(signals))
		}
		h := header("Content-Signal", other, "Content-Signal", "ai-train=no")
		if _, d := judged(t, h, nil, agent, []string{"ai-train"}); d.RefusedBy() != "content-signal-header" {
			t.Fatalf("Content-Signal ai-train=no and %q: %v %+v", other, d.Verdict, d.Response)
		}
	})
}
