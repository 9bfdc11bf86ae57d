package report

import (
	"bufio"
	"bytes"
	"cmp"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/robotsgate/robotsgate/paycrawl"
	"io/fs"
	"math"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/robotsgate/robotsgate/archive"
	"github.com/robotsgate/robotsgate/audit"
	"github.com/robotsgate/robotsgate/compliance"
	"github.com/robotsgate/robotsgate/robots"
)

// Options says what Build reads.
type Options struct {
	// Audit are the audit logs (log.audit), rotated ones and those of
	// several proxies alike: they are merged by time.
	Audit []string
	// Archive is the robots.txt archive (archive.dir); "" reads none (the
	// report then lacks the versions' texts and the intervals asked).
	Archive string
	// Since and Until bound the records by arrival time, both included;
	// zero means unbounded.
	Since, Until time.Time
	// Now is when the report is made; zero means time.Now.
	Now time.Time
	// Key is the evidence key the audit log's checkpoints must be signed
	// with; nil counts them without verifying.
	Key ed25519.PublicKey
	// Partial accepts audit logs whose first line links to a line that is
	// not among them (rotated logs whose predecessors are gone); without
	// it such a chain is not whole, since its first lines may have been cut.
	// Legacy accepts lines without a link (written before the chain).
	Partial, Legacy bool
	// Interval is the checkpoint interval assumed for checkpoints that
	// state none (the configuration's); Witness, when set, what a witness
	// saw of the audit log (compliance.ChainOptions).
	Interval audit.Interval
	Witness  *compliance.Witnessed
}

// Build reads the audit logs once and the archive's fetch logs once and
// returns the report.
func Build(opts Options) (*Report, error) {
	if len(opts.Audit) == 0 {
		return nil, errors.New("report: no audit log")
	}
	a := newAggregator(opts)
	if err := readMerged(opts.Audit, a.record, a.skip); err != nil {
		return nil, err
	}
	if opts.Archive != "" {
		if err := a.readFetches(); err != nil {
			return nil, err
		}
	}
	co := compliance.ChainOptions{Key: opts.Key, Interval: opts.Interval, Witness: opts.Witness}
	chain, err := compliance.CheckChain(opts.Audit, co)
	if err != nil {
		return nil, err
	}
	fetches := &compliance.ChainResult{}
	if opts.Archive != "" {
		if fetches, err = compliance.CheckFetchLogs(opts.Archive, co); err != nil {
			return nil, err
		}
	}
	r := a.report()
	r.Chain = chainSummary(chain, fetches, compliance.Accept{Partial: opts.Partial, Legacy: opts.Legacy})
	return r, nil
}

// maxDistinct bounds the clients and agents listed.
const maxDistinct = 1000

// kind is what became of a request.
type kind int

const (
	kindAllowed kind = iota
	kindRefused
	kindMonitored
	kindOther
)

type clientKey struct{ addr, user, rule string }

// aggregator keeps what the report needs while the audit streams by.
type aggregator struct {
	opts    Options
	bodies  *compliance.Bodies // nil without an archive
	refusal map[string]bool    // decision -> is a refusal
	records int64
	outside int64
	first   time.Time
	last    time.Time
	totals  Counts
	decided map[string]*decided
	clients capped[clientKey] // requests (not tunnels) by client
	agents  capped[string]    // requests by agent
	// clientTunnels counts the tunnels (CONNECTs) by client, apart from
	// their requests.
	clientTunnels capped[clientKey]
	timeline      timeline
	origins       map[string]*originAgg
	missing       map[string]bool // bodies the archive lacks
	// sentRecorded and sentEstimated count the paced requests by where
	// their send time came from (PacingSummary).
	sentRecorded, sentEstimated int64
	badFetch                    int64 // unreadable fetch-log lines
	// skipped are the audit lines that are not records (the first
	// maxSkippedListed named); skippedN counts them all.
	skippedMu sync.Mutex
	skipped   []string
	skippedN  int
}

// maxSkippedListed bounds the skipped audit lines the report names.
const maxSkippedListed = 20

// skip notes an audit line that is not a record; several files are read
// at once.
func (a *aggregator) skip(file string, line int, err error) {
	a.skippedMu.Lock()
	defer a.skippedMu.Unlock()
	a.skippedN++
	if len(a.skipped) < maxSkippedListed {
		a.skipped = append(a.skipped, fmt.Sprintf("%s:%d: skipped: %v", file, line, err))
	}
}

type originAgg struct {
	name     string
	counts   Counts
	decided  map[string]*decided
	rules    map[ruleKey]*RuleCount
	signals  map[signalKey]*SignalCount
	otherSig int64                  // refusals by signals beyond maxSignalRows
	versions map[string]*versionAgg // by SHA-256, or "status:" + robots status
	keys     map[string]*paceAgg    // by group
	hold     float64
	pauses   pauseAgg
	paid     map[string]*paidAgg // by currency
	unread   int64               // charges not read, or beyond maxPaidCurrencies
	over     int64               // charges above the price quoted
}

