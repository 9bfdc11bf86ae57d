package policy

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/robotsgate/robotsgate/config"
	"github.com/robotsgate/robotsgate/doccache"
	"github.com/robotsgate/robotsgate/egress"
	"github.com/robotsgate/robotsgate/origin"
	"github.com/robotsgate/robotsgate/robots/resolver"
	"github.com/robotsgate/robotsgate/tdmrep"
)

const testTDMRep = `[
  {"location": "/private/open/*", "tdm-reservation": 0},
  {"location": "/private/", "tdm-reservation": 1, "tdm-policy": "https://example.com/tdm-policy.json"},
  {"location": "/reserved-no-policy/", "tdm-reservation": 1}
]`

// tdmOrigin serves robots.txt (line 2 disallows /robots-private) and
// tdmrep.json with status tdmStatus (200: testTDMRep), counting the
// requests for the latter.
func tdmOrigin(t *testing.T, tdmStatus int) (origin.Origin, *atomic.Int64) {
	t.Helper()
	var hits atomic.Int64
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/robots.txt":
			fmt.Fprint(w, "User-agent: *\nDisallow: /robots-private\n")
		case tdmrep.Path:
			hits.Add(1)
			w.WriteHeader(tdmStatus)
			fmt.Fprint(w, testTDMRep)
		}
	}))
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	o, err := origin.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	return o, &hits
}

