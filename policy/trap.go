package policy

import (
	"strings"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/robotsgate/robotsgate/config"
	"github.com/robotsgate/robotsgate/origin"
)

// trapGuard stops a crawler looping through endless generated URLs: too
// long, repeating path segments, or too many pages of one origin per window.
type trapGuard struct {
	maxURL, maxRepeat, budget int
	window                    time.Duration
	counts                    *lru.Cache[origin.Origin, *budgetCounter]
}

type budgetCounter struct {
	mu    sync.Mutex
	start time.Time
	n     int
}

// maxTrackedOrigins bounds the page-budget counters (least recently used
// forgotten first: an origin idle that long has a fresh window anyway).
const maxTrackedOrigins = 100000

func newTrapGuard(t config.Trap) *trapGuard {
	if !t.Enabled {
		return nil
	}
	g := &trapGuard{maxURL: t.MaxURLLength, maxRepeat: t.MaxRepeatedSegments, budget: t.PageBudget, window: t.BudgetWindow.Duration()}
	if g.budget > 0 {
		g.counts, _ = lru.New[origin.Origin, *budgetCounter](maxTrackedOrigins)
	}
	return g
}

// checkURL applies the length and repetition limits to a request-target.
func (g *trapGuard) checkURL(target string) (string, bool) {
	if g == nil {
		return "", true
	}
	if g.maxURL > 0 && len(target) > g.maxURL {
		return "the URL is longer than trap.max_url_length", false
	}
	if g.maxRepeat > 0 && repeatedSegments(target) > g.maxRepeat {
		return "the path repeats a segment more than trap.max_repeated_segments times in a row", false
	}
	return "", true
}

// spend counts one page against the origin's budget; when the budget is
// spent it returns how long until the window ends.
func (g *trapGuard) spend(o origin.Origin, now time.Time) (time.Duration, bool) {
	if g == nil || g.budget <= 0 {
		return 0, true
	}
	c, ok := g.counts.Get(o)
	if !ok {
		c = &budgetCounter{start: now}
		if prev, found, _ := g.counts.PeekOrAdd(o, c); found {
			c = prev
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if now.Sub(c.start) >= g.window {
		c.start, c.n = now, 0
	}
	if c.n >= g.budget {
		return c.start.Add(g.window).Sub(now), false
	}
	c.n++
	return 0, true
}

// maxSegments bounds the repetition search (quadratic in segments).
const maxSegments = 256

// repeatedSegments returns the largest number of consecutive repetitions of
// any run of path segments: 3 for /a/b/a/b/a/b, 4 for /x/x/x/x.
func repeatedSegments(target string) int {
	path, _, _ := strings.Cut(target, "?")
	segs := strings.Split(strings.Trim(path, "/"), "/")
	if len(segs) > maxSegments {
		segs = segs[:maxSegments]
	}
	best := 1
	for k := 1; k <= len(segs)/2; k++ {
		for i := 0; i+2*k <= len(segs); i++ {
			n := 1
			for j := i + k; j+k <= len(segs) && equalRun(segs, i, j, k); j += k {
				n++
			}
			best = max(best, n)
		}
	}
	return best
}

func equalRun(segs []string, i, j, k int) bool {
	for x := range k {
		if segs[i+x] != segs[j+x] {
			return false
		}
	}
	return true
}
