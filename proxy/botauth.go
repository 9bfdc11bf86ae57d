package proxy

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/mail"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/robotsgate/robotsgate/auditlog"
	"github.com/robotsgate/robotsgate/botauth"
	"github.com/robotsgate/robotsgate/config"
	"github.com/robotsgate/robotsgate/paycrawl"
	"github.com/robotsgate/robotsgate/policy"
)

// signers are a configuration's Web Bot Auth signers (bot_auth,
// clients[].signature_agent) and its clients' maximum prices (pay per
// crawl).
type signers struct {
	gateway *botauth.Signer   // bot_auth's, nil without signature_agent
	clients []*botauth.Signer // by clients entry; nil: the gateway's
	prices  []*paycrawl.Price // by clients entry; nil: 402s are relayed
}

// loadSigners reads (creating when missing) the signing keys cfg names.
func loadSigners(cfg *config.Config) (*signers, error) {
	sg := &signers{clients: make([]*botauth.Signer, len(cfg.Clients)), prices: make([]*paycrawl.Price, len(cfg.Clients))}
	form := botauth.Form(cfg.BotAuth.SignatureAgentForm)
	if cfg.BotAuth.SignatureAgent != "" {
		s, err := newSigner(cfg.BotAuth.Key, cfg.BotAuth.SignatureAgent, form)
		if err != nil {
			return nil, fmt.Errorf("bot_auth.key: %w", err)
		}
		sg.gateway = s
	}
	for i, c := range cfg.Clients {
		if c.SignatureAgent != "" {
			s, err := newSigner(cfg.SignKeyPath(c), c.SignatureAgent, form)
			if err != nil {
				return nil, fmt.Errorf("clients[%d].sign_key: %w", i, err)
			}
			sg.clients[i] = s
		}
		if c.MaxPrice != "" {
			p, err := paycrawl.Parse(c.MaxPrice)
			if err != nil {
				return nil, fmt.Errorf("clients[%d].max_price: %w", i, err)
			}
			sg.prices[i] = &p
		}
	}
	return sg, nil
}

func newSigner(path, agentURL string, form botauth.Form) (*botauth.Signer, error) {
	agent, err := botauth.ParseAgent(agentURL, form)
	if err != nil {
		return nil, err
	}
	key, err := loadOrCreateSigningKey(path)
	if err != nil {
		return nil, err
	}
	return botauth.NewSigner(key, agent)
}

// forClient is the signer of a client's requests: its entry's own, else
// the gateway's (nil: none).
func (sg *signers) forClient(c policy.Client) *botauth.Signer {
	if sg == nil {
		return nil
	}
	if i := c.Entry - 1; i >= 0 && i < len(sg.clients) && sg.clients[i] != nil {
		return sg.clients[i]
	}
	return sg.gateway
}

// maxPrice is a client's max_price, nil when it has none.
func (sg *signers) maxPrice(c policy.Client) *paycrawl.Price {
	if i := c.Entry - 1; sg != nil && i >= 0 && i < len(sg.prices) {
		return sg.prices[i]
	}
	return nil
}

// loadOrCreateSigningKey reads an Ed25519 key (PKCS #8 PEM, as the
// evidence key), creating it when the file does not exist
// (createSigningKey).
func loadOrCreateSigningKey(path string) (ed25519.PrivateKey, error) {
	key, _, err := loadSigningKey(path)
	return key, err
}

// loadSigningKey is loadOrCreateSigningKey, also saying whether the key
// was created now.
func loadSigningKey(path string) (key ed25519.PrivateKey, created bool, err error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return createSigningKey(path)
	}
	if err != nil {
		return nil, false, err
	}
	key, err = auditlog.ParseKey(data)
	if err != nil {
		return nil, false, fmt.Errorf("%s: %w", path, err)
	}
	return key, false, nil
}

// createSigningKey writes a new key to path (mode 0600, its directory
// 0700) whole or not at all: written to a temporary file, then linked to
// path, which fails if another process created path meanwhile, whose key
// is then the one read. A crash never leaves a torn key file at path.
func createSigningKey(path string) (ed25519.PrivateKey, bool, error) {
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, false, err
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, false, err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, false, err
	}
	tmp, err := os.CreateTemp(dir, ".signing-key-*") // mode 0600
	if err != nil {
		return nil, false, err
	}
	defer os.Remove(tmp.Name())
	err = pem.Encode(tmp, &pem.Block{Type: "PRIVATE KEY", Bytes: der})
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, false, fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Link(tmp.Name(), path); errors.Is(err, fs.ErrExist) {
		key, _, err := loadSigningKey(path)
		return key, false, err
	} else if err != nil {
		return nil, false, err
	}
	return key, true, nil
}