func tdmEngine(t *testing.T, onUnknown config.UsageOnUnknown) *Engine {
	t.Helper()
	guard := &egress.Guard{BlockPrivate: true, AllowNetworks: []netip.Prefix{netip.MustParsePrefix("127.0.0.2/32")}}
	r, err := resolver.New(resolver.Config{DialContext: guard.DialContext, FetchTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	c, err := doccache.NewTDMRep(doccache.TDMRepConfig{Resolver: r})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	e, err := New(Config{Resolver: r, TDMRep: c, TDMUnknown: onUnknown})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestTDMRep: the first matching tdmrep.json entry refuses the TDM
// purposes when it reserves; other purposes, and clients without any, are
// never judged by it (and never make it fetched).
func TestTDMRep(t *testing.T) {
	o, hits := tdmOrigin(t, 200)
	e := tdmEngine(t, config.UsageUnknownRefuse)
	tests := []struct {
		name     string
		target   string
		purposes []string
		mode     Mode
		verdict  Verdict
		entry    int // the entry that applied, -1 none
		note     []string
		read     bool // the tdmrep.json was consulted
	}{
		{"reserved entry refuses train-ai", "/private/page", []string{"train-ai"}, Enforce, UsageDenied, 1,
			[]string{`tdmrep.json[1] (location "/private/") has tdm-reservation 1`, "refuses the purpose train-ai", `tdm-policy "https://example.com/tdm-policy.json"`}, true},
		{"an earlier entry beats the broader one", "/private/open/page", []string{"train-ai"}, Enforce, Allow, 0, nil, true},
		{"no matching entry", "/public/page", []string{"train-ai"}, Enforce, Allow, -1, nil, true},
		{"a reservation without a policy", "/reserved-no-policy/x", []string{"tdm"}, Enforce, UsageDenied, 2, []string{"refuses the purpose tdm; no tdm-policy"}, true},
		{"train-genai", "/private/page", []string{"search", "train-genai"}, Enforce, UsageDenied, 1, []string{"refuses the purpose train-genai"}, true},
		{"ai-train", "/private/page", []string{"ai-train"}, Enforce, UsageDenied, 1, nil, true},
		{"a monitored client: judged, not refused", "/private/page", []string{"train-ai"}, Monitor, UsageDenied, 1, nil, true},
		{"search is not a TDM purpose", "/private/page", []string{"search"}, Enforce, Allow, -1, nil, false},
		{"ai-input is not a TDM purpose", "/private/page", []string{"ai-input"}, Enforce, Allow, -1, nil, false},
		{"no purposes", "/private/page", nil, Enforce, Allow, -1, nil, false},
		{"bypass", "/private/page", []string{"train-ai"}, Bypass, Allow, -1, nil, false},
		{"the tdmrep.json itself", "/.well-known/tdmrep.json", []string{"train-ai"}, Enforce, Allow, -1, nil, false},
		{"robots.txt refuses first", "/robots-private/x", []string{"train-ai"}, Enforce, Disallow, -1, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := e.Decide(context.Background(), Request{Origin: o, Target: tt.target, Client: Client{Mode: tt.mode, Purposes: tt.purposes}})
			if err != nil {
				t.Fatal(err)
			}
			entry := -1
			if d.TDM.Entry != nil {
				entry = d.TDM.Entry.Index
			}
			if d.Verdict != tt.verdict || entry != tt.entry || (d.TDMRep != nil) != tt.read {
				t.Errorf("verdict %v entry %d read %v, want %v %d %v (note %q)", d.Verdict, entry, d.TDMRep != nil, tt.verdict, tt.entry, tt.read, d.Note)
			}
			for _, want := range tt.note {
				if !strings.Contains(d.Note, want) {
					t.Errorf("note %q lacks %q", d.Note, want)
				}
			}
			if tt.verdict == UsageDenied && d.Refused() != (tt.mode == Enforce) {
				t.Errorf("Refused() = %v", d.Refused())
			}
		})
	}
	if n := hits.Load(); n != 1 {
		t.Errorf("tdmrep.json fetched %d times, want once", n)
	}
}

// TestTDMRepUnknown: an unreachable tdmrep.json refuses the TDM purposes
// (503, Retry-After) unless usage.on_unknown is allow; other clients are
// not affected and do not make it fetched.
func TestTDMRepUnknown(t *testing.T) {
	for _, onUnknown := range []config.UsageOnUnknown{config.UsageUnknownRefuse, config.UsageUnknownAllow} {
		t.Run(string(onUnknown), func(t *testing.T) {
			o, hits := tdmOrigin(t, 503)
			e := tdmEngine(t, onUnknown)
			d, err := e.Decide(context.Background(), Request{Origin: o, Target: "/page", Client: Client{Mode: Enforce}})
			if err != nil || d.Verdict != Allow || d.TDMRep != nil || hits.Load() != 0 {
				t.Fatalf("no purposes: %v %v, tdmrep.json read %v, fetched %d times", d.Verdict, err, d.TDMRep != nil, hits.Load())
			}
			d, err = e.Decide(context.Background(), Request{Origin: o, Target: "/page", Client: Client{Mode: Enforce, Purposes: []string{"train-ai"}}})
			if err != nil || !d.TDMRep.Unknown() || hits.Load() != 1 {
				t.Fatalf("train-ai: %v, unknown %v, fetched %d times", err, d.TDMRep.Unknown(), hits.Load())
			}
			if !strings.Contains(d.Note, "tdmrep.json could not be fetched (http_5xx)") {
				t.Errorf("note %q", d.Note)
			}
			switch onUnknown {
			case config.UsageUnknownRefuse:
				if d.Verdict != UsageUnknown || d.RetryAfter < time.Second || !strings.Contains(d.Note, "usage.on_unknown: refuse") {
					t.Errorf("verdict %v retry after %v note %q", d.Verdict, d.RetryAfter, d.Note)
				}
			case config.UsageUnknownAllow:
				if d.Verdict != Allow || !strings.Contains(d.Note, "allowed (usage.on_unknown: allow)") {
					t.Errorf("verdict %v note %q", d.Verdict, d.Note)
				}
			}
		})
	}
}

func TestVerdictNames(t *testing.T) {
	if UsageUnknown.String() != "usage-unknown" || UsageDenied.String() != "usage-denied" {
		t.Errorf("%q %q", UsageUnknown, UsageDenied)
	}
}
