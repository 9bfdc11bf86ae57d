package upstream

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
	"os"
	"path/filepath"
	"time"

	"github.com/robotsgate/robotsgate/auditlog"
	"github.com/robotsgate/robotsgate/botauth"
	"github.com/robotsgate/robotsgate/config"
	"github.com/robotsgate/robotsgate/metrics"
	"github.com/robotsgate/robotsgate/paycrawl"
)

// Web Bot Auth (RFC 9421, the IETF webbotauth drafts): the keys that sign
// outbound requests, a client's own or the gateway's, and the signing of
// proxied requests (Exchange.Sign) and of robotsgate's own fetches
// (FetchSigner).

// Signers are a configuration's Web Bot Auth signers (bot_auth,
// clients[].signature_agent) and its clients' maximum prices (pay per
// crawl).
type Signers struct {
	gateway *botauth.Signer   // bot_auth's, nil without signature_agent
	clients []*botauth.Signer // by clients entry; nil: the gateway's
	prices  []*paycrawl.Price // by clients entry; nil: 402s are relayed
}

// LoadSigners reads (creating when missing) the signing keys cfg names.
func LoadSigners(cfg *config.Config) (*Signers, error) {
	sg := &Signers{clients: make([]*botauth.Signer, len(cfg.Clients)), prices: make([]*paycrawl.Price, len(cfg.Clients))}
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

// ForClient is the signer of the requests of the client of clients entry
// entry (1-based; 0: none): its entry's own, else the gateway's (nil:
// none).
func (sg *Signers) ForClient(entry int) *botauth.Signer {
	if sg == nil {
		return nil
	}
	if i := entry - 1; i >= 0 && i < len(sg.clients) && sg.clients[i] != nil {
		return sg.clients[i]
	}
	return sg.gateway
}

// Gateway is bot_auth's signer, nil without signature_agent.
func (sg *Signers) Gateway() *botauth.Signer {
	if sg == nil {
		return nil
	}
	return sg.gateway
}

// MaxPrice is the max_price of the client of clients entry entry, nil
// when it has none.
func (sg *Signers) MaxPrice(entry int) *paycrawl.Price {
	if i := entry - 1; sg != nil && i >= 0 && i < len(sg.prices) {
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

// Signing is what the transport needs to sign a proxied request for Web
// Bot Auth and to pay for it under pay per crawl.
type Signing struct {
	Signer *botauth.Signer
	// Max is the client's max_price, nil: 402s are relayed.
	Max *paycrawl.Price
	// Repace holds a pay-per-crawl retry for a pacing slot of its own, as
	// any request of its pacing key: the retry is another request the
	// origin sees.
	Repace func(context.Context) error
}

// SignedCopy is req signed by signer, also covering the fields named in
// also: a copy with a header of its own (a RoundTripper must not change
// the request it is given). A request that cannot be signed (it names no
// authority) goes out as it is.
func SignedCopy(req *http.Request, signer *botauth.Signer, also ...string) *http.Request {
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

// FetchSigner wraps the transport of robotsgate's own fetches
// (robots.txt, tdmrep.json and licences, each redirect hop a request of
// its own): it adds the operator's From and signs with the gateway key,
// those fetches being shared by every client, so that only the gateway's
// identity can sign them. identity gives both as the configuration says
// now ("" and nil: neither).
func FetchSigner(next http.RoundTripper, identity func() (from string, gateway *botauth.Signer), m *metrics.Metrics) http.RoundTripper {
	return &fetchSigner{next: next, identity: identity, metrics: m}
}

type fetchSigner struct {
	next     http.RoundTripper
	identity func() (string, *botauth.Signer)
	metrics  *metrics.Metrics
}

func (f *fetchSigner) RoundTrip(req *http.Request) (*http.Response, error) {
	from, gateway := f.identity()
	if from != "" && req.Header.Get("From") == "" {
		r := new(http.Request)
		*r = *req
		r.Header = req.Header.Clone()
		r.Header.Set("From", from)
		req = r
	}
	if gateway == nil {
		return f.next.RoundTrip(req)
	}
	f.metrics.SignedRequests.WithLabelValues("fetch").Inc()
	return f.next.RoundTrip(SignedCopy(req, gateway))
}

// CloseIdleConnections passes on to the wrapped transport (the resolver's
// Close).
func (f *fetchSigner) CloseIdleConnections() {
	if c, ok := f.next.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
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
