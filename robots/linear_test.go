package robots

import (
	"strings"
	"testing"
	"time"
)

// TestMatchingIsLinearInPatternAndPath: for hostile shapes that make a
// matcher go through the whole pattern and the whole path, a pattern and a
// path four times as long cost about four times as much (the docs: linear
// in pattern and path length), where a dynamic-programming matcher (pattern
// × path) would cost sixteen times as much and a backtracking one would not
// finish. The limit, 8x, sits between the two. Times are the best of seven
// runs of each size, taken in turns, so that load on the machine slows
// both alike; each run repeats the match enough to last a millisecond.
func TestMatchingIsLinearInPatternAndPath(t *testing.T) {
	shapes := []struct {
		name  string
		build func(k int) (pattern, path string, match bool)
	}{
		{"k segments placed one step apart, then a last one at the end", func(k int) (string, string, bool) {
			return "/" + strings.Repeat("*a", k) + "*b", "/" + strings.Repeat("xa", 2*k) + "b", true
		}},
		{"anchored: k two-octet segments, leftmost", func(k int) (string, string, bool) {
			return "/" + strings.Repeat("*ab", k) + "*$", "/" + strings.Repeat("xab", 2*k), true
		}},
		{"k a's and stars, then an octet the path lacks", func(k int) (string, string, bool) {
			return "/" + strings.Repeat("a*", k) + "b", "/" + strings.Repeat("a", 4*k), false
		}},
		{"anchored miss after k segments", func(k int) (string, string, bool) {
			return "/" + strings.Repeat("a*", k) + "b$", "/" + strings.Repeat("a", 4*k), false
		}},
	}
	const k = 500
	for _, sh := range shapes {
		t.Run(sh.name, func(t *testing.T) {
			type input struct {
				pattern, path string
				match         bool
			}
			var in [2]input
			for i, size := range []int{k, 4 * k} {
				in[i].pattern, in[i].path, in[i].match = sh.build(size)
				work := 0
				if got := MatchPattern(in[i].pattern, in[i].path, &work); got != in[i].match {
					t.Fatalf("pattern of %d octets, path of %d: match %v, want %v", len(in[i].pattern), len(in[i].path), got, in[i].match)
				}
			}
			run := func(in input, reps int) time.Duration {
				start := time.Now()
				for range reps {
					work := 0
					MatchPattern(in.pattern, in.path, &work)
				}
				return time.Since(start)
			}
			reps := 1
			for run(in[0], reps) < time.Millisecond {
				reps *= 2
			}
			best := [2]time.Duration{time.Hour, time.Hour}
			for range 7 {
				for i := range in {
					best[i] = min(best[i], run(in[i], reps))
				}
			}
			if ratio := float64(best[1]) / float64(best[0]); ratio > 8 {
				t.Errorf("4x the pattern (%d octets) and the path (%d) cost %.1fx (%v against %v for %d matches): not linear",
					len(in[1].pattern), len(in[1].path), ratio, best[1], best[0], reps)
			}
		})
	}
}
