package upstream

import (
	"net/http"
	"net/mail"
	"net/url"
	"slices"
	"strings"

	"github.com/robotsgate/robotsgate/botauth"
	"github.com/robotsgate/robotsgate/config"
)

// How robotsgate names its operator on the requests it sends: the
// identification added to proxied requests (Identify), the From of its own
// fetches (OwnFrom), and the facts its signature agent card states
// (CardFacts), each as the configuration says.

// Identify adds the operator's identification (identify.from,
// identify.user_agent_suffix) to a request that is going upstream, after
// the decision (which used the client's own User-Agent). Neither is
// changed when the client's own signature covers it.
func Identify(req *http.Request, id config.Identify) {
	if id.From == "" && id.UserAgentSuffix == "" {
		return
	}
	signedFrom, signedUA := clientCovers(req.Header)
	if id.From != "" && !signedFrom {
		req.Header.Set("From", id.From)
	}
	if id.UserAgentSuffix != "" && !signedUA {
		ua := strings.TrimSpace(req.UserAgent() + " " + id.UserAgentSuffix)
		req.Header.Set("User-Agent", ua)
	}
}

// OwnFrom is the From of robotsgate's own fetches (RFC 9110 Section
// 10.1.2: a mailbox for the operator of a robotic agent): identify.from,
// else the address of a mailto: bot_auth.contact (the card's contact),
// else "".
func OwnFrom(cfg config.Config) string {
	if cfg.Identify.From != "" {
		return cfg.Identify.From
	}
	rest, ok := cutPrefixFold(cfg.BotAuth.Contact, "mailto:")
	if !ok {
		return ""
	}
	rest, _, _ = strings.Cut(rest, "?")
	addr, err := url.PathUnescape(rest)
	if err != nil {
		return ""
	}
	if a, err := mail.ParseAddress(addr); err != nil || a.Address != addr || strings.ContainsAny(addr, "\r\n") {
		return ""
	}
	return addr
}

// cutPrefixFold is strings.CutPrefix, the prefix compared without case.
func cutPrefixFold(s, prefix string) (string, bool) {
	if len(s) < len(prefix) || !strings.EqualFold(s[:len(prefix)], prefix) {
		return s, false
	}
	return s[len(prefix):], true
}

// clientCovers reports which of the fields identify may change a client's
// own signature covers: all of them when its Signature-Input cannot be
// read.
func clientCovers(h http.Header) (from, userAgent bool) {
	if !botauth.ClientSigned(h) {
		return false, false
	}
	names, err := botauth.CoveredFields(h)
	if err != nil {
		return true, true
	}
	return slices.Contains(names, "from"), slices.Contains(names, "user-agent")
}

// CardFacts are the facts of the signature agent card of the gateway's
// key (client < 0) or of clients[client]'s own: its key set's URL, the
// operator's contact, the product token (bot_auth.product_token, or the
// client's fixed agent) and purpose, and rfc9309-compliance, which holds
// only when every request signed with that key is judged by robots.txt:
// no client signing with it is in monitor or bypass mode, and no site's
// robots.txt is ignored.
func CardFacts(cfg config.Config, client int) botauth.CardFacts {
	raw, token := cfg.BotAuth.SignatureAgent, cfg.BotAuth.ProductToken
	if client >= 0 && client < len(cfg.Clients) {
		raw = cfg.Clients[client].SignatureAgent
		if a := cfg.Clients[client].Agent; a != "" {
			token = a
		}
	}
	f := botauth.CardFacts{Name: "robotsgate", Contact: cfg.BotAuth.Contact, ProductToken: token, Purpose: cfg.BotAuth.Purpose}
	if a, err := botauth.ParseAgent(raw, botauth.Form(cfg.BotAuth.SignatureAgentForm)); err == nil {
		f.JWKSURI = a.DirectoryURL()
	}
	f.Compliance = true
	for _, s := range cfg.Sites {
		if s.Robots == config.RobotsIgnore {
			f.Compliance = false
		}
	}
	for i, c := range cfg.Clients {
		own := c.SignatureAgent != ""
		signsWithIt := (client < 0 && !own) || i == client
		if signsWithIt && (c.Mode == config.ModeMonitor || c.Mode == config.ModeBypass) {
			f.Compliance = false
		}
	}
	return f
}