// maxPaidCurrencies bounds the currencies summed per origin: the values
// come from origins.
const maxPaidCurrencies = 8

// paidAgg sums one currency's charges, in millionths (paycrawl.Scale).
type paidAgg struct {
	amount, requests int64
}

// charge adds a record's crawler_charged to the origin's sums.
func (o *originAgg) charge(charged string) {
	p, err := paycrawl.Parse(charged)
	agg := o.paid[p.Currency]
	if err == nil && agg == nil && len(o.paid) < maxPaidCurrencies {
		agg = &paidAgg{}
		o.paid[p.Currency] = agg
	}
	if err != nil || agg == nil || agg.amount > math.MaxInt64-p.Amount {
		o.unread++
		return
	}
	agg.amount += p.Amount
	agg.requests++
}

type ruleKey struct{ decision, rule, sha string }

type signalKey struct{ signal, value, where, policy, refuses, licenseFor, sha string }

// maxSignalRows bounds the signals kept per origin: an origin may write
// a header value of its own in every response.
const maxSignalRows = 50

// responseSignals are the kinds read from the origin's response.
var responseSignals = map[string]bool{
	audit.SignalHeaderTDMReservation: true, audit.SignalHeaderContentUsage: true, audit.SignalXRobotsTag: true,
	audit.SignalMetaTDMReservation: true, audit.SignalMetaRobots: true,
	audit.SignalHeaderContentSignal: true, audit.SignalRobotsTag: true,
}

// countSignals counts a refusal under each AI-usage signal that refused it.
func (o *originAgg) countSignals(rec *audit.Record, refused bool) {
	for _, s := range rec.Usage {
		// An RSL licence refuses by prohibiting a purpose, or by needing a
		// licence server's token for one (license-required).
		licence := s.Signal == audit.SignalRSL && s.License != ""
		if len(s.Refuses) == 0 && !(licence && rec.Decision == audit.LicenseRequired && s.Server != "") {
			continue
		}
		key := signalKey{s.Signal, s.Value, s.Where, s.Policy, strings.Join(s.Refuses, ","), strings.Join(s.LicenseFor, ","), ""}
		switch {
		case s.Signal == audit.SignalTDMRep:
			key.sha = rec.TDMRepSHA256
		case licence:
			key.sha, key.policy = s.SHA256, s.License
		}
		c := o.signals[key]
		if c == nil {
			if len(o.signals) >= maxSignalRows {
				o.otherSig++
				continue
			}
			c = &SignalCount{Signal: s.Signal, Value: s.Value, Where: s.Where, Policy: s.Policy, Refuses: slices.Clone(s.Refuses),
				TDMRepSHA256: key.sha, OriginAnswered: responseSignals[s.Signal], Example: rec.URL}
			if licence {
				// The licence named by a response (a Link header, a <link>
				// tag) refused after the origin answered.
				c.TDMRepSHA256, c.License, c.LicenseSHA256, c.Server = "", s.License, s.SHA256, s.Server
				c.LicenseFor, c.Terms = slices.Clone(s.LicenseFor), slices.Clone(s.Terms)
				c.OriginAnswered = !strings.HasPrefix(s.Where, "robots.txt")
			}
			o.signals[key] = c
		}
		if refused {
			c.Count++
		} else {
			c.Monitored++
		}
	}
}

type versionAgg struct {
	sha, status         string
	records             int64
	firstUsed, lastUsed time.Time
	fetch               *fetchAgg
}

// fetchAgg sums up the fetches that gave one version of an origin.
type fetchAgg struct {
	first, last            time.Time // every fetch up to Until
	firstStatus            int
	statuses               []int
	inRange, revalidations int64
	lastFetch              archive.Fetch // the latest (its headers)
}

type paceAgg struct {
	group    string
	asked    map[Asked]int64 // Requests zero in the key
	paced    int64
	notPaced int64
	unknown  int64
	late     int64
	hold     float64
	window   gapWindow
	stats    gapStats
}

// capped counts up to maxDistinct keys, and the records of the others.
type capped[K comparable] struct {
	m      map[K]int64
	others int64
}

func (c *capped[K]) add(k K) {
	if c.m == nil {
		c.m = map[K]int64{}
	}
	if n, ok := c.m[k]; ok || len(c.m) < maxDistinct {
		c.m[k] = n + 1
		return
	}
	c.others++
}

func newAggregator(opts Options) *aggregator {
	a := &aggregator{
		opts:    opts,
		refusal: map[string]bool{},
		decided: map[string]*decided{},
		origins: map[string]*originAgg{},
		missing: map[string]bool{},
	}
	for _, d := range audit.Decisions() {
		a.refusal[d.Name] = d.Refusal
	}
	if opts.Archive != "" {
		a.bodies = compliance.NewBodies(opts.Archive)
	}
	return a
}

