package admin

import (
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/robotsgate/robotsgate/audit"
	"github.com/robotsgate/robotsgate/robots"
)

// Explanation is the /explain answer: the proxy's decision for a URL and
// client, with what it rests on. It comes from the same code path as a
// request through the proxy.
type Explanation struct {
	URL       string `json:"url"`
	UserAgent string `json:"user_agent"`
	Decision  string `json:"decision"`
	// Status and Message are the status and message the proxy answers a
	// request judged alike with when it refuses it (a monitored client's:
	// would refuse); absent when it is allowed.
	Status      int         `json:"status,omitempty"`
	Message     string      `json:"message,omitempty"`
	Group       string      `json:"group,omitempty"`
	GroupLines  []int       `json:"group_lines,omitempty"`
	Rule        string      `json:"rule,omitempty"`
	Line        int         `json:"line,omitempty"`
	Canonical   string      `json:"canonical_target,omitempty"`
	Note        string      `json:"note,omitempty"`
	Robots      *RobotsInfo `json:"robots,omitempty"`
	CrawlDelay  float64     `json:"crawl_delay_seconds"`
	RequestRate float64     `json:"request_interval_seconds"`
	// Interval is the spacing the proxy enforces (robots.txt raised to the
	// operator's floor, capped); NextSlot how long a request would wait now.
	Interval float64 `json:"pacing_interval_seconds"`
	PaceKey  string  `json:"pacing_key,omitempty"`
	NextSlot float64 `json:"next_slot_seconds"`
	// IntervalCauses are what Interval is the largest of.
	IntervalCauses *IntervalCauses `json:"interval_causes,omitempty"`
	// Backoff is the origin's pause in force (it answered 429 or 503).
	Backoff *BackoffInfo `json:"backoff,omitempty"`
	// VisitTimes are the group's Visit-time windows (UTC), "0600-0845".
	VisitTimes   []string      `json:"visit_times,omitempty"`
	ContentUsage []robots.Pref `json:"content_usage,omitempty"`
	Signals      []robots.Pref `json:"content_signals,omitempty"`
	// ClientRule is the clients entry that identified the client
	// (client=, user=), Mode its mode and Agent the agent it fixes; Purposes
	// are the client purposes judged (the entry's, or purposes=).
	ClientRule string   `json:"client_rule,omitempty"`
	Mode       string   `json:"mode,omitempty"`
	Agent      string   `json:"agent,omitempty"`
	Purposes   []string `json:"purposes,omitempty"`
	// TDMRep is the origin's tdmrep.json as read for the URL.
	TDMRep *TDMRepInfo `json:"tdmrep,omitempty"`
	// UsageSignals are every AI-usage signal found for the URL, with the
	// purposes each refuses: robots.txt's and tdmrep.json's, and with
	// fetch=1 the response's headers and HTML head; FetchError says why
	// the response could not be read.
	UsageSignals []audit.UsageSignal `json:"usage_signals"`
	FetchError   string              `json:"fetch_error,omitempty"`
	Error        string              `json:"error,omitempty"`
}

// Refreshed is what an operator's refresh of an origin did: its
// robots.txt and tdmrep.json fetched again, and its pause ended.
type Refreshed struct {
	Origin string      `json:"origin"`
	Robots *RobotsInfo `json:"robots"`
	TDMRep *TDMRepInfo `json:"tdmrep"`
	// Licenses are the RSL licences the new robots.txt names (License
	// lines), fetched again too (a TDMRepInfo each: URL, status, HTTP
	// status, error).
	Licenses []TDMRepInfo `json:"licenses,omitempty"`
	// PauseCleared names the pause that was ended ("" when the origin was
	// not paused).
	PauseCleared string `json:"pause_cleared,omitempty"`
}

// PausedOrigin is an origin paused now: the answer that paused it, and
// the time left.
type PausedOrigin struct {
	Origin string
	Cause  string
	Until  time.Time
	Left   time.Duration
	// AwaitingProbe: the pause is over; requests wait for the answer to
	// the first one sent after it.
	AwaitingProbe bool
}

