// Package audit is the audit log's vocabulary: the record written for
// every decision (one JSON line each) and the checkpoint lines that sign
// the log, the decision values with their status codes, the ways a request
// arrives, the AI-usage signals a record lists and the limits of what a
// record quotes. Policy, admin and the proxy name decisions and signals
// with it; the evidence commands (verify, report) read records with it.
// Writing the log (the writer, its hash chain, signing checkpoints) is
// package auditlog's, so that naming a decision does not pull in the
// writer.
//
// It must not import any other robotsgate package: it is what the proxy
// and the offline readers share, and an offline reader must not pull in the
// proxy's dependencies.
package audit

import "time"

// Record is one line of the audit log: one JSON object per decision,
// written when the response has been sent. The field names are a stable
// interface (documented in docs/operations.md); new fields may be added,
// existing ones keep their name and meaning.
type Record struct {
	// Prev is the SHA-256 of the line before this one in the log (hex;
	// auditlog.LineHash), "" for the first line of a log without a past.
	// It is the first field written, so that a reader can check the chain
	// without decoding the line.
	Prev string `json:"prev_sha256"`

	Time           time.Time `json:"time"`              // when the request arrived (RFC 3339, UTC)
	Client         string    `json:"client"`            // client address (ip:port)
	User           string    `json:"user"`              // authenticated proxy user, "" if none
	ClientRule     string    `json:"client_rule"`       // the clients entry that matched, "" if none
	Mode           string    `json:"mode"`              // enforce, monitor, bypass
	UserAgent      string    `json:"user_agent"`        // the User-Agent header
	Agent          string    `json:"agent"`             // what the request was judged as (fixed agent or header)
	Group          string    `json:"group"`             // the robots.txt group that judged it ("*", a token, "")
	Method         string    `json:"method"`            // HTTP method (CONNECT for tunnels)
	Via            string    `json:"via"`               // how the request arrived: proxy, tunnel, transparent, socks
	URL            string    `json:"url"`               // origin + request-target as sent
	Decision       string    `json:"decision"`          // allow, disallow, unreachable, egress-denied...
	Enforced       bool      `json:"enforced"`          // false when a refusal was only logged (monitor mode)
	Rule           string    `json:"rule"`              // the deciding robots.txt rule, "" if none
	Line           int       `json:"line"`              // its line number, 0 if none
	Canonical      string    `json:"canonical"`         // the canonical target that decided (evasion guard)
	Note           string    `json:"note"`              // why robots.txt was not consulted, or what refused
	RobotsStatus   string    `json:"robots_status"`     // ok, unavailable, unreachable, "" if not consulted
	RobotsURL      string    `json:"robots_url"`        // where robots.txt was read
	RobotsError    string    `json:"robots_error"`      // why robots.txt could not be fetched (dns_error, http_5xx...), "" if it was
	RobotsSHA256   string    `json:"robots_sha256"`     // the archived robots.txt body that judged it, "" if none (archive.dir)
	StrictPaths    bool      `json:"strict_paths"`      // the robots.strict_paths setting that judged it
	WaitMS         float64   `json:"wait_ms"`           // time held for a pacing slot
	SentMS         float64   `json:"sent_ms,omitempty"` // when the request left for the origin, after arrival (judged and held); absent if it did not
	UpstreamStatus int       `json:"upstream_status"`   // the origin's status code, 0 if not forwarded
	Status         int       `json:"status"`            // the status code sent to the client
	Bytes          int64     `json:"bytes"`             // response body bytes sent to the client
	DurationMS     float64   `json:"duration_ms"`       // from arrival to the end of the response

	// Pay per crawl: the crawler-price of the origin's 402 (as "USD
	// 0.01"), the crawler-charged of its answer to the paid retry, as the
	// origin sent it, whether that charge is above the price quoted (or
	// cannot be read), and the crawler-error code an origin sent; absent
	// when there was none.
	CrawlerPrice       string `json:"crawler_price,omitempty"`
	CrawlerCharged     string `json:"crawler_charged,omitempty"`
	CrawlerOvercharged bool   `json:"crawler_overcharged,omitempty"`
	CrawlerError       string `json:"crawler_error,omitempty"`

	// The tdmrep.json consulted for a client with a TDM purpose, absent
	// for the others: its status (ok, unavailable, unreachable), why it
	// could not be fetched (as robots_error), the archived body that
	// judged it, and the index of the entry that applied (absent if none).
	TDMRepStatus string `json:"tdmrep_status,omitempty"`
	TDMRepError  string `json:"tdmrep_error,omitempty"`
	TDMRepSHA256 string `json:"tdmrep_sha256,omitempty"`
	TDMEntry     *int   `json:"tdm_entry,omitempty"`

	// Usage lists the AI-usage signals found for a client with purposes
	// (robots.txt lines, the tdmrep.json entry, response headers, meta
	// tags), with the purposes each refuses; absent for other clients and
	// when none was found.
	Usage []UsageSignal `json:"usage,omitempty"`

	// BackoffMS is the part of wait_ms the request was held because its
	// origin was paused (it had answered 429 or 503), and Backoff why
	// ("the origin answered 429 with Retry-After: 3 at 10:42:07Z, paused
	// until 10:42:10Z"); for an origin-backoff refusal, the pause that
	// refused it. Absent when no pause held or refused the request.
	BackoffMS float64 `json:"backoff_ms,omitempty"`
	Backoff   string  `json:"backoff,omitempty"`
	// Pause is the pause of the origin this request's answer started or
	// lengthened (a 429 or 503); absent for other answers.
	Pause *Pause `json:"pause,omitempty"`

	// Truncated names the fields cut to their limit (Cap): what a client
	// or an origin sent was longer than the record keeps. Absent when
	// nothing was cut.
	Truncated []string `json:"truncated,omitempty"`

	// Checkpoint is set on a checkpoint line, which is no decision: only
	// Prev and it are set.
	Checkpoint *Checkpoint `json:"checkpoint,omitempty"`
}

// Pause is an origin's pause as an answer started or lengthened it.
type Pause struct {
	// From is when robotsgate received the answer, Until when the pause
	// ends: no request to the origin may be sent between them.
	From  time.Time `json:"from"`
	Until time.Time `json:"until"`
	// Status is the answer's status (0: the origin could not be reached),
	// RetryAfter its Retry-After as sent ("" when none).
	Status     int    `json:"status"`
	RetryAfter string `json:"retry_after,omitempty"`
}

// AddNote adds to a record's note, after what it says already.
func (r *Record) AddNote(note string) {
	if r.Note != "" {
		note = r.Note + "; " + note
	}
	r.Note = note
}