func (a *aggregator) inRange(t time.Time) bool {
	return (a.opts.Since.IsZero() || !t.Before(a.opts.Since)) && (a.opts.Until.IsZero() || !t.After(a.opts.Until))
}

// record takes one audit record into account.
func (a *aggregator) record(rec *audit.Record) error {
	if !a.inRange(rec.Time) {
		a.outside++
		return nil
	}
	a.records++
	if a.first.IsZero() || rec.Time.Before(a.first) {
		a.first = rec.Time
	}
	if rec.Time.After(a.last) {
		a.last = rec.Time
	}
	if refresh(rec) {
		// An operator's refresh (robotsgate refresh, POST /refresh) is no
		// client's request: counted apart, under its origin.
		a.totals.Refreshes++
		a.origin(originOf(rec.URL)).counts.Refreshes++
		return nil
	}
	k := a.kindOf(rec)
	forwarded := rec.UpstreamStatus != 0
	a.totals.add(k, forwarded, rec)
	client := clientKey{clientAddr(rec.Client), rec.User, rec.ClientRule}
	if rec.Method == "CONNECT" {
		a.clientTunnels.add(client)
	} else {
		countDecision(a.decided, rec.Decision, k == kindMonitored)
		a.clients.add(client)
		a.agents.add(rec.Agent)
		a.timeline.add(rec.Time, k == kindAllowed, k == kindRefused)
	}

	o := a.origin(recordOrigin(rec))
	o.counts.add(k, forwarded, rec)
	if rec.Method != "CONNECT" {
		countDecision(o.decided, rec.Decision, k == kindMonitored)
	}
	o.hold = max(o.hold, rec.WaitMS)
	// A rule refused only a disallow: another refusal (usage-denied, rate-limited)
	// names the rule that allowed the path.
	if (k == kindRefused || k == kindMonitored) && rec.Rule != "" && rec.Decision == audit.Disallow {
		key := ruleKey{rec.Decision, rec.Rule, rec.RobotsSHA256}
		r := o.rules[key]
		if r == nil {
			r = &RuleCount{Decision: rec.Decision, Rule: rec.Rule, Line: rec.Line, SHA256: rec.RobotsSHA256, Example: rec.URL}
			o.rules[key] = r
		}
		if k == kindRefused {
			r.Count++
		} else {
			r.Monitored++
		}
	}
	if k == kindRefused || k == kindMonitored {
		o.countSignals(rec, k == kindRefused)
	}
	if key := versionKey(rec.RobotsSHA256, rec.RobotsStatus); key != "" {
		v := o.version(key, rec.RobotsSHA256, rec.RobotsStatus)
		v.records++
		if v.firstUsed.IsZero() || rec.Time.Before(v.firstUsed) {
			v.firstUsed = rec.Time
		}
		if rec.Time.After(v.lastUsed) {
			v.lastUsed = rec.Time
		}
	}
	if rec.Decision == "allow" && forwarded {
		a.pace(o, rec)
	}
	o.pauses.record(rec, rec.Decision == "allow" && forwarded && pacedRecord(rec))
	if rec.CrawlerCharged != "" {
		o.charge(rec.CrawlerCharged)
	}
	if rec.CrawlerOvercharged {
		o.over++
	}
	return nil
}

// decided counts the records of one decision value; monitored of them
// were refusals only logged (monitor mode).
type decided struct{ count, monitored int64 }

func countDecision(m map[string]*decided, decision string, monitored bool) {
	d := m[decision]
	if d == nil {
		d = &decided{}
		m[decision] = d
	}
	d.count++
	if monitored {
		d.monitored++
	}
}

// refresh reports whether rec is an operator's refresh of an origin (its
// robots.txt fetched again through the admin listener), not a request.
func refresh(rec *audit.Record) bool { return rec.Via == audit.ViaAdmin }

// recordOrigin is the origin a record counts under: its URL's, except for
// a tunnel that carried plain HTTP (a CONNECT or SOCKS5 tunnel to port
// 80), whose requests were judged as the http:// origin its note names:
// the tunnel counts there, not under an https:// origin it never spoke to.
func recordOrigin(rec *audit.Record) string {
	if rec.Method == "CONNECT" {
		if _, o, ok := strings.Cut(rec.Note, audit.NotePlainHTTPTunnel); ok {
			if end := strings.IndexAny(o, "; "); end >= 0 {
				o = o[:end]
			}
			if strings.HasPrefix(o, "http://") {
				return o
			}
		}
	}
	return originOf(rec.URL)
}

// pacedRecord reports whether a forwarded request is one the proxy paces:
// an enforced client's, not a CONNECT, not robots.txt itself.
func pacedRecord(rec *audit.Record) bool {
	return rec.Mode == "enforce" && rec.Method != "CONNECT" && !robots.IsRobotsTxt(compliance.Target(rec.URL))
}