// IntervalCauses are the intervals the pacing interval is the largest of.
type IntervalCauses struct {
	// Asked is robots.txt's (Crawl-delay or Request-rate), Capped true when
	// pacing.max_delay cut it; Floor the operator's (pacing.default_delay or
	// the site's delay); Adaptive the adaptive interval (Factor × the
	// origin's ResponseTime, within its bounds; 0 when off).
	Asked        float64 `json:"robots_seconds"`
	Capped       bool    `json:"capped_by_max_delay,omitempty"`
	Floor        float64 `json:"floor_seconds"`
	Adaptive     float64 `json:"adaptive_seconds"`
	ResponseTime float64 `json:"response_time_seconds,omitempty"`
}

// BackoffInfo is an origin's pause as /explain shows it.
type BackoffInfo struct {
	// Cause names the answer ("the origin answered 503 with Retry-After:
	// 120 at 10:42:07Z"), Until when the pause ends and Remaining how long
	// from now.
	Cause     string    `json:"cause"`
	Status    int       `json:"status"`
	Until     time.Time `json:"until"`
	Remaining float64   `json:"remaining_seconds"`
	// Refuses is true when the pause lasts beyond pacing.max_wait: a
	// request now is refused (origin-backoff), else held.
	Refuses bool `json:"refuses"`
	// AwaitingProbe is true when the pause is over and a request now waits
	// for the answer to the first request sent after it (the probe), within
	// pacing.max_wait, or is that request.
	AwaitingProbe bool `json:"awaiting_probe,omitempty"`
}

// emptySignals is written as [] rather than null.
var emptySignals = []audit.UsageSignal{}

// TDMRepInfo describes the tdmrep.json read for an explanation.
type TDMRepInfo struct {
	URL        string `json:"url"`
	Status     string `json:"status"`
	HTTPStatus int    `json:"http_status"`
	Error      string `json:"error,omitempty"`
}

// RobotsInfo describes the robots.txt a decision rests on.
type RobotsInfo struct {
	URL        string    `json:"url"`
	Status     string    `json:"status"`
	HTTPStatus int       `json:"http_status"`
	FetchedAt  time.Time `json:"fetched_at"`
	AgeSeconds float64   `json:"age_seconds"`
	Expires    time.Time `json:"expires"`
	Stale      bool      `json:"stale"`
	Error      string    `json:"error,omitempty"`
}

// Status is what the status page shows.
type Status struct {
	Started, Now  time.Time
	Listen, Admin string
	MITM          bool
	StrictPaths   bool
	Clients       int
	Sites         int
	BlockPrivate  bool
	Cached        int
	Hits, Misses  uint64
	// The n busiest origins (with their sparklines), the n with most
	// refusals, with most upstream failures, the n paced with the longest
	// intervals; the latest refusals and upstream failures, newest first.
	Busiest, Refusing, Failing, Paced []Origin
	// Paused are the origins paused now because they answered 429 or 503,
	// the longest pause first.
	Paused                 []PausedOrigin
	Recent, RecentFailures []audit.Record
	// Decisions counts every decision value since start.
	Decisions []DecisionCount
	// Reload is the last configuration reload, nil if none.
	Reload *Reload
	// TLSFailures are the clients' failed intercepted handshakes by
	// reason, TLSLast the last one explained.
	TLSFailures []TLSFailureCount
	TLSLast     string
}

// Origin is one origin's counters.
type Origin struct {
	Origin   string
	Requests int64
	Refused  int64 // refused by robots.txt or the proxy's policy
	Failed   int64 // allowed, but the origin could not be reached or failed
	Last     time.Time
	// Pacing: the interval enforced, requests held now, the last wait.
	Interval time.Duration
	Held     int64
	LastWait time.Duration
	// Spark is the last SparkMinutes minutes (set for the busiest origins).
	Spark *Sparkline
}

