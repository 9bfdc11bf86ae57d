// Package report builds robotsgate's compliance report from the evidence
// the proxy keeps: the audit log (one record per decision) and the
// robots.txt archive (every distinct body by SHA-256, and a log of every
// fetch). It says, for a period, what was asked of the proxy and by whom,
// what it allowed and refused and by which rule of which robots.txt
// version, and whether the pacing robots.txt asked for (Crawl-delay,
// Request-rate) was kept: the smallest gap between forwarded requests
// against the interval asked.
//
// Build reads each audit file once, streaming, and keeps aggregates:
// memory grows with the number of origins, pacing keys and distinct
// robots.txt bodies, not with the number of records. WriteJSON writes the
// Report as JSON; WriteHTML as one self-contained HTML page (inline CSS
// and SVG, no script, nothing fetched) that a reviewer reads without the
// tool, with the archived robots.txt texts embedded.
//
// It must not change the evidence it reads, and the page it writes must
// never load anything from the network.
package report

import (
	"encoding/json"
	"io"
	"time"
)

// WriteJSON writes r as indented JSON (no HTML escaping: URLs and rules
// read as they are).
func WriteJSON(w io.Writer, r *Report) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// Report is what robotsgate report shows; its JSON field names are a
// stable interface (new fields may be added). Times are RFC 3339 in UTC;
// durations are in seconds unless a name says otherwise (_ms).
type Report struct {
	// Generated is when the report was made.
	Generated time.Time `json:"generated"`
	// AuditFiles are the audit logs read, in the order given; ArchiveDir
	// is the robots.txt archive read ("" when none was).
	AuditFiles []string `json:"audit_files"`
	ArchiveDir string   `json:"archive_dir"`
	// Since and Until are the bounds asked for (-since, -until), both
	// included; absent when unbounded.
	Since *time.Time `json:"since,omitempty"`
	Until *time.Time `json:"until,omitempty"`
	// First and Last are the arrival times of the first and last records
	// in range: the period the report covers. Absent when no record is.
	First *time.Time `json:"first,omitempty"`
	Last  *time.Time `json:"last,omitempty"`
	// Records counts the records in range; OutOfRange those left out by
	// Since and Until.
	Records    int64 `json:"records"`
	OutOfRange int64 `json:"out_of_range"`
	// Totals counts the records in range by what became of them.
	Totals Counts `json:"totals"`
	// Decisions counts them by decision, in the order of the README's
	// list of decisions (proxy.Decisions), unknown values last.
	Decisions []DecisionCount `json:"decisions"`
	// Clients and Agents are who sent the requests, busiest first: their
	// Requests add up to Totals.Requests with OtherClients (OtherAgents),
	// and the clients' Tunnels to Totals.Tunnels with OtherClientTunnels.
	// Each list keeps at most 1,000 entries (the clients' twice that, by
	// requests and by tunnels); the Other fields count the records of
	// those left out. An operator's refresh is in neither.
	Clients            []Client `json:"clients"`
	OtherClients       int64    `json:"other_clients"`
	OtherClientTunnels int64    `json:"other_client_tunnels"`
	Agents             []Agent  `json:"agents"`
	OtherAgents        int64    `json:"other_agents"`
	// Timeline counts the records over the period, by arrival time.
	Timeline Timeline `json:"timeline"`
	// Pacing sums up every origin's pacing figures: the gaps counted,
	// those below the interval asked (must be 0), the smallest gap.
	Pacing PacingSummary `json:"pacing"`
	// Origins are the origins requested, busiest first.
	Origins []Origin `json:"origins"`
	// Bodies are the robots.txt bodies that judged a record in range or
	// were fetched in it (the HTML report embeds their text), in the order
	// they were first seen.
	Bodies []Body `json:"bodies"`
	// Notes say what limits the figures: bodies missing from the
	// archive, records too far out of order to place, unreadable lines of
	// the fetch logs.
	Notes []string `json:"notes"`
	// Skipped counts the audit lines that are not records (not JSON, too
	// long, torn); SkippedLines names the first 20 ("file:line: skipped:
	// why"). Reading went on after each.
	Skipped      int      `json:"skipped_lines"`
	SkippedLines []string `json:"skipped,omitempty"`
	// Chain is the audit logs' hash chain and signed checkpoints.
	Chain Chain `json:"chain"`
}

