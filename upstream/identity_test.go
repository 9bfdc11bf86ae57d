package upstream

import (
	"testing"

	"github.com/robotsgate/robotsgate/config"
)

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