// kindOf classifies a record.
func (a *aggregator) kindOf(rec *audit.Record) kind {
	switch {
	case rec.Decision == "allow":
		return kindAllowed
	case !a.refusal[rec.Decision]:
		return kindOther
	case rec.Enforced:
		return kindRefused
	}
	return kindMonitored
}

func (c *Counts) add(k kind, forwarded bool, rec *audit.Record) {
	if rec.Method == "CONNECT" {
		c.Tunnels.add(k, rec)
		return
	}
	c.Requests++
	switch k {
	case kindAllowed:
		c.Allowed++
	case kindRefused:
		c.Refused++
	case kindMonitored:
		c.Monitored++
	default:
		c.Other++
	}
	if forwarded {
		c.Forwarded++
	}
}

func (t *Tunnels) add(k kind, rec *audit.Record) {
	switch {
	case k == kindRefused:
		t.Refused++
	case k == kindMonitored:
		t.Monitored++
	case k != kindAllowed:
		t.Failed++
	case strings.HasPrefix(rec.Note, audit.NoteTunnelIntercepted), strings.HasPrefix(rec.Note, audit.NotePlainHTTPTunnel):
		t.Intercepted++
	default:
		t.Blind++
	}
}

// pace takes a forwarded request into its key's gaps.
func (a *aggregator) pace(o *originAgg, rec *audit.Record) {
	p := o.keys[rec.Group]
	if p == nil {
		p = &paceAgg{group: rec.Group, asked: map[Asked]int64{}}
		o.keys[rec.Group] = p
	}
	if !pacedRecord(rec) {
		p.notPaced++
		return
	}
	p.paced++
	p.hold = max(p.hold, rec.WaitMS)
	asked, known := a.asked(rec)
	if known {
		p.asked[asked]++
	} else {
		p.unknown++
	}
	// sent_ms is when the request was sent; records of versions without it
	// are estimated from the hold (sendTime), which matters only for a
	// request asked an interval.
	switch {
	case rec.SentMS > 0:
		a.sentRecorded++
	case asked.IntervalSeconds > 0:
		a.sentEstimated++
	}
	at := sendTime(rec)
	if !p.window.add(send{at: at, asked: int64(asked.IntervalSeconds * float64(time.Second))}, &p.stats) {
		p.late++
	}
}

// asked returns the interval the record's robots.txt version asked of its
// agent, and whether it is known: not when the archive lacks the body or
// the record names none although robots.txt was read (the archive was
// off).
func (a *aggregator) asked(rec *audit.Record) (Asked, bool) {
	if rec.RobotsSHA256 == "" {
		// No body: robots.txt unavailable (no rules, no delay) or not
		// consulted; unknown when a body was read but not archived.
		return Asked{}, rec.RobotsStatus != "ok"
	}
	if a.bodies == nil {
		return Asked{}, false
	}
	f, err := a.bodies.File(rec.RobotsSHA256)
	if err != nil {
		a.missing[rec.RobotsSHA256] = true
		return Asked{}, false
	}
	g := f.GroupForUserAgent(rec.Agent)
	return Asked{
		SHA256:                 rec.RobotsSHA256,
		CrawlDelaySeconds:      g.CrawlDelay().Seconds(),
		RequestIntervalSeconds: g.RequestInterval().Seconds(),
		IntervalSeconds:        g.Interval().Seconds(),
	}, true
}

func (a *aggregator) origin(name string) *originAgg {
	o := a.origins[name]
	if o == nil {
		o = &originAgg{
			name: name, decided: map[string]*decided{}, rules: map[ruleKey]*RuleCount{}, signals: map[signalKey]*SignalCount{},
			versions: map[string]*versionAgg{}, keys: map[string]*paceAgg{}, paid: map[string]*paidAgg{},
		}
		a.origins[name] = o
	}
	return o
}

func (o *originAgg) version(key, sha, status string) *versionAgg {
	v := o.versions[key]
	if v == nil {
		v = &versionAgg{sha: sha, status: status}
		o.versions[key] = v
	}
	if v.status == "" {
		v.status = status
	}
	return v
}

// versionKey names a version: its body, or the absence of one with the
// status that stood in for it; "" when robots.txt was not consulted.
func versionKey(sha, status string) string {
	switch {
	case sha != "":
		return sha
	case status != "":
		return "status:" + status
	}
	return ""
}

// originOf returns the origin of an audit record's URL: scheme://authority,
// or for a request refused before it was judged (a CONNECT, a malformed
// request) what it named.
func originOf(rawURL string) string {
	i := strings.Index(rawURL, "://")
	if i < 0 {
		if s := strings.TrimPrefix(rawURL, "//"); s != "" {
			return s
		}
		return "(none)"
	}
	if j := strings.IndexAny(rawURL[i+3:], "/?#"); j >= 0 {
		return rawURL[:i+3+j]
	}
	return rawURL
}

