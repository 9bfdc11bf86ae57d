package proxy

import (
	"context"
	"net/http"
	"net/mail"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/robotsgate/robotsgate/botauth"
	"github.com/robotsgate/robotsgate/config"
	"github.com/robotsgate/robotsgate/upstream"
)

// signingFor prepares the signing of a judged request (nil: it goes out
// unsigned): its client's signer, unless the client signed the request
// itself, whose signature then passes untouched and alone.
func (s *Server) signingFor(req *http.Request, rec *record) *upstream.Signing {
	st := s.settings()
	entry := rec.d.Request.Client.Entry
	signer := st.signers.ForClient(entry)
	if signer == nil || botauth.ClientSigned(req.Header) {
		return nil
	}
	return &upstream.Signing{Signer: signer, Max: st.signers.MaxPrice(entry), Repace: func(ctx context.Context) error {
		rec.permit.Release()
		d := rec.d
		permit, err := s.pace(ctx, st, &d)
		if err != nil {
			return err
		}
		rec.permit, rec.waited = permit, rec.waited+d.Waited
		return nil
	}}
}

// signFetches wraps the robots.txt resolver's transport (robots.txt,
// tdmrep.json and licences, each redirect hop a request of its own):
// robotsgate's own fetches say who runs them (ownFrom) and are signed with
// the gateway key (upstream.FetchSigner), both as the configuration says
// after a reload.
func (s *Server) signFetches(next http.RoundTripper) http.RoundTripper {
	return upstream.FetchSigner(next, func() (string, *botauth.Signer) {
		st := s.settings()
		if st == nil {
			return "", nil
		}
		return ownFrom(st.cfg), st.signers.Gateway()
	}, s.metrics)
}

// ownFrom is the From of robotsgate's own fetches (RFC 9110 Section
// 10.1.2: a mailbox for the operator of a robotic agent): identify.from,
// else the address of a mailto: bot_auth.contact (the card's contact),
// else "".
func ownFrom(cfg config.Config) string {
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

// DirectoryLifetime is how long the signature of the key directory the
// admin listener serves is valid: it signs each response anew, and a
// verifier that keeps the proof of a directory it fetched (the draft's
// Appendix C.8 asks for lifetimes well beyond republication) can keep it
// for a day.
const DirectoryLifetime = 24 * time.Hour

// KeyDirectory is the key directory of the gateway's signing key
// (bot_auth) and the header fields that sign it for the signature agent's
// authority at now (botauth.SignDirectory), nil without signing: the admin
// listener serves it.
func (s *Server) KeyDirectory(now time.Time) ([]byte, http.Header) {
	st := s.settings()
	if st == nil || st.signers.Gateway() == nil {
		return nil, nil
	}
	g := st.signers.Gateway()
	body := botauth.Directory(g.Public())
	h, err := botauth.SignDirectory(body, g.Agent().Authority(), now, DirectoryLifetime, g)
	if err != nil {
		return nil, nil
	}
	return body, h
}

// SignatureAgentCard is the gateway's signature agent card, nil without
// signing.
func (s *Server) SignatureAgentCard() []byte {
	st := s.settings()
	if st == nil || st.signers.Gateway() == nil {
		return nil
	}
	return botauth.Card(CardFacts(st.cfg, -1))
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