// DecisionCount is one decision value's count since start.
type DecisionCount struct {
	Name, Kind string
	Status     int
	Count      int64
	// Monitored: refusals only logged (monitor mode), their requests
	// forwarded; Status is what enforcing would have answered.
	Monitored bool
}

// Reload is the outcome of a configuration reload.
type Reload struct {
	At  time.Time
	Err string // "" when it applied
}

// TLSFailureCount is one reason's count of failed client handshakes.
type TLSFailureCount struct {
	Reason string
	Count  int64
}

// recordTarget is what the status page shows of a record's request: its
// URL, or "host:port (CONNECT)" for a CONNECT.
func recordTarget(rec audit.Record) string {
	if rec.Method == http.MethodConnect {
		return ConnectTarget(rec.URL)
	}
	return rec.URL
}

// SparkMinutes is how many minutes a sparkline shows, one point a minute.
const SparkMinutes = 15

// Sparkline is an origin's requests and refusals per minute, drawn as two
// polylines of an inline SVG on one scale.
type Sparkline struct {
	Requests, Refusals [SparkMinutes]int64
	Peak               int64 // the most requests in one minute
}

// The sparkline's drawing area, in pixels.
const (
	sparkWidth  = 150
	sparkHeight = 30
)

// NewSparkline draws the series, oldest minute first.
func NewSparkline(requests, refusals [SparkMinutes]int64) *Sparkline {
	s := &Sparkline{Requests: requests, Refusals: refusals}
	for i := range requests {
		s.Peak = max(s.Peak, requests[i], refusals[i])
	}
	return s
}

// Width and Height are the SVG's size, for the template.
func (*Sparkline) Width() int  { return sparkWidth }
func (*Sparkline) Height() int { return sparkHeight }

// RequestPoints and RefusalPoints are the polylines' points attributes.
func (s *Sparkline) RequestPoints() string { return s.points(&s.Requests) }
func (s *Sparkline) RefusalPoints() string { return s.points(&s.Refusals) }

// points maps the series to x from 1 to width-1 (one point per minute)
// and y from height-1 (none) to 1 (the peak).
func (s *Sparkline) points(series *[SparkMinutes]int64) string {
	var b strings.Builder
	peak := max(s.Peak, 1)
	for i, n := range series {
		x := 1 + float64(i)*float64(sparkWidth-2)/(SparkMinutes-1)
		y := float64(sparkHeight-1) - float64(n)*float64(sparkHeight-2)/float64(peak)
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(strconv.FormatFloat(x, 'f', 1, 64))
		b.WriteByte(',')
		b.WriteString(strconv.FormatFloat(y, 'f', 1, 64))
	}
	return b.String()
}

// Title describes the sparkline in words (the SVG's title: a tooltip, and
// what a screen reader says).
func (s *Sparkline) Title() string {
	return fmt.Sprintf("requests per minute, last %d minutes, oldest first: %s; refused: %s",
		SparkMinutes, joinCounts(&s.Requests), joinCounts(&s.Refusals))
}

func joinCounts(series *[SparkMinutes]int64) string {
	parts := make([]string, len(series))
	for i, n := range series {
		parts[i] = strconv.FormatInt(n, 10)
	}
	return strings.Join(parts, " ")
}

// ConnectTarget spells a CONNECT's URL as "host:port (CONNECT)": the audit
// record has "https://host" (the origin judged; 443 not written) or
// "//host:port" (refused before it was judged: the request's own URL).
func ConnectTarget(u string) string {
	hostport, https := strings.CutPrefix(u, "https://")
	if !https {
		hostport = strings.TrimPrefix(u, "//")
	}
	if i := strings.IndexAny(hostport, "/?"); i >= 0 {
		hostport = hostport[:i]
	}
	if _, _, err := net.SplitHostPort(hostport); err != nil && https {
		hostport += ":443"
	}
	return hostport + " (CONNECT)"
}
