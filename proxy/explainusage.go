package proxy

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptrace"

	"github.com/robotsgate/robotsgate/policy"
)

// UsageSignals lists every AI-usage signal found for a decision's URL,
// with the purposes each refuses, for /explain and check: the robots.txt
// lines and the tdmrep.json entry that apply (the file is consulted now if
// the decision did not need it; d.TDMRep then says how it was read) and,
// with fetch, the header fields and HTML head of the URL's response. The
// URL is fetched only when d allows it, with GET as the client would send
// it, held for its pacing slot like a proxied request; its body is read no
// further than the head. A failed fetch is returned as the error, with the
// signals found before it.
func (s *Server) UsageSignals(ctx context.Context, d *policy.Decision, fetch bool) ([]policy.UsageSignal, error) {
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
	found, err := s.fetchSignals(ctx, d)
	return append(signals, found...), err
}

// fetchSignals requests d's URL (paced) and reads the AI-usage signals of
// its response: header fields, and the meta tags of an HTML head.
func (s *Server) fetchSignals(ctx context.Context, d *policy.Decision) ([]policy.UsageSignal, error) {
	st := s.settings()
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
	resp, err := s.upstream.tr.RoundTrip(req)
	if err != nil {
		return nil, fmt.Errorf("fetch %s: %w", u, err)
	}
	defer resp.Body.Close()
	found := policy.HeaderSignals(resp.Header, d.Request.Agent(), d.Request.Client.Purposes)
	if hasHTMLBody(resp) {
		metas, _ := scanHead(resp)
		found = append(found, policy.MetaSignals(metas, d.Request.Agent())...)
	}
	return found, nil
}
