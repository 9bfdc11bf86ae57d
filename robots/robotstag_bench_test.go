package robots

import "testing"

// BenchmarkParseRobotsTag is what reading a typical Robots-Tag field costs
// a response judged for a client with purposes.
func BenchmarkParseRobotsTag(b *testing.B) {
	lines := []string{"*;noindex;nosnippet, ExampleBot;noai;max-snippet=20", "FooBot;noml"}
	b.Run("impl=robotsgate", func(b *testing.B) { // the column make bench groups by
		b.ReportAllocs()
		for b.Loop() {
			items, err := ParseRobotsTag(lines)
			if err != nil || len(RobotsTagRules(items, "Mozilla/5.0 (compatible; FooBot/2.1)")) != 3 {
				b.Fatal(items, err)
			}
		}
	})
}
