package robots

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
)

// TestMatchingIsLinearInPatternAndPath: for hostile shapes that make a
// matcher go through the whole pattern and the whole path, a pattern and a
// path four times as long cost about four times as much (the docs: linear
// in pattern and path length), where a dynamic-programming matcher (pattern
// × path) would cost sixteen times as much and a backtracking one would not
// finish. The limit, 10x, sits between the two. A match's time is the best
// of fifteen runs of each size, taken in turns so that load on the machine
// slows both alike; each run repeats the match enough to last about a
// millisecond at either size, so that a run of the larger inputs is no
// likelier to be preempted than one of the smaller. A machine loaded for
// the whole of a measurement can still skew it (one in eighty, with three
// busy processes on two cores): the measurement is taken up to three
// times, and a matcher that is not linear exceeds the limit every time.
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
			var reps [2]int
			for i := range in {
				for reps[i] = 1; run(in[i], reps[i]) < time.Millisecond; reps[i] *= 2 {
				}
			}
			var ratios []string
			for range 3 {
				perMatch := [2]float64{math.Inf(1), math.Inf(1)}
				for range 15 {
					for i := range in {
						perMatch[i] = min(perMatch[i], float64(run(in[i], reps[i]))/float64(reps[i]))
					}
				}
				ratio := perMatch[1] / perMatch[0]
				if ratio <= 10 {
					return
				}
				ratios = append(ratios, fmt.Sprintf("%.1fx (%.0f ns against %.0f ns a match)", ratio, perMatch[1], perMatch[0]))
			}
			t.Errorf("4x the pattern (%d octets) and the path (%d) cost %s: not linear",
				len(in[1].pattern), len(in[1].path), strings.Join(ratios, ", then "))
		})
	}
}
