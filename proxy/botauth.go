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
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/robotsgate/robotsgate/audit"
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
	if cfg.BotAuth.SignatureAgent != "" {
		s, err := newSigner(cfg.BotAuth.Key, cfg.BotAuth.SignatureAgent)
		if err != nil {
			return nil, fmt.Errorf("bot_auth.key: %w", err)
		}
		sg.gateway = s
	}
	for i, c := range cfg.Clients {
		if c.SignatureAgent != "" {
			s, err := newSigner(cfg.SignKeyPath(c), c.SignatureAgent)
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

func newSigner(path, agentURL string) (*botauth.Signer, error) {
	key, err := loadOrCreateSigningKey(path)
	if err != nil {
		return nil, err
	}
	return botauth.NewSigner(key, agentURL)
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
	key, err = audit.ParseKey(data)
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

// LoadSigningKey returns the public half of the signing key in path, for
// the bot-auth command, creating the key when the file does not exist (so
// that its directory can be published before the first signed request);
// created says whether it did.
func LoadSigningKey(path string) (pub ed25519.PublicKey, created bool, err error) {
	key, created, err := loadSigningKey(path)
	if err != nil {
		return nil, false, err
	}
	return key.Public().(ed25519.PublicKey), created, nil
}

// outboundKey is the context key of a proxied request's *outbound.
type outboundKey struct{}

// outbound is what the upstream transport needs to sign a proxied request
// and to pay for it under pay per crawl.
type outbound struct {
	signer *botauth.Signer
	max    *paycrawl.Price
	// repace holds a pay-per-crawl retry for a pacing slot of its own, as
	// any request of its pacing key: the retry is another request the
	// origin sees.
	repace func(context.Context) error
	slot   *auditSlot
}

// outboundFor prepares the signing of a judged request (nil: it goes out
// unsigned): its client's signer, unless the client signed the request
// itself, whose signature then passes untouched and alone.
func (s *Server) outboundFor(req *http.Request, slot *auditSlot) *outbound {
	st := s.settings()
	var client policy.Client
	if slot != nil && slot.decided {
		client = slot.d.Request.Client
	}
	signer := st.signers.forClient(client)
	if signer == nil || botauth.ClientSigned(req.Header) {
		return nil
	}
	out := &outbound{signer: signer, max: st.signers.maxPrice(client), slot: slot}
	if slot != nil {
		out.repace = func(ctx context.Context) error {
			slot.permit.Release()
			d := slot.d
			permit, err := s.pace(ctx, st, &d)
			if err != nil {
				return err
			}
			slot.permit, slot.waited = permit, slot.waited+d.Waited
			return nil
		}
	}
	return out
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

// signFetches wraps the robots.txt resolver's transport (robots.txt and
// tdmrep.json, each redirect hop a request of its own) to sign with the
// gateway key: those fetches are shared by every client, so only the
// gateway's identity can sign them.
func (s *Server) signFetches(next http.RoundTripper) http.RoundTripper {
	return &fetchSigner{next: next, s: s}
}

type fetchSigner struct {
	next http.RoundTripper
	s    *Server
}

func (f *fetchSigner) RoundTrip(req *http.Request) (*http.Response, error) {
	st := f.s.settings()
	if st == nil || st.signers == nil || st.signers.gateway == nil {
		return f.next.RoundTrip(req)
	}
	f.s.metrics.SignedRequests.WithLabelValues("fetch").Inc()
	return f.next.RoundTrip(signedCopy(req, st.signers.gateway))
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

// KeyDirectory is the key directory of the gateway's signing key
// (bot_auth), nil without one: the admin listener serves it.
func (s *Server) KeyDirectory() []byte {
	st := s.settings()
	if st == nil || st.signers == nil || st.signers.gateway == nil {
		return nil
	}
	return botauth.Directory(st.signers.gateway.Public())
}

// SignatureAgentCard is the gateway's signature agent card, nil without
// signing.
func (s *Server) SignatureAgentCard() []byte {
	st := s.settings()
	if st == nil || st.signers == nil || st.signers.gateway == nil {
		return nil
	}
	return botauth.Card(botauth.CardFacts{Name: "robotsgate", AgentURL: st.signers.gateway.AgentURL(), Contact: st.cfg.BotAuth.Contact})
}
