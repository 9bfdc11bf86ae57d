package proxy

import (
	"io"
	"net/http"
	"sync"
	"testing"

	"github.com/robotsgate/robotsgate/config"
	"github.com/robotsgate/robotsgate/tdmrep"
)

// robotsgate's own fetches (robots.txt and tdmrep.json here; licences go
// through the same client) say who fetches, as the crawler best-practices
// draft asks (draft-illyes-webbotauth-cbcp-00, "Crawlers MUST be easily
// identifiable through their user agent string"): by default a product
// token and the project's URL, and the operator's mail address in From
// (RFC 9110 Section 10.1.2) when identify.from, or a mailto:
// bot_auth.contact, names one. A contact that is no mail address adds no
// From; identify.from wins over the contact.
func TestOwnFetchesIdentifyThemselves(t *testing.T) {
	for _, tc := range []struct {
		name          string
		from, contact string
		want          string
	}{
		{"default", "", "", ""},
		{"identify.from", "crawler-admin@example.org", "", "crawler-admin@example.org"},
		{"mailto contact", "", "mailto:ops@example.org", "ops@example.org"},
		{"web contact", "", "https://example.org/bot", ""},
		{"identify.from wins", "crawler-admin@example.org", "mailto:ops@example.org", "crawler-admin@example.org"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			seen := map[string]http.Header{}
			o := serveAt(t, "127.0.0.2", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				seen[r.URL.Path] = r.Header.Clone()
				mu.Unlock()
				switch r.URL.Path {
				case "/robots.txt":
					io.WriteString(w, "User-agent: *\nAllow: /\n")
				case tdmrep.Path:
					io.WriteString(w, "[]")
				default:
					io.WriteString(w, "page")
				}
			}))
			cfg := testConfig(t, nil)
			cfg.Identify.From, cfg.BotAuth.Contact = tc.from, tc.contact
			cfg.Clients = []config.Client{{CIDR: "127.0.0.0/8", Mode: config.ModeEnforce, Purposes: []string{"train-ai"}}}
			c := startProxy(t, cfg).client()
			if resp, body := get(t, c, o.URL+"/page"); resp.StatusCode != http.StatusOK {
				t.Fatalf("GET /page: %d %s", resp.StatusCode, body)
			}
			mu.Lock()
			defer mu.Unlock()
			for _, path := range []string{"/robots.txt", tdmrep.Path} {
				h, ok := seen[path]
				if !ok {
					t.Fatalf("%s was not fetched", path)
				}
				if got := h.Get("User-Agent"); got != "robotsgate/1.0 (+https://github.com/robotsgate/robotsgate)" {
					t.Errorf("%s: User-Agent %q, want the product token and the project URL", path, got)
				}
				if got := h.Get("From"); got != tc.want {
					t.Errorf("%s: From %q, want %q", path, got, tc.want)
				}
			}
		})
	}
}

// The card claims rfc9309-compliance only when every request signed with
// its key is judged by robots.txt: a client in monitor or bypass mode
// signing with the gateway key, or a site whose robots.txt is ignored,
// makes it false; a client with a key of its own does not touch the
// gateway's card, and its own card states its fixed agent as product
// token.
func TestCardClaimsComplianceOnlyWhenEveryRequestIsJudged(t *testing.T) {
	base := func() config.Config {
		cfg := config.Default()
		cfg.BotAuth.SignatureAgent = "https://gate.example"
		cfg.BotAuth.ProductToken, cfg.BotAuth.Purpose = "GateBot", "search"
		return cfg
	}
	own := config.Client{CIDR: "10.0.0.0/8", Mode: config.ModeBypass, SignatureAgent: "https://own.example/keys.json", Agent: "OwnBot"}
	for _, tc := range []struct {
		name      string
		set       func(*config.Config)
		client    int
		compliant bool
		token     string
		jwks      string
	}{
		{"enforce only", func(*config.Config) {}, -1, true, "GateBot", "https://gate.example/.well-known/http-message-signatures-directory"},
		{"a monitor client", func(c *config.Config) {
			c.Clients = []config.Client{{CIDR: "10.0.0.0/8", Mode: config.ModeMonitor}}
		}, -1, false, "GateBot", ""},
		{"a bypass client", func(c *config.Config) {
			c.Clients = []config.Client{{CIDR: "10.0.0.0/8", Mode: config.ModeBypass}}
		}, -1, false, "GateBot", ""},
		{"a site that ignores robots.txt", func(c *config.Config) {
			c.Sites = []config.Site{{Hosts: []string{"own.example"}, Robots: config.RobotsIgnore}}
		}, -1, false, "GateBot", ""},
		{"a bypass client with its own key", func(c *config.Config) { c.Clients = []config.Client{own} }, -1, true, "GateBot", ""},
		{"that client's own card", func(c *config.Config) { c.Clients = []config.Client{own} }, 0, false, "OwnBot", "https://own.example/keys.json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := base()
			tc.set(&cfg)
			f := CardFacts(cfg, tc.client)
			if f.Compliance != tc.compliant || f.ProductToken != tc.token || f.Purpose != "search" || (tc.jwks != "" && f.JWKSURI != tc.jwks) {
				t.Errorf("card facts %+v; want compliance %v, token %s", f, tc.compliant, tc.token)
			}
		})
	}
}
