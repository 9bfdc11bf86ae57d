package proxy

import (
	"cmp"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/robotsgate/robotsgate/admin"
	"github.com/robotsgate/robotsgate/audit"
	"github.com/robotsgate/robotsgate/policy"
)

// stats keeps what the status page shows: per-origin counts, with the
// last sparkMinutes minutes minute by minute, counts by decision, the
// latest refusals and upstream failures, and the last reload's result.
// Counting a request takes no lock (a lock-free map of atomic counters):
// it happens on every request, from every connection at once.
type stats struct {
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
	reload atomic.Pointer[admin.Reload]

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
	// 2 × sparkMinutes words, so memory stays bounded with the origins.
	perMinute [2]minuteRing
}

const (
	ringRequests = iota
	ringRefusals
)

// originStats is a snapshot of one origin's counters, and the counters.
type originStats struct {
	admin.Origin
	c *originCounters
}

const (
	statsOrigins  = 10000 // origins tracked for the status page, about
	statsRefusals = 50    // latest refusals (and upstream failures) kept
)

func newStats() *stats {
	n := len(decisionTable.infos) + 1
	return &stats{started: time.Now(), decisions: make([]atomic.Int64, n), monitored: make([]atomic.Int64, n)}
}

// The kinds of decisions, as the status page sorts them.
const (
	kindAllowed  = "allowed"          // forwarded
	kindRefused  = "refused"          // refused by robots.txt or the proxy's policy
	kindUpstream = "upstream failure" // allowed, but the origin or its name failed
	kindClient   = "client"           // what the client did to itself: left, failed the TLS handshake
	// kindMonitored: a refusal only logged (a client in monitor mode):
	// the request went on to the origin.
	kindMonitored = "monitored (would refuse; forwarded)"
)

// monitoredDecision is the requests metric's decision label of a refusal
// only logged (monitor mode); robotsgate_monitored_requests_total says
// which refusal it would have been.
const monitoredDecision = "monitored"

// monitored reports whether rec is a refusal only logged: a decision that
// is a refusal, not enforced (monitor mode).
func monitored(rec *audit.Record) bool {
	if rec.Enforced {
		return false
	}
	kind, _ := kindOf(rec.Decision)
	return kind == kindRefused
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
		return kindUpstream
	case d.Refusal:
		return kindRefused
	case d.Name == policy.Allow.String():
		return kindAllowed
	}
	return kindClient
}

// kindOf returns the kind of a decision value and its counter's index;
// an unknown value is a refusal, counted apart.
func kindOf(decision string) (kind string, index int) {
	if i, ok := decisionTable.index[decision]; ok {
		return decisionTable.kinds[i], i
	}
	return kindRefused, len(decisionTable.infos)
}

// failedUpstream reports whether an allowed request failed upstream: the
// origin never answered (no upstream status) and the proxy answered 502 or
// 504 in its place. Its decision stays allow, as in the audit log and the
// requests metric.
func failedUpstream(rec *audit.Record) bool {
	return rec.UpstreamStatus == 0 && (rec.Status == http.StatusBadGateway || rec.Status == http.StatusGatewayTimeout)
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

func (s *stats) add(rec *audit.Record) {
	kind, i := kindOf(rec.Decision)
	if kind == kindRefused && !rec.Enforced {
		kind = kindMonitored
		s.monitored[i].Add(1)
	} else {
		s.decisions[i].Add(1)
	}
	if kind == kindAllowed && failedUpstream(rec) {
		kind = kindUpstream
	}
	c := s.counters(originKey(rec))
	c.requests.Add(1)
	c.last.Store(rec.Time.UnixNano())
	// The minute the request ended in, without reading the clock again.
	minute := (rec.Time.UnixNano() + int64(rec.DurationMS*float64(time.Millisecond)) + s.skew.Load()) / int64(time.Minute)
	c.perMinute[ringRequests].add(minute)
	var ring *recordRing
	switch {
	case kind == kindRefused:
		c.refused.Add(1)
		c.perMinute[ringRefusals].add(minute)
		ring = &s.recent
	case kind == kindMonitored:
		ring = &s.recent // listed, marked as only logged
	case kind == kindUpstream:
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
		return admin.ConnectTarget(rec.URL)
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

// view fills the status page's statistics: the n busiest origins (with
// their sparklines), the n with most refusals, with most upstream
// failures, the n paced with the longest intervals, the latest refusals
// and upstream failures, newest first, the counts of every decision value
// and the last reload.
func (s *stats) view(n int, now time.Time, v *admin.Status) {
	var all []originStats
	s.origins.Range(func(k, val any) bool {
		c := val.(*originCounters)
		all = append(all, originStats{Origin: admin.Origin{
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
		busiest[i].Spark = admin.NewSparkline(c.perMinute[ringRequests].series(minute), c.perMinute[ringRefusals].series(minute))
	}
	v.Busiest = rows(busiest)
	v.Refusing = rows(topBy(all, n, func(o originStats) int64 { return o.Refused }))
	v.Failing = rows(topBy(all, n, func(o originStats) int64 { return o.Failed }))
	v.Paced = rows(topBy(all, n, func(o originStats) int64 { return int64(o.Interval) }))
	for i, d := range decisionTable.infos {
		v.Decisions = append(v.Decisions, admin.DecisionCount{Name: d.Name, Kind: decisionTable.kinds[i], Status: d.Status, Count: s.decisions[i].Load()})
	}
	if n := s.decisions[len(decisionTable.infos)].Load(); n > 0 {
		v.Decisions = append(v.Decisions, admin.DecisionCount{Name: "(other)", Kind: kindRefused, Count: n})
	}
	// Monitor mode's would-be refusals, a row of their own per decision
	// that had any (a row for every refusal at 0 would double the table).
	for i, d := range decisionTable.infos {
		if n := s.monitored[i].Load(); n > 0 {
			v.Decisions = append(v.Decisions, admin.DecisionCount{Name: d.Name, Kind: kindMonitored, Status: d.Status, Count: n, Monitored: true})
		}
	}
	if n := s.monitored[len(decisionTable.infos)].Load(); n > 0 {
		v.Decisions = append(v.Decisions, admin.DecisionCount{Name: "(other)", Kind: kindMonitored, Count: n, Monitored: true})
	}
	v.Reload = s.reload.Load()
}

func rows(os []originStats) []admin.Origin {
	out := make([]admin.Origin, len(os))
	for i := range os {
		out[i] = os[i].Origin
	}
	return out
}

// snapshot returns the n busiest origins, the n with most refusals, the n
// paced with the longest intervals, and the latest refusals, newest first.
func (s *stats) snapshot(n int) (busiest, refusing, paced []admin.Origin, recent []audit.Record) {
	var v admin.Status
	s.view(n, time.Now(), &v)
	return v.Busiest, v.Refusing, v.Paced, v.Recent
}

func topBy(all []originStats, n int, key func(originStats) int64) []originStats {
	out := slices.Clone(all)
	slices.SortFunc(out, func(a, b originStats) int {
		return cmp.Or(cmp.Compare(key(b), key(a)), cmp.Compare(a.Origin.Origin, b.Origin.Origin))
	})
	out = slices.DeleteFunc(out, func(o originStats) bool { return key(o) == 0 })
	return out[:min(n, len(out))]
}

// reloaded records the outcome of a configuration reload.
func (s *stats) reloaded(err error, at time.Time) {
	r := &admin.Reload{At: at}
	if err != nil {
		r.Err = err.Error()
	}
	s.reload.Store(r)
}
