package proxy

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/robotsgate/robotsgate/policy"
	"github.com/robotsgate/robotsgate/robots/resolver"
)

// AuditRecord is one line of the audit log: one JSON object per decision,
// written when the response has been sent. The field names are a stable
// interface (documented in docs/operations.md); new fields may be added, existing
// ones keep their name and meaning.
type AuditRecord struct {
	Time           time.Time `json:"time"`            // when the request arrived (RFC 3339, UTC)
	Client         string    `json:"client"`          // client address (ip:port)
	User           string    `json:"user"`            // authenticated proxy user, "" if none
	ClientRule     string    `json:"client_rule"`     // the clients entry that matched, "" if none
	Mode           string    `json:"mode"`            // enforce, monitor, bypass
	UserAgent      string    `json:"user_agent"`      // the User-Agent header
	Agent          string    `json:"agent"`           // what the request was judged as (fixed agent or header)
	Group          string    `json:"group"`           // the robots.txt group that judged it ("*", a token, "")
	Method         string    `json:"method"`          // HTTP method (CONNECT for tunnels)
	URL            string    `json:"url"`             // origin + request-target as sent
	Decision       string    `json:"decision"`        // allow, disallow, unreachable, egress-denied...
	Enforced       bool      `json:"enforced"`        // false when a refusal was only logged (monitor mode)
	Rule           string    `json:"rule"`            // the deciding robots.txt rule, "" if none
	Line           int       `json:"line"`            // its line number, 0 if none
	Canonical      string    `json:"canonical"`       // the canonical target that decided (evasion guard)
	Note           string    `json:"note"`            // why robots.txt was not consulted, or what refused
	RobotsStatus   string    `json:"robots_status"`   // ok, unavailable, unreachable, "" if not consulted
	RobotsURL      string    `json:"robots_url"`      // where robots.txt was read
	RobotsError    string    `json:"robots_error"`    // why robots.txt could not be fetched (dns_error, http_5xx...), "" if it was
	RobotsSHA256   string    `json:"robots_sha256"`   // the archived robots.txt body that judged it, "" if none (archive.dir)
	StrictPaths    bool      `json:"strict_paths"`    // the robots.strict_paths setting that judged it
	WaitMS         float64   `json:"wait_ms"`         // time held for a pacing slot
	UpstreamStatus int       `json:"upstream_status"` // the origin's status code, 0 if not forwarded
	Status         int       `json:"status"`          // the status code sent to the client
	Bytes          int64     `json:"bytes"`           // response body bytes sent to the client
	DurationMS     float64   `json:"duration_ms"`     // from arrival to the end of the response

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
	Usage []policy.UsageSignal `json:"usage,omitempty"`

	// refusedBy is the kind of signal that refused the request
	// (policy.SignalKinds), for robotsgate_usage_refusals_total.
	refusedBy string
}

// newAuditRecord fills what a decision tells.
func newAuditRecord(start time.Time, remoteAddr, method string, d *policy.Decision) AuditRecord {
	r := AuditRecord{
		Time: start.UTC(), Client: remoteAddr, User: d.Request.Client.User, ClientRule: d.Request.Client.Name,
		Mode: d.Request.Client.Mode.String(), UserAgent: d.Request.UserAgent, Agent: d.Request.Agent(),
		Group: d.Group(), Method: method, URL: d.Request.Origin.URL(d.Request.Target),
		Decision: d.Verdict.String(), Enforced: d.Refused() || d.Verdict == policy.Allow, Note: d.Note,
	}
	if d.Rule.Matched {
		r.Rule, r.Line, r.Canonical = d.Rule.Rule.String(), d.Rule.Rule.Line, d.Rule.Canonical
	}
	r.StrictPaths = d.StrictPaths
	r.Usage, r.refusedBy = d.UsageSignals(), d.RefusedBy()
	if t := d.TDMRep; t != nil {
		r.TDMRepStatus, r.TDMRepSHA256 = t.Status.String(), t.SHA256
		if t.Unknown() || t.Stale {
			r.TDMRepError = t.Cause()
		}
		if d.TDM.Entry != nil {
			index := d.TDM.Entry.Index
			r.TDMEntry = &index
		}
	}
	if d.Robots != nil {
		r.RobotsStatus, r.RobotsURL, r.RobotsSHA256 = d.Robots.Status.String(), d.Robots.URL(), d.Robots.SHA256()
		if d.Robots.Status == resolver.Unreachable || d.Robots.Stale {
			r.RobotsError = d.Robots.Cause()
		}
	}
	return r
}

// auditLog writes AuditRecords as JSON lines to a file (reopened on
// demand, for logrotate) or standard output.
type auditLog struct {
	mu   sync.Mutex
	path string
	w    io.Writer
	f    *os.File // nil for stdout
}

// openAudit opens the audit log: "" disables it (nil), "-" is stdout.
func openAudit(path string) (*auditLog, error) {
	switch path {
	case "":
		return nil, nil
	case "-":
		return &auditLog{path: path, w: os.Stdout}, nil
	}
	a := &auditLog{path: path}
	if err := a.reopen(); err != nil {
		return nil, err
	}
	return a, nil
}

// reopen closes and reopens the file, so a rotated log continues in a new
// file.
func (a *auditLog) reopen() error {
	if a == nil || a.path == "-" {
		return nil
	}
	f, err := os.OpenFile(a.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
	if err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.f != nil {
		a.f.Close()
	}
	a.f, a.w = f, f
	return nil
}

// write appends one record as one line (a single write, so lines from
// concurrent requests never interleave).
func (a *auditLog) write(r *AuditRecord) {
	if a == nil {
		return
	}
	line, err := json.Marshal(r)
	if err != nil {
		return
	}
	line = append(line, '\n')
	a.mu.Lock()
	defer a.mu.Unlock()
	a.w.Write(line)
}

func (a *auditLog) close() {
	if a == nil || a.f == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.f.Close()
}
