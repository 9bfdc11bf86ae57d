package proxy

import (
	"cmp"
	"slices"
	"strings"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
)

// stats keeps what the status page shows: per-origin counts (for the most
// recently active origins, bounded) and the latest refusals.
type stats struct {
	mu      sync.Mutex
	started time.Time
	origins *lru.Cache[string, *originStats]
	recent  []*AuditRecord // ring of the latest refusals
	next    int
}

// OriginStats are the counts of one origin.
type originStats struct {
	Origin   string
	Requests int64
	Refused  int64
	Last     time.Time
	// Pacing: the interval enforced, requests held now, the last wait.
	Interval time.Duration
	Held     int
	LastWait time.Duration
}

const (
	statsOrigins  = 10000 // origins tracked for the status page
	statsRefusals = 50    // latest refusals kept
)

func newStats() *stats {
	c, _ := lru.New[string, *originStats](statsOrigins)
	return &stats{started: time.Now(), origins: c, recent: make([]*AuditRecord, 0, statsRefusals)}
}

// holding notes a request entering (+1) or leaving (-1, with its wait) its
// pacing hold.
func (s *stats) holding(origin string, interval time.Duration, delta int, waited time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.origins.Get(origin)
	if !ok {
		st = &originStats{Origin: origin}
		s.origins.Add(origin, st)
	}
	st.Interval, st.Held = interval, st.Held+delta
	if delta < 0 {
		st.LastWait = waited
	}
}

func (s *stats) add(rec *AuditRecord) {
	o := originOf(rec.URL)
	refused := rec.Decision != "allow" && rec.Enforced
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.origins.Get(o)
	if !ok {
		st = &originStats{Origin: o}
		s.origins.Add(o, st)
	}
	st.Requests++
	st.Last = rec.Time
	if !refused {
		return
	}
	st.Refused++
	if len(s.recent) < statsRefusals {
		s.recent = append(s.recent, rec)
	} else {
		s.recent[s.next] = rec
	}
	s.next = (s.next + 1) % statsRefusals
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

// snapshot returns the n busiest origins, the n with most refusals, and
// the latest refusals, newest first.
func (s *stats) snapshot(n int) (busiest, refusing, paced []originStats, recent []AuditRecord) {
	s.mu.Lock()
	all := make([]originStats, 0, s.origins.Len())
	for _, st := range s.origins.Values() {
		all = append(all, *st)
	}
	for i := range len(s.recent) {
		// walk back from the newest
		idx := (s.next - 1 - i + 2*statsRefusals) % statsRefusals
		if idx < len(s.recent) {
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
