package proxy

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptrace"
	"time"

	"github.com/robotsgate/robotsgate/audit"
	"github.com/robotsgate/robotsgate/policy"
)

// UsageSignals lists every AI-usage signal found for a decision's URL,
// with the purposes each refuses, for /explain and check: the robots.txt
// lines and the tdmrep.json entry that apply (the file is consulted now if
// the decision did not need it; d.TDMRep then says how it was read) and,
// with fetch, the header fields and HTML head of the URL's response. The
// URL is fetched only when d allows it, with GET as the client would send
// it, held for its pacing slot like a proxied request; its body is read no
// further than the head, and the fetch is written to the audit log (client
// by, the asker's address; note "fetched to explain"). A failed fetch is
// returned as the error, with the signals found before it.
func (s *Server) UsageSignals(ctx context.Context, d *policy.Decision, fetch bool, by string) ([]audit.UsageSignal, error) {
	if err := s.settings().engine.ConsultTDM(ctx, d); err != nil {
		return nil, err
	}
	signals := d.ExplainSignals()
	if !fetch {
		return signals, nil
	}
	if d.Verdict != policy.Allow {
		return signals, fmt.Errorf("the response was not fetched: the request would be refused (%s)", d.Verdict)
	}
	found, err := s.fetchSignals(ctx, d, by)
	return append(signals, found...), err
}

// fetchSignals requests d's URL (paced) and reads the AI-usage signals of
// its response: header fields, and the meta tags of an HTML head.
func (s *Server) fetchSignals(ctx context.Context, d *policy.Decision, by string) (found []audit.UsageSignal, err error) {
	st := s.settings()
	start := time.Now()
	permit, err := st.engine.Pace(ctx, d)
	if err != nil {
		return nil, err
	}
	defer permit.Release()
	if d.Verdict != policy.Allow {
		return nil, fmt.Errorf("the response was not fetched: %s", d.Note)
	}
	u := d.Request.Origin.URL(d.Request.Target)
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{WroteHeaders: permit.Sent}),
		http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("fetch %s: %w", u, err)
	}
	req.Header.Set("User-Agent", d.Request.UserAgent) // "" sends none, as a client without one
	identify(req, st.cfg.Identify)
	s.log.Info("fetching a page to explain its AI-usage signals", "url", u, "user_agent", d.Request.UserAgent)
	rec := newAuditRecord(start, by, http.MethodGet, d)
	rec.Usage = d.ExplainSignals() // whatever the purposes: what was explained
	rec.WaitMS = float64(d.Waited.Microseconds()) / 1000
	defer func() { s.auditExplainFetch(&rec, start, found, err) }() // the origin may have been contacted
	resp, err := s.upstream.tr.RoundTrip(req)
	if err != nil {
		return nil, fmt.Errorf("fetch %s: %w", u, err)
	}
	defer resp.Body.Close()
	rec.UpstreamStatus = resp.StatusCode
	found = policy.HeaderSignals(resp.Header, d.Request.Agent(), d.Request.Client.Purposes)
	if hasHTMLBody(resp) {
		metas, _ := scanHead(resp)
		found = append(found, policy.MetaSignals(metas, d.Request.Agent())...)
	}
	return found, nil
}

// auditExplainFetch records a fetch made to explain a URL: the origin was
// contacted, though no client received the response (status 0).
func (s *Server) auditExplainFetch(rec *audit.Record, start time.Time, found []audit.UsageSignal, err error) {
	rec.Usage = append(rec.Usage, found...)
	note := "fetched to explain its AI-usage signals (headers and HTML head read, the body not relayed)"
	if err != nil {
		note += ": " + err.Error()
	}
	rec.AddNote(note)
	rec.DurationMS = float64(time.Since(start).Microseconds()) / 1000
	s.auditLog.Write(rec)
}