// Chain says whether the audit logs are as written: every line linked to
// the one before it, every checkpoint signed by the evidence key.
type Chain struct {
	// Lines counts the lines read, Chained those carrying a link.
	Lines   int64 `json:"lines"`
	Chained int64 `json:"chained"`
	// Whole: the logs are evidence that they are as written
	// (compliance.ChainResult.Failures finds nothing, for the audit logs
	// and the fetch logs): no break, every record covered by a checkpoint
	// verified with the key (and seen by the witness, when one was
	// checked) but for the last interval's, the chain starting in the files
	// read (unless Options.Partial). Failures say why not.
	Whole    bool     `json:"whole"`
	Failures []string `json:"failures,omitempty"`
	// Linked: no line breaks the chain, and no checkpoint fails to verify
	// (which proves nothing when the chain was recomputed).
	Linked bool `json:"linked"`
	// Legacy: the lines carry no link, accepted as written before the
	// chain (Options.Legacy).
	Legacy bool `json:"legacy,omitempty"`
	// Checkpoints counts the checkpoints verified, by the key of
	// fingerprint Key ("" when none was given: counted, not verified);
	// Witnessed those a witness saw, when one was checked (Witness).
	// LastCheckpoint is where the last that covers the lines before it
	// is, and when it was signed; Unsigned how many lines follow it, and
	// the times of the first and last of them.
	Checkpoints        int64      `json:"checkpoints"`
	Key                string     `json:"key,omitempty"`
	Witness            bool       `json:"witness,omitempty"`
	Witnessed          int64      `json:"witnessed,omitempty"`
	LastCheckpoint     string     `json:"last_checkpoint,omitempty"`
	LastCheckpointTime *time.Time `json:"last_checkpoint_time,omitempty"`
	Unsigned           int64      `json:"unsigned_lines"`
	UnsignedFrom       *time.Time `json:"unsigned_from,omitempty"`
	UnsignedTo         *time.Time `json:"unsigned_to,omitempty"`
	// FetchLines and FetchCheckpoints count the lines and good checkpoints
	// of the archive's fetch logs, each a chain of its own;
	// FetchLogsWhole says none is broken (Whole requires it too).
	FetchLines       int64 `json:"fetch_lines"`
	FetchCheckpoints int64 `json:"fetch_checkpoints"`
	FetchLogsWhole   bool  `json:"fetch_logs_whole"`
	// Start is set when the first line links to a line not read (a rotated
	// log whose predecessors are gone, or lines cut from its start): where.
	Start string `json:"start,omitempty"`
	// Problems are the first 20 breaks, checkpoints that do not verify
	// and torn lines ("file:line: why").
	Problems []string `json:"problems,omitempty"`
}

// Counts says what became of requests.
type Counts struct {
	// Requests is every record.
	Requests int64 `json:"requests"`
	// Allowed were allowed (decision allow); Forwarded reached the origin
	// (an upstream status was recorded: allowed ones, and refusals only
	// logged).
	Allowed   int64 `json:"allowed"`
	Forwarded int64 `json:"forwarded"`
	// Refused were refused by the proxy (a decision that is a refusal,
	// enforced); Monitored are refusals only logged (a client in monitor
	// mode), whose requests went on.
	Refused   int64 `json:"refused"`
	Monitored int64 `json:"monitored"`
	// Other are neither: the origin failed (upstream-error), the client
	// left while held or judged (client-closed).
	Other int64 `json:"other"`
	// Tunnels are the CONNECTs (and SOCKS5 and transparent openings),
	// counted apart: none is a request, and none is in the figures above.
	Tunnels Tunnels `json:"tunnels"`
	// Refreshes are operators' refreshes of an origin (robotsgate
	// refresh): its robots.txt fetched again. Not requests of a client,
	// and in no other figure.
	Refreshes int64 `json:"refreshes"`
}

// Tunnels says what became of tunnels.
type Tunnels struct {
	// Intercepted were opened and decrypted: each request in them is a
	// record of its own, judged and counted as a request.
	Intercepted int64 `json:"intercepted"`
	// Blind were passed through undecrypted (mitm off, mitm.skip_hosts),
	// judged by host.
	Blind int64 `json:"blind"`
	// Refused were refused (enforced), by the host's robots.txt or another
	// rule; Monitored refusals only logged.
	Refused   int64 `json:"refused"`
	Monitored int64 `json:"monitored"`
	// Failed were opened but carried nothing robotsgate could judge (the
	// client's TLS handshake failed, not HTTP inside, the origin down).
	Failed int64 `json:"failed"`
}

