package proxy

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/robotsgate/robotsgate/audit"
	"github.com/robotsgate/robotsgate/egress"
	"github.com/robotsgate/robotsgate/policy"
	"github.com/robotsgate/robotsgate/robots"
)

// AdminHandler serves the admin endpoints: /metrics (Prometheus), /healthz,
// /readyz, /explain and the status page at /. Serve it on a separate,
// loopback address: it shows the configuration and traffic.
func (s *Server) AdminHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", s.metrics.Handler())
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok\n")) })
	mux.HandleFunc("GET /readyz", s.readyz)
	mux.HandleFunc("GET /explain", s.explain)
	mux.HandleFunc("GET /{$}", s.statusPage)
	return mux
}

// readyz is ready once the proxy is serving with a loaded configuration
// (and, with a shared pacing store, that store answers).
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	if !s.serving.Load() {
		http.Error(w, "not serving yet\n", http.StatusServiceUnavailable)
		return
	}
	if s.ready != nil {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		if err := s.ready(ctx); err != nil {
			http.Error(w, "not ready: "+err.Error()+"\n", http.StatusServiceUnavailable)
			return
		}
	}
	w.Write([]byte("ready\n"))
}

// Explanation is the /explain answer: the proxy's decision for a URL and
// agent, with what it rests on. It comes from the same code path as a
// request through the proxy.
type Explanation struct {
	URL         string      `json:"url"`
	UserAgent   string      `json:"user_agent"`
	Decision    string      `json:"decision"`
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
	Interval     float64       `json:"pacing_interval_seconds"`
	PaceKey      string        `json:"pacing_key,omitempty"`
	NextSlot     float64       `json:"next_slot_seconds"`
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

func (s *Server) explain(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	ua := cmp.Or(q.Get("ua"), q.Get("agent"))
	e := Explanation{URL: q.Get("url"), UserAgent: ua, Purposes: policy.ParsePurposes(q.Get("purposes")), UsageSignals: []audit.UsageSignal{}}
	status := http.StatusOK
	fetch := q.Get("fetch") == "1" || q.Get("fetch") == "true"
	if e.URL == "" {
		e.Error, status = "missing url parameter (and agent= or ua=, purposes=, fetch=1)", http.StatusBadRequest
	} else if asker, err := askerOf(q, ua, r.RemoteAddr); err != nil {
		e.Error, status = err.Error(), http.StatusBadRequest
	} else if x, err := s.Explain(r.Context(), e.URL, asker, fetch); err != nil {
		e.Error, status = err.Error(), http.StatusBadRequest
	} else if x.Refused != nil {
		e.Decision, e.Error, status = explainError(x.Refused)
	} else {
		d := &x.Decision
		fillExplanation(&e, d, time.Now())
		e.NextSlot = x.NextSlot.Seconds()
		if x.FetchErr != nil {
			e.FetchError = x.FetchErr.Error()
		}
		e.UsageSignals = append(e.UsageSignals, x.Signals...)
		e.TDMRep = tdmrepInfo(d)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(e)
}

// askerOf reads who /explain judges for: ua, the client=ADDRESS and
// user=NAME the clients entries identify, purposes= replacing theirs.
func askerOf(q url.Values, ua, remoteAddr string) (Asker, error) {
	a := Asker{UserAgent: ua, User: q.Get("user"), By: remoteAddr}
	if q.Has("purposes") {
		a.Purposes = policy.ParsePurposes(q.Get("purposes"))
	}
	if c := q.Get("client"); c != "" {
		addr, err := netip.ParseAddr(c)
		if err != nil {
			return Asker{}, fmt.Errorf("client=%q: not an IP address", c)
		}
		a.Addr = addr
	}
	return a, nil
}

func tdmrepInfo(d *policy.Decision) *TDMRepInfo {
	t := d.TDMRep
	if t == nil {
		return nil
	}
	info := &TDMRepInfo{URL: t.URL, Status: t.Status.String(), HTTPStatus: t.HTTPStatus}
	if t.Err != nil {
		info.Error = t.Err.Error()
	}
	return info
}

func explainError(err error) (decision, message string, status int) {
	var denied *egress.DeniedError
	var port *egress.PortError
	switch {
	case errors.As(err, &denied) || errors.As(err, &port):
		return audit.EgressDenied, err.Error(), http.StatusOK
	case errors.Is(err, policy.ErrClientDenied):
		return audit.ClientDenied, err.Error(), http.StatusOK
	case errors.Is(err, policy.ErrAuthRequired):
		return audit.AuthRequired, "no clients entry with that user applies to that client", http.StatusOK
	}
	return "", err.Error(), http.StatusBadRequest
}

func fillExplanation(e *Explanation, d *policy.Decision, now time.Time) {
	e.Decision, e.Note = d.Verdict.String(), d.Note
	c := d.Request.Client
	e.ClientRule, e.Mode, e.Agent, e.Purposes = c.Name, c.Mode.String(), c.Agent, c.Purposes
	if d.Response != nil {
		e.Note = withheldNote(d.Response, !d.Refused())
	}
	e.Interval, e.PaceKey = d.Interval.Seconds(), d.PaceKey
	if d.Robots == nil {
		return
	}
	res := d.Robots
	e.Robots = &RobotsInfo{URL: res.URL(), Status: res.Status.String(), HTTPStatus: res.HTTPStatus,
		FetchedAt: res.FetchedAt().UTC(), AgeSeconds: res.Age(now).Seconds(), Expires: res.Expires().UTC(), Stale: res.Stale}
	if err := res.Err(); err != nil {
		e.Robots.Error = err.Error()
	}
	if res.File == nil {
		return
	}
	g := d.Rule.Group
	e.Group, e.GroupLines = g.Name(), g.Lines()
	if d.Rule.Matched {
		e.Rule, e.Line, e.Canonical = d.Rule.Rule.String(), d.Rule.Rule.Line, d.Rule.Canonical
	}
	e.CrawlDelay, e.RequestRate = g.CrawlDelay().Seconds(), g.RequestInterval().Seconds()
	e.ContentUsage, e.Signals = g.ContentUsage(d.Request.Target), res.File.ContentSignals()
}

// statusView is what the status page template renders.
type statusView struct {
	Started, Now  time.Time
	Listen, Admin string
	MITM          bool
	StrictPaths   bool
	Clients       int
	Sites         int
	BlockPrivate  bool
	Cached        int
	Hits, Misses  uint64
	statsView
	TLSFailures []tlsFailureCount // clients that failed the intercepted handshake
	TLSLast     string
}

func (s *Server) statusPage(w http.ResponseWriter, r *http.Request) {
	st := s.settings()
	rs := s.resolver.Stats()
	v := statusView{
		Started: s.stats.started, Now: time.Now(), Listen: st.cfg.Listen, Admin: st.cfg.AdminListen,
		MITM: st.cfg.MITM.Enabled, StrictPaths: st.cfg.Robots.StrictPaths, Clients: len(st.cfg.Clients),
		Sites: len(st.cfg.Sites), BlockPrivate: st.cfg.Egress.BlockPrivateNetworks,
		Cached: rs.Entries, Hits: rs.Hits, Misses: rs.Misses,
	}
	v.statsView = s.stats.view(20, v.Now)
	v.TLSFailures, v.TLSLast = s.tlsFails.snapshot()
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if err := statusTemplate.Execute(w, v); err != nil {
		s.log.Error("status page", "err", err)
	}
}

// formatDuration rounds a duration for people: "250 ms" under a second,
// then seconds with three significant digits ("1.00 s", "12.5 s"), whole
// seconds from 100 s.
func formatDuration(d time.Duration) string {
	if r := d.Round(time.Millisecond); r < time.Second {
		return fmt.Sprintf("%d ms", max(r, 0)/time.Millisecond)
	}
	switch sec := d.Seconds(); {
	case sec < 9.995:
		return fmt.Sprintf("%.2f s", sec)
	case sec < 99.95:
		return fmt.Sprintf("%.1f s", sec)
	default:
		return fmt.Sprintf("%.0f s", sec)
	}
}

// formatAge rounds how long ago something was to its two largest units:
// "12 s", "3 min 5 s", "2 h 10 min", "3 d 4 h".
func formatAge(d time.Duration) string {
	d = max(d.Round(time.Second), 0)
	const day = 24 * time.Hour
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%d s", d/time.Second)
	case d < time.Hour:
		return fmt.Sprintf("%d min %d s", d/time.Minute, d%time.Minute/time.Second)
	case d < day:
		return fmt.Sprintf("%d h %d min", d/time.Hour, d%time.Hour/time.Minute)
	}
	return fmt.Sprintf("%d d %d h", d/day, d%day/time.Hour)
}

// recordTarget is what the status page shows of a record's request: its
// URL, or "host:port (CONNECT)" for a CONNECT.
func recordTarget(rec audit.Record) string {
	if rec.Method == http.MethodConnect {
		return connectTarget(rec.URL)
	}
	return rec.URL
}

// statusText is a decision's status code, "none" when nothing is sent.
func statusText(code int) string {
	if code == 0 {
		return "none"
	}
	return strconv.Itoa(code)
}

var statusTemplate = template.Must(template.New("status").Funcs(template.FuncMap{
	"ago":      func(t, now time.Time) string { return formatAge(now.Sub(t)) },
	"at":       func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 MST") },
	"dur":      formatDuration,
	"ms":       func(ms float64) string { return formatDuration(time.Duration(ms * float64(time.Millisecond))) },
	"target":   recordTarget,
	"upper":    strings.ToUpper,
	"minutes":  func() int { return sparkMinutes },
	"statusOf": statusText,
}).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>robotsgate status</title>
<style>
body{font-family:system-ui,sans-serif;margin:2em;color:#222}
nav{display:flex;flex-wrap:wrap;gap:.5em 1.5em;align-items:center;margin-bottom:1em}
nav form{display:flex;flex-wrap:wrap;gap:.4em;align-items:center;margin:0}
table{border-collapse:collapse;margin-bottom:1.5em;width:100%;table-layout:fixed}
table.compact{width:auto;max-width:100%;table-layout:auto}
td,th{border:1px solid #ccc;padding:.25em .6em;text-align:left;vertical-align:top;overflow-wrap:anywhere}
th{background:#f3f3f3}
th.n{width:6.5em}
th.time{width:5.5em}
th.client{width:10em}
th.method{width:5.5em}
th.decision{width:9em}
th.rule{width:14em}
th.spark{width:11.5em}
.num{text-align:right}
tr.zero td{color:#999}
svg.spark{display:block}
svg.spark polyline{fill:none;stroke-width:1.5}
.req{stroke:#1d4ed8;color:#1d4ed8}
.ref{stroke:#c81e1e;color:#c81e1e}
.peak{font-size:.8em;color:#555}
.bad{color:#c81e1e;font-weight:bold}
.ok{color:#15803d;font-weight:bold}
.note{color:#555}
</style></head>
<body>
<h1>robotsgate</h1>
<nav>
<a href="metrics">Metrics (/metrics)</a>
<form method="get" action="explain"><label>Explain a decision: URL <input name="url" size="40" required placeholder="https://example.com/page"></label>
<label>agent <input name="agent" size="16" placeholder="ExampleBot/1.0"></label>
<label>purposes <input name="purposes" size="14" placeholder="train-ai,search"></label>
<label><input type="checkbox" name="fetch" value="1"> fetch the page for its signals</label>
<button type="submit">Explain (/explain)</button></form>
</nav>
<p id="uptime">Up since {{at .Started}} ({{ago .Started .Now}}).</p>
<p id="reload">Last reload: {{with .Reload}}{{if .Err}}<span class="bad">rejected</span> at {{at .At}} ({{ago .At $.Now}} ago): {{.Err}} (the previous configuration stays in force){{else}}<span class="ok">ok</span> at {{at .At}} ({{ago .At $.Now}} ago){{end}}{{else}}none since start.{{end}}</p>

<h2>Configuration</h2>
<table id="config" class="compact">
<tr><th>Proxy address</th><td>{{.Listen}}</td></tr>
<tr><th>Admin address</th><td>{{.Admin}}</td></tr>
<tr><th>HTTPS interception</th><td>{{if .MITM}}on{{else}}off{{end}}</td></tr>
<tr><th>Evasion guard (strict paths)</th><td>{{if .StrictPaths}}on{{else}}off{{end}}</td></tr>
<tr><th>Private networks blocked</th><td>{{if .BlockPrivate}}yes{{else}}no{{end}}</td></tr>
<tr><th>Client rules / site rules</th><td>{{.Clients}} / {{.Sites}}</td></tr>
<tr><th>robots.txt cached</th><td>{{.Cached}} origins ({{.Hits}} hits, {{.Misses}} misses)</td></tr>
</table>

<h2>Busiest origins</h2>
<p class="note">Last {{minutes}} minutes, one point a minute: <span class="req">requests</span> and <span class="ref">refusals</span>, on one scale.</p>
<table id="busiest"><tr><th>Origin</th><th class="n">Requests</th><th class="n">Refused</th><th class="n">Upstream failures</th><th class="spark">Last {{minutes}} minutes</th></tr>
{{range .Busiest}}<tr><td>{{.Origin}}</td><td class="num">{{.Requests}}</td><td class="num">{{.Refused}}</td><td class="num">{{.Failed}}</td><td>{{with .Spark}}<svg class="spark" width="{{.Width}}" height="{{.Height}}" viewBox="0 0 {{.Width}} {{.Height}}" role="img"><title>{{.Title}}</title><polyline class="req" points="{{.RequestPoints}}"></polyline><polyline class="ref" points="{{.RefusalPoints}}"></polyline></svg><span class="peak">peak {{.Peak}}/min</span>{{end}}</td></tr>
{{else}}<tr><td colspan="5">No traffic yet.</td></tr>{{end}}</table>

<h2>Most refused origins</h2>
<p class="note">Refused by robots.txt or the proxy's policy (upstream failures are counted apart, below).</p>
<table id="refusing"><tr><th>Origin</th><th class="n">Refused</th><th class="n">Requests</th></tr>
{{range .Refusing}}<tr><td>{{.Origin}}</td><td class="num">{{.Refused}}</td><td class="num">{{.Requests}}</td></tr>
{{else}}<tr><td colspan="3">No refusals.</td></tr>{{end}}</table>

<h2>Upstream failures</h2>
<p class="note">Allowed requests the origin did not complete: its name did not resolve, the connection failed or timed out, its answer was broken. Not refusals.</p>
<table id="failing"><tr><th>Origin</th><th class="n">Failures</th><th class="n">Requests</th></tr>
{{range .Failing}}<tr><td>{{.Origin}}</td><td class="num">{{.Failed}}</td><td class="num">{{.Requests}}</td></tr>
{{else}}<tr><td colspan="3">No upstream failures.</td></tr>{{end}}</table>

<h2>Paced origins</h2>
<table id="paced"><tr><th>Origin</th><th class="n">Interval</th><th class="n">Held now</th><th class="n">Last wait</th></tr>
{{range .Paced}}<tr><td>{{.Origin}}</td><td>{{dur .Interval}}</td><td class="num">{{.Held}}</td><td>{{dur .LastWait}}</td></tr>
{{else}}<tr><td colspan="4">No paced origins.</td></tr>{{end}}</table>

<h2>Decisions since start</h2>
<p class="note">Every decision value, zeros included. An allowed request whose origin then failed counts as allow here, as in the audit log and <code>robotsgate_requests_total</code>, and as an upstream failure above.</p>
<table id="decisions" class="compact"><tr><th>Decision</th><th>Kind</th><th>Status</th><th>Requests</th></tr>
{{range .Decisions}}<tr{{if not .Count}} class="zero"{{end}}><td>{{.Name}}</td><td>{{.Kind}}</td><td>{{statusOf .Status}}</td><td class="num">{{.Count}}</td></tr>
{{end}}</table>

<h2>Client TLS failures</h2>
<table id="tls-failures" class="compact"><tr><th>Reason</th><th>Handshakes</th></tr>
{{range .TLSFailures}}<tr><td>{{.Reason}}</td><td class="num">{{.Count}}</td></tr>
{{else}}<tr><td colspan="2">None: every intercepting client trusted robotsgate's CA.</td></tr>{{end}}</table>
{{if .TLSLast}}<p id="tls-last">Last: {{.TLSLast}}</p>{{end}}

<h2>Recent refusals</h2>
<table id="recent"><tr><th class="time">Time (UTC)</th><th class="client">Client</th><th class="method">Method</th><th>URL</th><th class="decision">Decision</th><th class="rule">Rule</th></tr>
{{range .Recent}}<tr><td>{{.Time.Format "15:04:05"}}</td><td>{{.Client}}</td><td>{{.Method}}</td><td>{{target .}}</td><td>{{.Decision}}</td><td>{{if .Rule}}{{.Rule}} (line {{.Line}}){{end}}</td></tr>
{{else}}<tr><td colspan="6">No refusals.</td></tr>{{end}}</table>

<h2>Recent upstream failures</h2>
<table id="recent-failures"><tr><th class="time">Time (UTC)</th><th class="client">Client</th><th class="method">Method</th><th>URL</th><th class="n">Status</th><th class="n">Took</th></tr>
{{range .RecentFailures}}<tr><td>{{.Time.Format "15:04:05"}}</td><td>{{.Client}}</td><td>{{.Method}}</td><td>{{target .}}</td><td class="num">{{.Status}}</td><td class="num">{{ms .DurationMS}}</td></tr>
{{else}}<tr><td colspan="6">No upstream failures.</td></tr>{{end}}</table>
</body></html>
`))
