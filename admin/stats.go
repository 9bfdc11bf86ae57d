package admin

import (
	"cmp"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/robotsgate/robotsgate/audit"
)

// Stats keeps what the status page shows: per-origin counts, with the
// last SparkMinutes minutes minute by minute, counts by decision, the
// latest refusals and upstream failures, and the last reload's result.
// The proxy feeds it (Add, Holding, Reloaded) and fills Status from it
// (View). Counting a request takes no lock (a lock-free map of atomic
// counters): it happens on every request, from every connection at once.
// Its memory is bounded: statsOrigins origins (twice that at most, a
// fixed set of counters each) and statsRefusals records per list.
type Stats struct {
	started   time.Time
	origins   sync.Map // origin string -> *originCounters
	size      atomic.Int64
	decisions []atomic.Int64 // by decisionTable index; the last counts unknown values
	// monitored counts, by the same index, the refusals only logged (a
	// client in monitor mode, whose request went on): not in decisions.
	monitored []atomic.Int64
	// skew is added to the clock of the per-minute counts (tests: traffic
	// in earlier minutes).
	skew   atomic.Int64
	reload atomic.Pointer[Reload]

	mu       sync.Mutex // the rings (refusals and failures are rare)
	recent   recordRing // the latest refusals
	failures recordRing // the latest upstream failures
}

// originCounters are one origin's live counters.
type originCounters struct {
	requests, refused atomic.Int64
	failed            atomic.Int64 // upstream failures
	last              atomic.Int64 // unix nanoseconds
	interval, wait    atomic.Int64 // pacing: interval and last wait (ns)
	held              atomic.Int64 // requests held now
	// perMinute counts requests and refusals minute by minute: a fixed
	// 2 × SparkMinutes words, so memory stays bounded with the origins.
	perMinute [2]minuteRing
}

const (
	ringRequests = iota
	ringRefusals
)

// originStats is a snapshot of one origin's counters, and the counters.
type originStats struct {
	Origin
	c *originCounters
}

const (
	statsOrigins  = 10000 // origins tracked for the status page, about
	statsRefusals = 50    // latest refusals (and upstream failures) kept
)

// NewStats returns empty counters, started now.
func NewStats() *Stats {
	n := len(decisionTable.infos) + 1
	return &Stats{started: time.Now(), decisions: make([]atomic.Int64, n), monitored: make([]atomic.Int64, n)}
}

// The kinds of decisions, as the status page sorts them (DecisionCount's
// Kind).
const (
	KindAllowed  = "allowed"          // forwarded
	KindRefused  = "refused"          // refused by robots.txt or the proxy's policy
	KindUpstream = "upstream failure" // allowed, but the origin or its name failed
	KindClient   = "client"           // what the client did to itself: left, failed the TLS handshake
	// KindMonitored: a refusal only logged (a client in monitor mode):
	// the request went on to the origin.
	KindMonitored = "monitored (would refuse; forwarded)"
)

// Monitored reports whether rec is a refusal only logged: a decision that
// is a refusal (an unknown value counts as one), not enforced (monitor
// mode). The requests metric counts such a record apart, as the status
// page does.
func Monitored(rec *audit.Record) bool {
	if rec.Enforced {
		return false
	}
	kind, _ := kindOf(rec.Decision)
	return kind == KindRefused
}

// decisionTable indexes audit.Decisions() for counting: a read-only map, built
// once.
var decisionTable = func() (t struct {
	infos []audit.DecisionInfo
	index map[string]int
	kinds []string
}) {
	t.index = map[string]int{}
	for _, d := range audit.Decisions() {
		if _, dup := t.index[d.Name]; dup {
			continue // trap-denied is listed for two verdicts
		}
		t.index[d.Name] = len(t.infos)
		t.infos = append(t.infos, d)
		t.kinds = append(t.kinds, decisionKind(d))
	}
	return t
}()

// decisionKind sorts a decision: upstream-error is a failure of the
// origin (or of its name's lookup), not a refusal by robots.txt.
func decisionKind(d audit.DecisionInfo) string {
	switch {
	case d.Name == audit.UpstreamError:
		return KindUpstream
	case d.Refusal:
		return KindRefused
	case d.Name == audit.Allow:
		return KindAllowed
	}
	return KindClient
}