// Total is every tunnel.
func (t Tunnels) Total() int64 { return t.Intercepted + t.Blind + t.Refused + t.Monitored + t.Failed }

// DecisionCount is how many records had a decision.
type DecisionCount struct {
	Decision string `json:"decision"`
	// Refusal reports whether the decision is a refusal by the proxy
	// (audit.DecisionInfo.Refusal).
	Refusal bool  `json:"refusal"`
	Count   int64 `json:"count"`
	// Monitored are those of Count only logged (a client in monitor mode,
	// its request forwarded): not refusals.
	Monitored int64 `json:"monitored"`
}

// Client is one client: its address (without the port), the proxy user
// it authenticated as and the clients entry that matched, if any.
type Client struct {
	Address  string `json:"address"`
	User     string `json:"user,omitempty"`
	Rule     string `json:"client_rule,omitempty"`
	Requests int64  `json:"requests"`
	// Tunnels counts its CONNECTs (and SOCKS5 openings), apart from the
	// requests in them.
	Tunnels int64 `json:"tunnels"`
}

// Agent is what requests were judged as (the audit record's agent: a
// fixed agent of the clients entry, or the User-Agent header).
type Agent struct {
	Agent    string `json:"agent"`
	Requests int64  `json:"requests"`
}

// Timeline counts records per bin of BinSeconds from Start (aligned on a
// multiple of the width), at most a few hundred bins: they widen with the
// period (0.1 s up to 364 days).
type Timeline struct {
	Start      time.Time `json:"start"`
	BinSeconds float64   `json:"bin_seconds"`
	Bins       []Bin     `json:"bins"`
}

// Bin is one bin of a timeline: allowed, refused (enforced) and other
// records (monitored refusals, upstream failures, clients that left).
type Bin struct {
	Allowed int64 `json:"allowed"`
	Refused int64 `json:"refused"`
	Other   int64 `json:"other"`
}

// Origin is what happened on one origin (scheme://host[:port]; for a
// request refused before it was judged, what the request named).
type Origin struct {
	Origin string `json:"origin"`
	Counts
	Decisions []DecisionCount `json:"decisions"`
	// RefusedByRule counts the refusals decided by a robots.txt rule, by
	// rule and version (a line number means something in one version).
	RefusedByRule []RuleCount `json:"refused_by_rule"`
	// RefusedBySignal counts the refusals by the AI-usage signal that
	// refused, at most maxSignalRows per origin; OtherSignals counts the
	// refusals of signals beyond them.
	RefusedBySignal []SignalCount `json:"refused_by_signal"`
	OtherSignals    int64         `json:"other_signals,omitempty"`
	// Versions are the robots.txt versions in force over the period: the
	// bodies (or the absence of one) that judged its records, and those
	// fetched during it.
	Versions []Version `json:"versions"`
	// Pacing has the figures of each pacing key of the origin (one per
	// robots.txt group); Gaps sums them up.
	Pacing []PacingKey `json:"pacing"`
	Gaps   GapFigures  `json:"gaps"`
	// LongestHoldMS is the longest a request was held for its pacing slot
	// (the largest wait_ms).
	LongestHoldMS float64 `json:"longest_hold_ms"`
	// Backoff says how often the origin asked to slow down (429, 503),
	// how long robotsgate paused it, and whether any request left during
	// a pause.
	Backoff BackoffFigures `json:"backoff"`
	// Paid sums what the origin charged under pay per crawl (the audit
	// records' crawler_charged), per currency, at most maxPaidCurrencies;
	// UnreadCharges counts the charges that could not be read or were in
	// a currency beyond them; Overcharged counts the charges flagged as
	// above the price the origin quoted (crawler_overcharged).
	Paid          []Paid `json:"paid,omitempty"`
	UnreadCharges int64  `json:"unread_charges,omitempty"`
	Overcharged   int64  `json:"overcharged,omitempty"`
}

// Paid is what an origin charged in one currency.
type Paid struct {
	// Amount is the sum, as "USD 0.03".
	Amount string `json:"amount"`
	// Requests is how many requests were charged.
	Requests int64 `json:"requests"`
}