// clientAddr drops the port of a client address.
func clientAddr(addr string) string {
	if host, _, err := net.SplitHostPort(addr); err == nil {
		return host
	}
	return addr
}

// readFetches reads the archive's fetch logs for the origins of the
// report.
func (a *aggregator) readFetches() error {
	logs, err := archive.FetchLogs(a.opts.Archive)
	if err != nil {
		return err
	}
	for _, name := range logs {
		if err := a.readFetchLog(name); err != nil {
			return err
		}
	}
	return nil
}

// checkpointField marks a checkpoint line (auditlog.CheckpointObject): a
// fetch's strings cannot hold it unescaped.
var checkpointField = []byte(`"checkpoint":{`)

func (a *aggregator) readFetchLog(name string) error {
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if len(strings.TrimSpace(sc.Text())) == 0 || bytes.Contains(sc.Bytes(), checkpointField) {
			continue // a checkpoint of the fetch log's chain: no fetch
		}
		var ft archive.Fetch
		if err := json.Unmarshal(sc.Bytes(), &ft); err != nil {
			a.badFetch++ // a line cut short by a crash: the others stand
			continue
		}
		a.fetch(&ft)
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// fetch takes one fetch-log line into account: robots.txt's only (the
// archive also logs other files of an origin, such as tdmrep.json).
func (a *aggregator) fetch(ft *archive.Fetch) {
	o := a.origins[ft.Origin]
	if o == nil || !a.opts.Until.IsZero() && ft.Time.After(a.opts.Until) || !isRobotsFetch(ft) {
		return
	}
	v := o.version(versionKey(ft.SHA256, ft.Outcome), ft.SHA256, ft.Outcome)
	fa := v.fetch
	if fa == nil {
		fa = &fetchAgg{}
		v.fetch = fa
	}
	if fa.first.IsZero() || ft.Time.Before(fa.first) {
		fa.first, fa.firstStatus = ft.Time, ft.HTTPStatus
	}
	if !ft.Time.Before(fa.last) {
		fa.last, fa.lastFetch = ft.Time, *ft
	}
	if !slices.Contains(fa.statuses, ft.HTTPStatus) && len(fa.statuses) < 16 {
		fa.statuses = append(fa.statuses, ft.HTTPStatus)
	}
	if a.opts.Since.IsZero() || !ft.Time.Before(a.opts.Since) {
		fa.inRange++
		if ft.HTTPStatus == 304 {
			fa.revalidations++
		}
	}
}

// isRobotsFetch reports whether a fetch line is a robots.txt's: its
// robots_url names /robots.txt (or nothing, as in some early logs).
func isRobotsFetch(ft *archive.Fetch) bool {
	return ft.RobotsURL == "" || strings.HasSuffix(ft.RobotsURL, "/robots.txt")
}

// report states the aggregates.
func (a *aggregator) report() *Report {
	r := &Report{
		Generated:  cmp.Or(a.opts.Now, time.Now()).UTC(),
		AuditFiles: a.opts.Audit,
		ArchiveDir: a.opts.Archive,
		Since:      timePtr(a.opts.Since),
		Until:      timePtr(a.opts.Until),
		First:      timePtr(a.first),
		Last:       timePtr(a.last),
		Records:    a.records,
		OutOfRange: a.outside,
		Totals:     a.totals,
		Decisions:  a.decisionCounts(a.decided),
		Timeline:   a.timeline.state(maxShownBins),
		Origins:    []Origin{},
		Notes:      []string{},
	}
	for k, n := range a.clients.m {
		r.Clients = append(r.Clients, Client{Address: k.addr, User: k.user, Rule: k.rule, Requests: n, Tunnels: a.clientTunnels.m[k]})
	}
	for k, n := range a.clientTunnels.m {
		if _, ok := a.clients.m[k]; !ok { // tunnels only (blind, or refused)
			r.Clients = append(r.Clients, Client{Address: k.addr, User: k.user, Rule: k.rule, Tunnels: n})
		}
	}
	slices.SortFunc(r.Clients, func(x, y Client) int {
		return cmp.Or(cmp.Compare(y.Requests, x.Requests), cmp.Compare(y.Tunnels, x.Tunnels), cmp.Compare(x.Address, y.Address),
			cmp.Compare(x.User, y.User), cmp.Compare(x.Rule, y.Rule))
	})
	r.OtherClients, r.OtherClientTunnels = a.clients.others, a.clientTunnels.others
	for k, n := range a.agents.m {
		r.Agents = append(r.Agents, Agent{Agent: k, Requests: n})
	}
	slices.SortFunc(r.Agents, func(x, y Agent) int {
		return cmp.Or(cmp.Compare(y.Requests, x.Requests), cmp.Compare(x.Agent, y.Agent))
	})
	r.OtherAgents = a.agents.others
	if r.Clients == nil {
		r.Clients = []Client{}
	}
	if r.Agents == nil {
		r.Agents = []Agent{}
	}

	var total gapStats
	bodies := appendix{bodies: map[string]*Body{}, first: map[string]time.Time{}}
	for _, o := range a.origins {
		out, stats := a.originReport(o)
		total.merge(&stats)
		r.Pacing.LongestHoldMS = max(r.Pacing.LongestHoldMS, out.LongestHoldMS)
		r.Pacing.PauseAnswers += out.Backoff.Answers
		r.Pacing.SentDuringPause += out.Backoff.SentDuringPause
		for _, k := range out.Pacing {
			r.Pacing.Late += k.Late
			r.Pacing.AskedUnknown += k.AskedUnknown
		}
		for _, v := range out.Versions {
			bodies.add(v.SHA256, "robots.txt", o.name, firstSeen(v))
		}
		for _, s := range out.RefusedBySignal {
			bodies.add(s.TDMRepSHA256, "tdmrep.json", o.name, a.last) // listed after the robots.txt versions
			bodies.add(s.LicenseSHA256, "RSL licence", o.name, a.last)
		}
		r.Origins = append(r.Origins, out)
	}
	r.Pacing.GapFigures = total.figures()
	r.Pacing.SentRecorded, r.Pacing.SentEstimated = a.sentRecorded, a.sentEstimated
	slices.SortFunc(r.Origins, func(x, y Origin) int {
		return cmp.Or(cmp.Compare(y.Requests, x.Requests), cmp.Compare(x.Origin, y.Origin))
	})
	for _, b := range bodies.bodies {
		slices.Sort(b.Origins)
		a.stat(b)
		r.Bodies = append(r.Bodies, *b)
	}
	slices.SortFunc(r.Bodies, func(x, y Body) int {
		return cmp.Or(bodies.first[x.SHA256].Compare(bodies.first[y.SHA256]), cmp.Compare(x.SHA256, y.SHA256))
	})
	if r.Bodies == nil {
		r.Bodies = []Body{}
	}
	r.Notes = a.notes(r)
	r.Skipped, r.SkippedLines = a.skippedN, a.skipped
	return r
}

// appendix collects the bodies the report shows, by SHA-256, with the
// origins that served each and when it was first seen (their order).
type appendix struct {
	bodies map[string]*Body
	first  map[string]time.Time
}

// add notes that origin served the body sha ("" adds nothing), seen at
// seen (zero: unknown).
func (ap appendix) add(sha, kind, origin string, seen time.Time) {
	if sha == "" {
		return
	}
	b := ap.bodies[sha]
	if b == nil {
		b = &Body{SHA256: sha, Kind: kind}
		ap.bodies[sha] = b
	}
	if !slices.Contains(b.Origins, origin) {
		b.Origins = append(b.Origins, origin)
	}
	if f := ap.first[sha]; !seen.IsZero() && (f.IsZero() || seen.Before(f)) {
		ap.first[sha] = seen
	}
}

// maxShownBins bounds the timeline's bins in the report.
const maxShownBins = 120

// firstSeen is when a version was first fetched or used.
func firstSeen(v Version) time.Time {
	var t time.Time
	for _, p := range []*time.Time{v.FirstFetched, v.FirstUsed} {
		if p != nil && (t.IsZero() || p.Before(t)) {
			t = *p
		}
	}
	return t
}

// stat fills in what the archive says of a body, without reading it.
func (a *aggregator) stat(b *Body) {
	if a.opts.Archive == "" {
		b.Missing, b.Error = true, "no archive was read"
		return
	}
	fi, err := os.Stat(archive.BodyPath(a.opts.Archive, b.SHA256))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		b.Missing, b.Error = true, "not in the archive"
	case err != nil:
		b.Missing, b.Error = true, err.Error()
	default:
		b.Size = fi.Size()
	}
}