// kindOf returns the kind of a decision value and its counter's index;
// an unknown value is a refusal, counted apart.
func kindOf(decision string) (kind string, index int) {
	if i, ok := decisionTable.index[decision]; ok {
		return decisionTable.kinds[i], i
	}
	return KindRefused, len(decisionTable.infos)
}

// failedUpstream reports whether an allowed request failed upstream: the
// origin never answered (no upstream status) and the proxy answered 502 or
// 504 in its place. Its decision stays allow, as in the audit log and the
// requests metric.
func failedUpstream(rec *audit.Record) bool {
	return rec.UpstreamStatus == 0 && (rec.Status == http.StatusBadGateway || rec.Status == http.StatusGatewayTimeout)
}

// counters returns origin's counters, creating them if needed, seen at
// seen (unix nanoseconds); past 2*statsOrigins origins the least recently
// seen half is forgotten. A new origin is seen when created, before the
// table is pruned: the origin that filled it stays (it was the newest).
func (s *Stats) counters(origin string, seen int64) *originCounters {
	if c, ok := s.origins.Load(origin); ok {
		return c.(*originCounters)
	}
	fresh := &originCounters{}
	fresh.last.Store(seen)
	c, loaded := s.origins.LoadOrStore(origin, fresh)
	if !loaded && s.size.Add(1) > 2*statsOrigins {
		s.prune()
	}
	return c.(*originCounters)
}