// SignalCount is how many requests one AI-usage signal refused.
type SignalCount struct {
	// Signal is its kind (audit.SignalTDMRep...), Value what the origin
	// wrote, Where where it was read, Policy a TDM reservation's policy.
	Signal string `json:"signal"`
	Value  string `json:"value"`
	Where  string `json:"where"`
	Policy string `json:"policy,omitempty"`
	// Refuses are the purposes it refused.
	Refuses []string `json:"refuses"`
	// TDMRepSHA256 is the SHA-256 of the tdmrep.json body of a tdmrep
	// signal.
	TDMRepSHA256 string `json:"tdmrep_sha256,omitempty"`
	// License is the URL of the RSL document of an rsl signal,
	// LicenseSHA256 its archived body, Server the licence server its
	// content needs, if any.
	License       string `json:"license,omitempty"`
	LicenseSHA256 string `json:"license_sha256,omitempty"`
	Server        string `json:"server,omitempty"`
	// LicenseFor are the purposes Server's token is needed for (a
	// license-required refusal is for one of them).
	LicenseFor []string `json:"license_for,omitempty"`
	// Terms are the terms of the licences of the RSL <content> that
	// applied (audit.UsageSignal.Terms): usages, user types, countries,
	// payment and reporting terms.
	Terms []string `json:"terms,omitempty"`
	// OriginAnswered: read from the origin's response (a header, a meta
	// tag), so the origin saw the request; the client got none of its
	// response. Otherwise the origin never saw it.
	OriginAnswered bool `json:"origin_answered"`
	// Count were refused; Monitored refusals were only logged.
	Count     int64 `json:"count"`
	Monitored int64 `json:"monitored"`
	// Example is the first URL it refused.
	Example string `json:"example"`
}

// RuleCount is how many requests one robots.txt rule refused.
type RuleCount struct {
	Decision string `json:"decision"`
	// Rule is the rule as the audit record states it ("Disallow:
	// /private"), Line its line in the version named by SHA256.
	Rule   string `json:"rule"`
	Line   int    `json:"line"`
	SHA256 string `json:"sha256"`
	// Count were refused; Monitored refusals were only logged.
	Count     int64 `json:"count"`
	Monitored int64 `json:"monitored"`
	// Example is the URL of the first request it refused.
	Example string `json:"example"`
}

// Version is one robots.txt version of an origin: a body by its SHA-256,
// or, when SHA256 is "", the absence of one (RobotsStatus unavailable:
// every path allowed; unreachable: every path refused).
type Version struct {
	SHA256 string `json:"sha256,omitempty"`
	// RobotsStatus is how the proxy read it: ok, unavailable, unreachable.
	RobotsStatus string `json:"robots_status"`
	// Records counts the decisions it judged in the period; FirstUsed and
	// LastUsed are the first and last of their arrival times.
	Records   int64      `json:"records"`
	FirstUsed *time.Time `json:"first_used,omitempty"`
	LastUsed  *time.Time `json:"last_used,omitempty"`
	// From the archive's fetch logs: the first and last fetch that gave
	// it (the first may precede the period), its HTTP status then, and
	// how many fetches in the period gave it, Revalidations of them
	// answered 304 Not Modified. HTTPStatuses are the statuses seen.
	FirstFetched  *time.Time `json:"first_fetched,omitempty"`
	LastFetched   *time.Time `json:"last_fetched,omitempty"`
	HTTPStatus    int        `json:"http_status,omitempty"`
	HTTPStatuses  []int      `json:"http_statuses,omitempty"`
	Fetches       int64      `json:"fetches"`
	Revalidations int64      `json:"revalidations"`
	// CacheControl and ETag are those of the last fetch; Cause says why
	// a fetch gave no body (http_404, dns_error...).
	CacheControl string `json:"cache_control,omitempty"`
	ETag         string `json:"etag,omitempty"`
	Cause        string `json:"cause,omitempty"`
	// Size and Truncated are the body's (Truncated: the answer was
	// longer than the 500 KiB judged); InArchive whether the archive has
	// the body.
	Size      int  `json:"size,omitempty"`
	Truncated bool `json:"truncated,omitempty"`
	InArchive bool `json:"in_archive"`
}

