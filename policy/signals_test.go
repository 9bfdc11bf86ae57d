package policy

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/robotsgate/robotsgate/audit"
	"github.com/robotsgate/robotsgate/htmlmeta"
	"github.com/robotsgate/robotsgate/robots"
	"github.com/robotsgate/robotsgate/robots/resolver"
	"github.com/robotsgate/robotsgate/tdmrep"
)

// listed are the signals a judged response lists (judged), with the
// purposes each refuses: what the audit record and /explain show.
func listed(t testing.TB, h http.Header, metas []htmlmeta.Meta, agent string, purposes []string) []audit.UsageSignal {
	t.Helper()
	j, _ := judged(t, h, metas, agent, purposes)
	return j.Signals
}

// signalsText renders signals compactly: "kind value [refuses...]".
func signalsText(signals []audit.UsageSignal) string {
	var parts []string
	for _, s := range signals {
		parts = append(parts, fmt.Sprintf("%s %s %v", s.Signal, s.Value, s.Refuses))
	}
	return strings.Join(parts, "; ")
}

func TestResponseHeaderSignalsListEverySignalWithWhatItRefuses(t *testing.T) {
	const ua = "Mozilla/5.0 (compatible; FooBot/2.1)"
	tests := []struct {
		name     string
		h        []string
		purposes []string
		want     string
	}{
		{"none", []string{"Content-Type", "text/html", "X-Robots-Tag", "noindex"}, nil, ""},
		{"tdm-reservation 1 and 0: one list, a 1 reserves", []string{"Tdm-Reservation", "1", "Tdm-Reservation", "0"}, nil,
			"tdm-reservation-header 1, 0 [train-ai train-genai ai-train tdm]"},
		{"Content-Usage, all its categories", []string{"Content-Usage", "train-ai=n, search=n, ai-use=y"}, nil,
			"content-usage-header train-ai=n, search=n, ai-use=y [train-ai train-genai ai-train search]"},
		{"Content-Usage, the client's own purpose", []string{"Content-Usage", "archive=n"}, []string{"archive"},
			"content-usage-header archive=n [archive]"},
		{"X-Robots-Tag noai", []string{"X-Robots-Tag", "noindex, noai"}, nil, "x-robots-tag noindex, noai [train-ai train-genai ai-train tdm]"},
		{"X-Robots-Tag scoped to the agent", []string{"X-Robots-Tag", "FooBot: noai"}, nil, "x-robots-tag FooBot: noai [train-ai train-genai ai-train tdm]"},
		{"X-Robots-Tag scoped to another agent", []string{"X-Robots-Tag", "BarBot: noai"}, nil, "x-robots-tag BarBot: noai []"},
		{"noimageai on a page", []string{"Content-Type", "text/html", "X-Robots-Tag", "noimageai"}, nil, "x-robots-tag noimageai []"},
		{"noimageai on an image", []string{"Content-Type", "image/png", "X-Robots-Tag", "noimageai"}, nil,
			"x-robots-tag noimageai [train-ai train-genai ai-train tdm]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := signalsText(listed(t, header(tt.h...), nil, ua, tt.purposes)); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

// The meta tags are read for a client with a purpose they concern
// (training) and listed whether they refuse it or not.
func TestResponseMetaSignalsListTheTagsThatApplyToTheAgent(t *testing.T) {
	metas := []htmlmeta.Meta{
		{Name: "description", Content: "noai art"},
		{Name: "tdm-reservation", Content: "1"}, {Name: "tdm-policy", Content: "https://example.org/p"},
		{Name: "robots", Content: "noimageai"},
		{Name: "foobot", Content: "noai"},
		{Name: "barbot", Content: "noai"},
	}
	got := listed(t, nil, metas, "FooBot", []string{"train-ai"})
	want := "meta-tdm-reservation 1 [train-ai train-genai ai-train tdm]; meta-robots noimageai []; meta-robots noai [train-ai train-genai ai-train tdm]"
	if signalsText(got) != want {
		t.Errorf("got  %s\nwant %s", signalsText(got), want)
	}
	if got[0].Policy != "https://example.org/p" || got[2].Where != `<meta name="foobot">` {
		t.Errorf("policy %q, where %q", got[0].Policy, got[2].Where)
	}
}

func TestDecisionUsageSignalsAndWhatRefused(t *testing.T) {
	f := robots.Parse([]byte("User-agent: *\nContent-Usage: train-ai=n\nAllow: /\nContent-Signal: search=no, ai-train=yes\n"))
	tf := tdmrep.Parse([]byte(`[{"location": "/", "tdm-reservation": 1}]`))
	d := Decision{
		Request: Request{Target: "/page", Client: Client{Purposes: []string{"search"}}},
		Robots:  &resolver.Result{File: f, Status: resolver.OK},
		Rule:    f.GroupForUserAgent("FooBot").Decide("/page"),
		TDM:     tf.Match("/page"),
	}
	want := "robots-content-usage train-ai=n [train-ai train-genai ai-train]; robots-content-signal search=no [search]; " +
		"robots-content-signal ai-train=yes []; tdmrep tdm-reservation 1 [train-ai train-genai ai-train tdm]"
	if got := signalsText(d.UsageSignals()); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if d.Request.Client.Purposes = nil; d.UsageSignals() != nil || signalsText(d.ExplainSignals()) != want {
		t.Errorf("without purposes: UsageSignals %v (want none), ExplainSignals %s", d.UsageSignals(), signalsText(d.ExplainSignals()))
	}

	for _, tt := range []struct {
		d    Decision
		want string
	}{
		{Decision{Verdict: Allow}, ""},
		{Decision{Verdict: Disallow}, ""},
		{Decision{Verdict: UsageUnknown}, audit.SignalTDMRepUnknown},
		{Decision{Verdict: UsageDenied, TDM: tf.Match("/")}, audit.SignalTDMRep},
		{Decision{Verdict: UsageDenied, PrefSignal: true}, audit.SignalRobotsContentSignal},
		{Decision{Verdict: UsageDenied}, audit.SignalRobotsContentUsage},
	} {
		if got := tt.d.RefusedBy(); got != tt.want || got != "" && !slices.Contains(audit.SignalKinds, got) {
			t.Errorf("RefusedBy of %v: %q, want %q", tt.d.Verdict, got, tt.want)
		}
	}
}