func (a *aggregator) decisionCounts(m map[string]*decided) []DecisionCount {
	out := []DecisionCount{}
	known := map[string]bool{}
	for _, d := range audit.Decisions() {
		known[d.Name] = true
		if n := m[d.Name]; n != nil {
			out = append(out, DecisionCount{Decision: d.Name, Refusal: d.Refusal, Count: n.count, Monitored: n.monitored})
		}
	}
	var unknown []string
	for name := range m {
		if !known[name] {
			unknown = append(unknown, name)
		}
	}
	slices.Sort(unknown)
	for _, name := range unknown {
		out = append(out, DecisionCount{Decision: name, Count: m[name].count, Monitored: m[name].monitored})
	}
	return out
}

// originReport states an origin's aggregates and returns its gaps, all
// keys merged.
func (a *aggregator) originReport(o *originAgg) (Origin, gapStats) {
	out := Origin{
		Origin: o.name, Counts: o.counts, Decisions: a.decisionCounts(o.decided),
		RefusedByRule: []RuleCount{}, Versions: []Version{}, Pacing: []PacingKey{},
		LongestHoldMS: o.hold, Backoff: o.pauses.figures(),
	}
	for _, r := range o.rules {
		out.RefusedByRule = append(out.RefusedByRule, *r)
	}
	out.RefusedBySignal, out.OtherSignals = []SignalCount{}, o.otherSig
	for _, c := range o.signals {
		out.RefusedBySignal = append(out.RefusedBySignal, *c)
	}
	slices.SortFunc(out.RefusedBySignal, func(x, y SignalCount) int {
		return cmp.Or(cmp.Compare(y.Count+y.Monitored, x.Count+x.Monitored), cmp.Compare(x.Signal, y.Signal),
			cmp.Compare(x.Value, y.Value), cmp.Compare(x.Where, y.Where), cmp.Compare(x.Example, y.Example))
	})
	slices.SortFunc(out.RefusedByRule, func(x, y RuleCount) int {
		return cmp.Or(cmp.Compare(y.Count+y.Monitored, x.Count+x.Monitored), cmp.Compare(x.Line, y.Line),
			cmp.Compare(x.Rule, y.Rule), cmp.Compare(x.SHA256, y.SHA256), cmp.Compare(x.Decision, y.Decision))
	})
	for _, v := range o.versions {
		if v.records == 0 && (v.fetch == nil || v.fetch.inRange == 0) {
			continue // neither used nor fetched in the period
		}
		out.Versions = append(out.Versions, a.versionReport(v))
	}
	slices.SortFunc(out.Versions, func(x, y Version) int {
		return cmp.Or(firstSeen(x).Compare(firstSeen(y)), cmp.Compare(x.SHA256, y.SHA256), cmp.Compare(x.RobotsStatus, y.RobotsStatus))
	})
	var all gapStats
	for _, p := range o.keys {
		k := PacingKey{
			Group: p.group, Asked: []Asked{}, Paced: p.paced, NotPaced: p.notPaced, AskedUnknown: p.unknown,
			Late: p.late, GapFigures: p.stats.figures(), LongestHoldMS: p.hold,
		}
		for asked, n := range p.asked {
			asked.Requests = n
			k.Asked = append(k.Asked, asked)
		}
		slices.SortFunc(k.Asked, func(x, y Asked) int {
			return cmp.Or(cmp.Compare(y.Requests, x.Requests), cmp.Compare(x.SHA256, y.SHA256), cmp.Compare(x.IntervalSeconds, y.IntervalSeconds))
		})
		out.Pacing = append(out.Pacing, k)
		all.merge(&p.stats)
	}
	slices.SortFunc(out.Pacing, func(x, y PacingKey) int {
		return cmp.Or(cmp.Compare(y.Paced+y.NotPaced, x.Paced+x.NotPaced), cmp.Compare(x.Group, y.Group))
	})
	out.Gaps = all.figures()
	for cur, p := range o.paid {
		out.Paid = append(out.Paid, Paid{Amount: paycrawl.Price{Currency: cur, Amount: p.amount}.String(), Requests: p.requests})
	}
	slices.SortFunc(out.Paid, func(x, y Paid) int { return cmp.Compare(x.Amount[:3], y.Amount[:3]) })
	out.UnreadCharges, out.Overcharged = o.unread, o.over
	return out, all
}