// PacingKey has the pacing figures of one schedule: an origin and a
// robots.txt group, as the proxy keys its schedules by default
// (pacing.key: origin+group; with pacing.key: origin the proxy paces more
// strictly than these figures require).
//
// Only requests the proxy paces count: those forwarded to the origin
// (allowed, an upstream status recorded) for an enforced client, except
// robots.txt itself. Each is taken when it left the proxy: its arrival
// (the audit record's time) plus the time it was held (wait_ms); the
// time spent judging it (a robots.txt fetch, usually milliseconds) is not
// recorded and not included.
type PacingKey struct {
	// Group is the robots.txt group that judged the requests ("*", a
	// product token, "" when none applied).
	Group string `json:"group"`
	// Asked are the intervals robots.txt asked for, one entry per
	// version and value.
	Asked []Asked `json:"asked"`
	// Paced counts the requests measured; NotPaced the forwarded
	// requests the proxy does not pace (monitor and bypass clients,
	// robots.txt); AskedUnknown the paced requests whose robots.txt body
	// is not in the archive (their interval is unknown: their gaps are
	// not counted).
	Paced        int64 `json:"paced"`
	NotPaced     int64 `json:"not_paced"`
	AskedUnknown int64 `json:"asked_unknown"`
	// Late counts requests logged too far out of order (after more than
	// 128 later requests of their key) to find their neighbours.
	Late int64 `json:"late"`
	GapFigures
	// LongestHoldMS is the longest wait_ms of the key's requests.
	LongestHoldMS float64 `json:"longest_hold_ms"`
}

// Asked is an interval robots.txt asked of a group: its Crawl-delay and
// Request-rate (as an interval: n requests per T is T/n), and the larger,
// the interval the proxy keeps.
type Asked struct {
	SHA256                 string  `json:"sha256"`
	CrawlDelaySeconds      float64 `json:"crawl_delay_seconds"`
	RequestIntervalSeconds float64 `json:"request_interval_seconds"`
	IntervalSeconds        float64 `json:"interval_seconds"`
	// Requests counts the paced requests it applied to.
	Requests int64 `json:"requests"`
}

// GapFigures are the gaps between successive paced requests of a key,
// each against the interval asked of the later request (gaps whose later
// request had no interval asked are not counted).
type GapFigures struct {
	// Gaps counts them; BelowAsked those shorter than their interval,
	// which must be 0.
	Gaps       int64 `json:"gaps"`
	BelowAsked int64 `json:"below_asked"`
	// MinGapSeconds is the smallest gap and MinGapAskedSeconds the
	// interval asked of it; MinRatio the smallest gap ÷ interval (1 or
	// more when every interval was kept). Absent without gaps.
	MinGapSeconds      *float64 `json:"min_gap_seconds,omitempty"`
	MinGapAskedSeconds *float64 `json:"min_gap_asked_seconds,omitempty"`
	MinRatio           *float64 `json:"min_ratio,omitempty"`
	// Histogram counts the gaps by gap ÷ interval.
	Histogram Histogram `json:"histogram"`
}

// Histogram counts values in fixed buckets.
type Histogram struct {
	Buckets []Bucket `json:"buckets"`
}

// Bucket counts the values from From (included) to To (excluded; absent
// for the last bucket, which has no bound).
type Bucket struct {
	From  float64  `json:"from"`
	To    *float64 `json:"to,omitempty"`
	Count int64    `json:"count"`
}

// PacingSummary sums up the gaps of every origin.
type PacingSummary struct {
	GapFigures
	// Late and AskedUnknown sum up the keys' (PacingKey).
	Late         int64 `json:"late"`
	AskedUnknown int64 `json:"asked_unknown"`
	// LongestHoldMS is the longest wait_ms of any request.
	LongestHoldMS float64 `json:"longest_hold_ms"`
	// SentRecorded counts the paced requests whose send time the record
	// gives (sent_ms); SentEstimated those asked an interval whose send
	// time is estimated as arrival + hold (records of versions that did
	// not record it).
	SentRecorded  int64 `json:"sent_recorded"`
	SentEstimated int64 `json:"sent_estimated"`
	// PauseAnswers and SentDuringPause sum up the origins' Backoff: the
	// answers that paused an origin, and the requests that left during a
	// pause (must be 0).
	PauseAnswers    int64 `json:"pause_answers"`
	SentDuringPause int64 `json:"sent_during_pause"`
}

// Body is an archived robots.txt or tdmrep.json body the report refers
// to.
type Body struct {
	SHA256 string `json:"sha256"`
	// Kind is "robots.txt", "tdmrep.json" or "RSL licence".
	Kind string `json:"kind"`
	// Size is its length in the archive; Missing says the archive does
	// not have it (or it no longer matches its SHA-256: Error says).
	Size    int64  `json:"size"`
	Missing bool   `json:"missing,omitempty"`
	Error   string `json:"error,omitempty"`
	// Origins are the origins that served it.
	Origins []string `json:"origins"`
}