// outbound is what the upstream transport needs to sign a proxied request
// and to pay for it under pay per crawl.
type outbound struct {
	signer *botauth.Signer
	max    *paycrawl.Price
	// repace holds a pay-per-crawl retry for a pacing slot of its own, as
	// any request of its pacing key: the retry is another request the
	// origin sees.
	repace func(context.Context) error
}

// outboundFor prepares the signing of a judged request (nil: it goes out
// unsigned): its client's signer, unless the client signed the request
// itself, whose signature then passes untouched and alone.
func (s *Server) outboundFor(req *http.Request, rec *record) *outbound {
	st := s.settings()
	client := rec.d.Request.Client
	signer := st.signers.forClient(client)
	if signer == nil || botauth.ClientSigned(req.Header) {
		return nil
	}
	return &outbound{signer: signer, max: st.signers.maxPrice(client), repace: func(ctx context.Context) error {
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

// signedCopy is req signed by signer, also covering the fields named in
// also: a copy with a header of its own (a RoundTripper must not change
// the request it is given). A request that cannot be signed (it names no
// authority) goes out as it is.
func signedCopy(req *http.Request, signer *botauth.Signer, also ...string) *http.Request {
	r := new(http.Request)
	*r = *req
	r.Header = req.Header.Clone()
	if r.Header == nil {
		r.Header = http.Header{}
	}
	if err := signer.Sign(r, time.Now(), also...); err != nil {
		return req
	}
	return r
}

// signFetches wraps the robots.txt resolver's transport (robots.txt,
// tdmrep.json and licences, each redirect hop a request of its own): it
// adds the operator's From (ownFrom) and signs with the gateway key, those
// fetches being shared by every client, so that only the gateway's
// identity can sign them. Both follow a reload.
func (s *Server) signFetches(next http.RoundTripper) http.RoundTripper {
	return &fetchSigner{next: next, s: s}
}

type fetchSigner struct {
	next http.RoundTripper
	s    *Server
}

func (f *fetchSigner) RoundTrip(req *http.Request) (*http.Response, error) {
	st := f.s.settings()
	if st == nil {
		return f.next.RoundTrip(req)
	}
	if from := ownFrom(st.cfg); from != "" && req.Header.Get("From") == "" {
		r := new(http.Request)
		*r = *req
		r.Header = req.Header.Clone()
		r.Header.Set("From", from)
		req = r
	}
	if st.signers == nil || st.signers.gateway == nil {
		return f.next.RoundTrip(req)
	}
	f.s.metrics.SignedRequests.WithLabelValues("fetch").Inc()
	return f.next.RoundTrip(signedCopy(req, st.signers.gateway))
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

// CloseIdleConnections passes on to the wrapped transport (the resolver's
// Close).
func (f *fetchSigner) CloseIdleConnections() {
	if c, ok := f.next.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
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
	if st == nil || st.signers == nil || st.signers.gateway == nil {
		return nil, nil
	}
	g := st.signers.gateway
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
	if st == nil || st.signers == nil || st.signers.gateway == nil {
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

// SignedDirectory is the key directory of the signing key in keyPath
// (created when missing, so that it can be published before the first
// signed request) published at agentURL, and
// the header fields that sign it at now for lifetime, for the bot-auth
// command to write where the operator serves it.
func SignedDirectory(keyPath, agentURL string, form botauth.Form, now time.Time, lifetime time.Duration) (body []byte, h http.Header, created bool, err error) {
	agent, err := botauth.ParseAgent(agentURL, form)
	if err != nil {
		return nil, nil, false, err
	}
	key, created, err := loadSigningKey(keyPath)
	if err != nil {
		return nil, nil, false, err
	}
	s, err := botauth.NewSigner(key, agent)
	if err != nil {
		return nil, nil, false, err
	}
	body = botauth.Directory(s.Public())
	h, err = botauth.SignDirectory(body, agent.Authority(), now, lifetime, s)
	return body, h, created, err
}