func (a *aggregator) versionReport(v *versionAgg) Version {
	out := Version{
		SHA256: v.sha, RobotsStatus: v.status, Records: v.records,
		FirstUsed: timePtr(v.firstUsed), LastUsed: timePtr(v.lastUsed),
	}
	if f := v.fetch; f != nil {
		out.FirstFetched, out.LastFetched = timePtr(f.first), timePtr(f.last)
		out.HTTPStatus, out.HTTPStatuses = f.firstStatus, slices.Sorted(slices.Values(f.statuses))
		out.Fetches, out.Revalidations = f.inRange, f.revalidations
		out.CacheControl, out.ETag, out.Cause = f.lastFetch.CacheControl, f.lastFetch.ETag, f.lastFetch.Cause
		if f.lastFetch.SHA256 == v.sha {
			out.Size, out.Truncated = f.lastFetch.Size, f.lastFetch.Truncated
		}
	}
	if v.sha != "" && a.opts.Archive != "" {
		_, err := os.Stat(archive.BodyPath(a.opts.Archive, v.sha))
		out.InArchive = err == nil
	}
	return out
}

// figures states gap counts.
func (g *gapStats) figures() GapFigures {
	f := GapFigures{Gaps: g.gaps, BelowAsked: g.below, Histogram: g.histogram()}
	if g.hasMin && g.gaps > 0 {
		gap, asked, ratio := seconds(g.minGap), seconds(g.minAsked), roundRatio(g.minRatio)
		f.MinGapSeconds, f.MinGapAskedSeconds, f.MinRatio = &gap, &asked, &ratio
	}
	return f
}

