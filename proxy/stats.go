package proxy

import (
	"cmp"
	"github.com/robotsgate/robotsgate/policy"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// stats keeps what the status page shows: per-origin counts and the latest
// refusals. Counting a request takes no lock (a lock-free map of atomic
// counters): it happens on every request, from every connection at once.
type stats struct {
	started time.Time
	origins sync.Map // origin string -> *originCounters
	size    atomic.Int64

	mu     sync.Mutex     // the refusal ring (refusals are rare)
	recent []*AuditRecord // ring of the latest refusals
	next   int
}

// originCounters are one origin's live counters.
type originCounters struct {
	requests, refused atomic.Int64
	last              atomic.Int64 // unix nanoseconds
	interval, wait    atomic.Int64 // pacing: interval and last wait (ns)
	held              atomic.Int64 // requests held now
}

// originStats is a snapshot of one origin's counters for the status page.
type originStats struct {
	Origin   string
	Requests int64
	Refused  int64
	Last     time.Time
	// Pacing: the interval enforced, requests held now, the last wait.
	Interval time.Duration
	Held     int64
	LastWait time.Duration
}

const (
	statsOrigins  = 10000 // origins tracked for the status page, about
	statsRefusals = 50    // latest refusals kept
)

func newStats() *stats {
	return &stats{started: time.Now(), recent: make([]*AuditRecord, 0, statsRefusals)}
}

// counters returns origin's counters, creating them if needed; past
// 2*statsOrigins origins the least recently seen half is forgotten.
func (s *stats) counters(origin string) *originCounters {
	if c, ok := s.origins.Load(origin); ok {
		return c.(*originCounters)
	}
	c, loaded := s.origins.LoadOrStore(origin, &originCounters{})
	if !loaded && s.size.Add(1) > 2*statsOrigins {
		s.prune()
	}
	return c.(*originCounters)
}

// prune drops the origins seen least recently, keeping statsOrigins.
func (s *stats) prune() {
	type seen struct {
		origin string
		last   int64
	}
	var all []seen
	s.origins.Range(func(k, v any) bool {
		all = append(all, seen{k.(string), v.(*originCounters).last.Load()})
		return true
	})
	if len(all) <= statsOrigins {
		return
	}
	slices.SortFunc(all, func(a, b seen) int { return cmp.Compare(a.last, b.last) })
	for _, o := range all[:len(all)-statsOrigins] {
		if _, ok := s.origins.LoadAndDelete(o.origin); ok {
			s.size.Add(-1)
		}
	}
}

// holding notes a request entering (+1) or leaving (-1, with its wait) its
// pacing hold.
func (s *stats) holding(origin string, interval time.Duration, delta int64, waited time.Duration) {
	c := s.counters(origin)
	c.interval.Store(int64(interval))
	c.held.Add(delta)
	if delta < 0 {
		c.wait.Store(int64(waited))
	}
}

func (s *stats) add(rec *AuditRecord) {
	c := s.counters(originOf(rec.URL))
	c.requests.Add(1)
	c.last.Store(rec.Time.UnixNano())
	if !isRefusal(rec.Decision) || !rec.Enforced {
		return
	}
	c.refused.Add(1)
	s.mu.Lock()
	defer s.mu.Unlock()
	kept := *rec // rec lives in a per-connection slot that the next request reuses
	if len(s.recent) < statsRefusals {
		s.recent = append(s.recent, &kept)
	} else {
		s.recent[s.next] = &kept
	}
	s.next = (s.next + 1) % statsRefusals
}

// isRefusal reports whether a decision refused the request (the status
// page's refusals): not an allowed request, nor what a client did to
// itself (left while held, failed the TLS handshake).
func isRefusal(decision string) bool {
	switch decision {
	case policy.Allow.String(), decisionClientClosed, decisionClientTLSFailed:
		return false
	}
	return true
}

// originOf returns the scheme://authority prefix of an absolute URL.
func originOf(u string) string {
	i := strings.Index(u, "://")
	if i < 0 {
		return u
	}
	if j := strings.IndexAny(u[i+3:], "/?"); j >= 0 {
		return u[:i+3+j]
	}
	return u
}

// snapshot returns the n busiest origins, the n with most refusals, the n
// paced with the longest intervals, and the latest refusals, newest first.
func (s *stats) snapshot(n int) (busiest, refusing, paced []originStats, recent []AuditRecord) {
	var all []originStats
	s.origins.Range(func(k, v any) bool {
		c := v.(*originCounters)
		all = append(all, originStats{
			Origin: k.(string), Requests: c.requests.Load(), Refused: c.refused.Load(),
			Last: time.Unix(0, c.last.Load()), Interval: time.Duration(c.interval.Load()),
			Held: c.held.Load(), LastWait: time.Duration(c.wait.Load()),
		})
		return true
	})
	s.mu.Lock()
	for i := range len(s.recent) {
		// walk back from the newest
		if idx := (s.next - 1 - i + 2*statsRefusals) % statsRefusals; idx < len(s.recent) {
			recent = append(recent, *s.recent[idx])
		}
	}
	s.mu.Unlock()
	busiest = topBy(all, n, func(o originStats) int64 { return o.Requests })
	refusing = topBy(all, n, func(o originStats) int64 { return o.Refused })
	paced = topBy(all, n, func(o originStats) int64 { return int64(o.Interval) })
	return busiest, refusing, paced, recent
}

func topBy(all []originStats, n int, key func(originStats) int64) []originStats {
	out := slices.Clone(all)
	slices.SortFunc(out, func(a, b originStats) int {
		return cmp.Or(cmp.Compare(key(b), key(a)), cmp.Compare(a.Origin, b.Origin))
	})
	out = slices.DeleteFunc(out, func(o originStats) bool { return key(o) == 0 })
	return out[:min(n, len(out))]
}
