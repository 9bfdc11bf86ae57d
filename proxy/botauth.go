package proxy

import (
	"context"
	"net/http"
	"time"

	"github.com/robotsgate/robotsgate/botauth"
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
// robotsgate's own fetches say who runs them (upstream.OwnFrom) and are signed with
// the gateway key (upstream.FetchSigner), both as the configuration says
// after a reload.
func (s *Server) signFetches(next http.RoundTripper) http.RoundTripper {
	return upstream.FetchSigner(next, func() (string, *botauth.Signer) {
		st := s.settings()
		if st == nil {
			return "", nil
		}
		return upstream.OwnFrom(st.cfg), st.signers.Gateway()
	}, s.metrics)
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
	return botauth.Card(upstream.CardFacts(st.cfg, -1))
}