// prune drops the origins seen least recently, keeping statsOrigins.
func (s *Stats) prune() {
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

// Holding notes a request to origin entering (delta +1) or leaving (-1,
// with its wait) its pacing hold of interval.
func (s *Stats) Holding(origin string, interval time.Duration, delta int64, waited time.Duration) {
	c := s.counters(origin, time.Now().UnixNano())
	c.interval.Store(int64(interval))
	c.held.Add(delta)
	if delta < 0 {
		c.wait.Store(int64(waited))
	}
}

// Add counts a request's record once its response is done; rec is
// copied if kept (the caller may reuse it).
func (s *Stats) Add(rec *audit.Record) {
	kind, i := kindOf(rec.Decision)
	if kind == KindRefused && !rec.Enforced {
		kind = KindMonitored
		s.monitored[i].Add(1)
	} else {
		s.decisions[i].Add(1)
	}
	if kind == KindAllowed && failedUpstream(rec) {
		kind = KindUpstream
	}
	c := s.counters(originKey(rec), rec.Time.UnixNano())
	c.requests.Add(1)
	c.last.Store(rec.Time.UnixNano())
	// The minute the request ended in, without reading the clock again.
	minute := (rec.Time.UnixNano() + int64(rec.DurationMS*float64(time.Millisecond)) + s.skew.Load()) / int64(time.Minute)
	c.perMinute[ringRequests].add(minute)
	var ring *recordRing
	switch {
	case kind == KindRefused:
		c.refused.Add(1)
		c.perMinute[ringRefusals].add(minute)
		ring = &s.recent
	case kind == KindMonitored:
		ring = &s.recent // listed, marked as only logged
	case kind == KindUpstream:
		c.failed.Add(1)
		ring = &s.failures
	default:
		return
	}
	kept := *rec // rec lives in a per-connection slot that the next request reuses
	s.mu.Lock()
	ring.push(&kept)
	s.mu.Unlock()
}

// recordRing keeps the latest statsRefusals records.
type recordRing struct {
	recs []*audit.Record
	next int
}

func (r *recordRing) push(rec *audit.Record) {
	if len(r.recs) < statsRefusals {
		r.recs = append(r.recs, rec)
	} else {
		r.recs[r.next] = rec
	}
	r.next = (r.next + 1) % statsRefusals
}

// newestFirst copies the records, the newest arrival first. A record is
// pushed when its response has been sent, so a request's record can be
// pushed after that of a later request (the client had its answer and sent
// the next before this one was written): the ring's order alone would
// misplace it.
func (r *recordRing) newestFirst() []audit.Record {
	out := make([]audit.Record, 0, len(r.recs))
	for i := range len(r.recs) {
		out = append(out, *r.recs[(r.next-1-i+statsRefusals)%statsRefusals])
	}
	slices.SortStableFunc(out, func(a, b audit.Record) int { return b.Time.Compare(a.Time) })
	return out
}

// originKey names the origin a record counts for: the scheme://authority
// of its URL, or "host:port (CONNECT)" for a CONNECT.
func originKey(rec *audit.Record) string {
	if rec.Method == "CONNECT" {
		return ConnectTarget(rec.URL)
	}
	return originOf(rec.URL)
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

// View fills the status page's statistics: the n busiest origins (with
// their sparklines), the n with most refusals, with most upstream
// failures, the n paced with the longest intervals, the latest refusals
// and upstream failures, newest first, the counts of every decision value
// and the last reload.
func (s *Stats) View(n int, now time.Time, v *Status) {
	var all []originStats
	s.origins.Range(func(k, val any) bool {
		c := val.(*originCounters)
		all = append(all, originStats{Origin: Origin{
			Origin: k.(string), Requests: c.requests.Load(), Refused: c.refused.Load(), Failed: c.failed.Load(),
			Last: time.Unix(0, c.last.Load()), Interval: time.Duration(c.interval.Load()),
			Held: c.held.Load(), LastWait: time.Duration(c.wait.Load()),
		}, c: c})
		return true
	})
	s.mu.Lock()
	v.Recent, v.RecentFailures = s.recent.newestFirst(), s.failures.newestFirst()
	s.mu.Unlock()
	busiest := topBy(all, n, func(o originStats) int64 { return o.Requests })
	minute := (now.UnixNano() + s.skew.Load()) / int64(time.Minute)
	for i := range busiest {
		c := busiest[i].c
		busiest[i].Spark = NewSparkline(c.perMinute[ringRequests].series(minute), c.perMinute[ringRefusals].series(minute))
	}
	v.Busiest = rows(busiest)
	v.Refusing = rows(topBy(all, n, func(o originStats) int64 { return o.Refused }))
	v.Failing = rows(topBy(all, n, func(o originStats) int64 { return o.Failed }))
	v.Paced = rows(topBy(all, n, func(o originStats) int64 { return int64(o.Interval) }))
	for i, d := range decisionTable.infos {
		v.Decisions = append(v.Decisions, DecisionCount{Name: d.Name, Kind: decisionTable.kinds[i], Status: d.Status, Count: s.decisions[i].Load()})
	}
	if n := s.decisions[len(decisionTable.infos)].Load(); n > 0 {
		v.Decisions = append(v.Decisions, DecisionCount{Name: "(other)", Kind: KindRefused, Count: n})
	}
	// Monitor mode's would-be refusals, a row of their own per decision
	// that had any (a row for every refusal at 0 would double the table).
	for i, d := range decisionTable.infos {
		if n := s.monitored[i].Load(); n > 0 {
			v.Decisions = append(v.Decisions, DecisionCount{Name: d.Name, Kind: KindMonitored, Status: d.Status, Count: n, Monitored: true})
		}
	}
	if n := s.monitored[len(decisionTable.infos)].Load(); n > 0 {
		v.Decisions = append(v.Decisions, DecisionCount{Name: "(other)", Kind: KindMonitored, Count: n, Monitored: true})
	}
	v.Reload = s.reload.Load()
}

func rows(os []originStats) []Origin {
	out := make([]Origin, len(os))
	for i := range os {
		out[i] = os[i].Origin
	}
	return out
}

func topBy(all []originStats, n int, key func(originStats) int64) []originStats {
	out := slices.Clone(all)
	slices.SortFunc(out, func(a, b originStats) int {
		return cmp.Or(cmp.Compare(key(b), key(a)), cmp.Compare(a.Origin.Origin, b.Origin.Origin))
	})
	out = slices.DeleteFunc(out, func(o originStats) bool { return key(o) == 0 })
	return out[:min(n, len(out))]
}

// Reloaded records the outcome of a configuration reload at at (err nil:
// it applied).
func (s *Stats) Reloaded(err error, at time.Time) {
	r := &Reload{At: at}
	if err != nil {
		r.Err = err.Error()
	}
	s.reload.Store(r)
}

// Started is when the counters started: the proxy's start.
func (s *Stats) Started() time.Time { return s.started }

// SetSkew moves the clock of the per-minute counts (the sparklines) by d,
// for Add and View alike: a test's traffic counted in earlier minutes.
// Zero unless set.
func (s *Stats) SetSkew(d time.Duration) { s.skew.Store(int64(d)) }