// notes says what limits the figures.
func (a *aggregator) notes(r *Report) []string {
	notes := []string{}
	if n := a.skippedN; n > 0 {
		notes = append(notes, fmt.Sprintf("%d %s of the audit logs %s not an audit record and %s skipped (%s): what %s said is not counted.",
			n, plural(n, "line", "lines"), plural(n, "is", "are"), plural(n, "was", "were"), strings.Join(a.skipped[:min(3, len(a.skipped))], "; "),
			plural(n, "it", "they")))
	}
	if a.opts.Archive == "" {
		notes = append(notes, "No robots.txt archive was read: the versions' texts and the intervals asked are unknown.")
	}
	if n := len(a.missing); n > 0 {
		notes = append(notes, fmt.Sprintf("%d robots.txt %s named by audit records %s not in the archive: the intervals %s asked are unknown.",
			n, plural(n, "body", "bodies"), plural(n, "is", "are"), plural(n, "it", "they")))
	}
	if r.Pacing.AskedUnknown > 0 {
		notes = append(notes, fmt.Sprintf("%d paced %s rest on a robots.txt body the archive lacks: %s gaps are not counted.",
			r.Pacing.AskedUnknown, plural(int(r.Pacing.AskedUnknown), "request", "requests"), plural(int(r.Pacing.AskedUnknown), "its", "their")))
	}
	if r.Pacing.Late > 0 {
		notes = append(notes, fmt.Sprintf("%d paced %s logged after more than %d later requests of %s pacing key: %s gaps are not counted.",
			r.Pacing.Late, plural(int(r.Pacing.Late), "request was", "requests were"), reorderWindow,
			plural(int(r.Pacing.Late), "its", "their"), plural(int(r.Pacing.Late), "its", "their")))
	}
	if n := r.Pacing.SentEstimated; n > 0 {
		notes = append(notes, fmt.Sprintf("%d paced %s no send time (written by a version that did not record it): %s sent at %s arrival plus %s hold, which leaves out the time spent judging and connecting, so %s gaps may read a few milliseconds off.",
			n, plural(int(n), "request carries", "requests carry"), plural(int(n), "it is taken as", "they are taken as"),
			plural(int(n), "its", "their"), plural(int(n), "its", "their"), plural(int(n), "its", "their")))
	}
	if a.badFetch > 0 {
		notes = append(notes, fmt.Sprintf("%d %s of the archive's fetch logs could not be read (cut short?) and %s left out.",
			a.badFetch, plural(int(a.badFetch), "line", "lines"), plural(int(a.badFetch), "is", "are")))
	}
	if r.OtherClients > 0 || r.OtherAgents > 0 {
		notes = append(notes, fmt.Sprintf("Only the first %d distinct clients and agents seen are listed; the records of the others are counted together.", maxDistinct))
	}
	return notes
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = t.UTC()
	return &t
}

// maxChainListed bounds the places of a broken chain the report names.
const maxChainListed = 20

// chainSummary is the report's view of the audit logs' hash chain: whole
// only when compliance says the logs are evidence (ChainResult.Failures).
func chainSummary(c, fetches *compliance.ChainResult, accept compliance.Accept) Chain {
	failures := c.Failures(accept)
	fetchFailures := fetches.Failures(compliance.Accept{Legacy: accept.Legacy})
	s := Chain{Lines: c.Lines, Chained: c.Chained, Whole: len(failures) == 0 && len(fetchFailures) == 0,
		Linked: c.Whole(), Checkpoints: c.Checkpoints, Key: c.Key, LastCheckpoint: c.LastCheckpoint, Unsigned: c.Unsigned,
		Start: c.Start, Witness: c.Witness, Witnessed: c.Witnessed, Legacy: accept.Legacy && c.Chained == 0,
		LastCheckpointTime: timePtr(c.LastCheckpointTime), UnsignedFrom: timePtr(c.UnsignedFrom), UnsignedTo: timePtr(c.UnsignedTo),
		FetchLines: fetches.Lines, FetchCheckpoints: fetches.Checkpoints, FetchLogsWhole: len(fetchFailures) == 0}
	s.Failures = append(failures, fetchFailures...)
	for _, list := range [][]compliance.ChainPlace{c.Breaks, c.BadCheckpoints, c.Torn, c.Uncovered, c.Gaps,
		fetches.Breaks, fetches.BadCheckpoints, fetches.Torn, fetches.Uncovered, fetches.Gaps} {
		for _, p := range list {
			if len(s.Problems) < maxChainListed {
				s.Problems = append(s.Problems, p.String())
			}
		}
	}
	for _, m := range c.WitnessMissing {
		if len(s.Problems) < maxChainListed {
			s.Problems = append(s.Problems, m)
		}
	}
	return s
}
