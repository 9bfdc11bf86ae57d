// Package botauth signs requests for Web Bot Auth, the IETF webbotauth
// working group's profile of RFC 9421 HTTP Message Signatures, as
// draft-ietf-webbotauth-httpsig-protocol-00 defines it: an Ed25519
// signature over @authority and the signer's own Signature-Agent member,
// tagged "web-bot-auth", keyed by the JWK SHA-256 thumbprint (RFC 7638,
// RFC 8037 Appendix A.3), the member naming where the key set is published
// in one of the forms of agent.go. It also renders that key set, signs the
// response that serves it (the draft's Appendix B.1), renders a signature
// agent card (draft-meunier-webbotauth-registry, editor's copy of 10
// September 2026), and reads the Signature-Input of a request a client
// signed itself, to know which of its fields must not change. It does no
// I/O: keys come in as values.
package botauth

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Draft is the specification this package follows, for documentation.
const Draft = "draft-ietf-webbotauth-httpsig-protocol-00"

// Tag is the tag signature parameter every Web Bot Auth signature carries.
const Tag = "web-bot-auth"

// Label is the label of robotsgate's signature in Signature-Input,
// Signature and Signature-Agent (RFC 9421 §4: any dictionary key; the
// draft's examples use sig1).
const Label = "sig1"

// Lifetime is how long a signature is valid: expires = created + Lifetime.
// The draft recommends no more than 24 hours and says a shorter one bounds
// replay; five minutes leaves room for clock skew between robotsgate and
// the origin.
const Lifetime = 5 * time.Minute

// Field names of the signature and of the pay-per-crawl price offer, as
// they are written (canonical form; HTTP/2 lower-cases them on the wire).
const (
	HeaderSignature      = "Signature"
	HeaderSignatureInput = "Signature-Input"
	HeaderSignatureAgent = "Signature-Agent"
)

// maxAgentURL bounds the Signature-Agent URL (a request header: an origin
// may refuse a large one).
const maxAgentURL = 2048

// Signer signs requests with one Ed25519 key on behalf of one signature
// agent. It is safe for concurrent use.
type Signer struct {
	key   ed25519.PrivateKey
	keyID string
	agent Agent
	// field is the Signature-Agent field value (Agent.Field), member its
	// component value in the signature base (RFC 9421 Section 2.1.2) and
	// component that component's identifier.
	field, member, component string
	// rand is where nonces come from (crypto/rand; a fixed reader in
	// tests).
	rand io.Reader
}

// NonceSize is the number of random bytes of a signature's nonce
// parameter (base64 in the field). Each signature carries a nonce of its
// own, as the draft's examples do: two requests signed for one authority
// in the same second would otherwise carry the same signature, which a
// verifier could not tell from a replay of the first.
const NonceSize = 32

// NewSigner returns a Signer for key on behalf of agent (ParseAgent), the
// place that publishes key's public half.
func NewSigner(key ed25519.PrivateKey, agent Agent) (*Signer, error) {
	if len(key) != ed25519.PrivateKeySize {
		return nil, errors.New("botauth: not an Ed25519 private key")
	}
	if agent.directory == "" {
		return nil, errors.New("botauth: no signature agent")
	}
	return &Signer{
		key:       key,
		keyID:     Thumbprint(key.Public().(ed25519.PublicKey)),
		agent:     agent,
		field:     agent.Field(Label),
		member:    agent.Member(),
		component: agent.component(Label),
		rand:      rand.Reader,
	}, nil
}

// KeyID is the keyid of the Signer's signatures: its public key's JWK
// SHA-256 thumbprint, base64url.
func (s *Signer) KeyID() string { return s.keyID }

// Public is the Signer's public key.
func (s *Signer) Public() ed25519.PublicKey { return s.key.Public().(ed25519.PublicKey) }

// Agent is where the Signer's key is published.
func (s *Signer) Agent() Agent { return s.agent }

// Sign adds robotsgate's Signature-Agent, Signature-Input and Signature to
// req, created at now and expiring Lifetime later, covering @authority, its
// own Signature-Agent member and the fields named in also (lower-case,
// e.g. "crawler-exact-price"; each must be present on req, and is covered
// with its values as req carries them). It replaces an earlier signature
// of robotsgate's (a redirect hop, a retry): callers pass a request a
// client signed itself through untouched (ClientSigned) instead.
func (s *Signer) Sign(req *http.Request, now time.Time, also ...string) error {
	authority, err := Authority(req)
	if err != nil {
		return err
	}
	var nonce [NonceSize]byte
	if _, err := io.ReadFull(s.rand, nonce[:]); err != nil {
		return fmt.Errorf("botauth: nonce: %w", err)
	}
	params := signatureParams(s.component, now, s.keyID, base64.StdEncoding.EncodeToString(nonce[:]), also)
	base, err := signatureBase(authority, s.component, s.member, req.Header, also, params)
	if err != nil {
		return err
	}
	sig := ed25519.Sign(s.key, []byte(base))
	req.Header.Set(HeaderSignatureAgent, s.field)
	req.Header.Set(HeaderSignatureInput, Label+"="+params)
	req.Header.Set(HeaderSignature, Label+"=:"+base64.StdEncoding.EncodeToString(sig)+":")
	return nil
}

// signatureBase is the signature base (RFC 9421 §2.5) of a signature over
// @authority, the Signature-Agent component (its identifier agent, e.g.
// "signature-agent";key="sig1", and its value serialized as member), the
// header fields named in also, with params as its @signature-params.
func signatureBase(authority, agent, member string, h http.Header, also []string, params string) (string, error) {
	var b strings.Builder
	b.Grow(256)
	b.WriteString(`"@authority": `)
	b.WriteString(authority)
	b.WriteString("\n" + agent + ": ")
	b.WriteString(member)
	b.WriteByte('\n')
	for _, name := range also {
		values := h.Values(name)
		if len(values) == 0 {
			return "", fmt.Errorf("botauth: cannot cover %q: the request has no such field", name)
		}
		b.WriteString(`"` + name + `": `)
		b.WriteString(fieldValue(values))
		b.WriteByte('\n')
	}
	b.WriteString(`"@signature-params": `)
	b.WriteString(params)
	return b.String(), nil
}

// signatureParams serializes the signature's @signature-params (RFC 9421
// §2.3): the covered components (@authority, the Signature-Agent
// component agent, also) and created, expires, keyid, nonce, tag.
func signatureParams(agent string, now time.Time, keyID, nonce string, also []string) string {
	var b strings.Builder
	b.Grow(160)
	b.WriteString(`("@authority" ` + agent)
	for _, name := range also {
		b.WriteString(` "` + name + `"`)
	}
	created := now.Unix()
	b.WriteString(");created=")
	b.WriteString(strconv.FormatInt(created, 10))
	b.WriteString(";expires=")
	b.WriteString(strconv.FormatInt(created+int64(Lifetime/time.Second), 10))
	b.WriteString(`;keyid="`)
	b.WriteString(keyID)
	b.WriteString(`";nonce="`)
	b.WriteString(nonce)
	b.WriteString(`";tag="` + Tag + `"`)
	return b.String()
}

// fieldValue is a header field's component value (RFC 9421 §2.1): its
// values with surrounding whitespace trimmed, joined by ", ".
func fieldValue(values []string) string {
	if len(values) == 1 {
		return strings.Trim(values[0], " \t")
	}
	trimmed := make([]string, len(values))
	for i, v := range values {
		trimmed[i] = strings.Trim(v, " \t")
	}
	return strings.Join(trimmed, ", ")
}

// Authority is req's @authority component (RFC 9421 §2.2.3): the host
// and port it goes to, lower-case, without the scheme's default port.
func Authority(req *http.Request) (string, error) {
	host := req.Host
	if host == "" && req.URL != nil {
		host = req.URL.Host
	}
	if host == "" {
		return "", errors.New("botauth: the request names no authority")
	}
	host = strings.ToLower(host)
	scheme := "http"
	if req.URL != nil && req.URL.Scheme != "" {
		scheme = strings.ToLower(req.URL.Scheme)
	}
	switch {
	case scheme == "http" && strings.HasSuffix(host, ":80"):
		host = strings.TrimSuffix(host, ":80")
	case scheme == "https" && strings.HasSuffix(host, ":443"):
		host = strings.TrimSuffix(host, ":443")
	}
	return host, nil
}

// ClientSigned reports whether a request carries a signature of its
// client's (any of Signature, Signature-Input, Signature-Agent): robotsgate
// then adds no signature of its own and changes none of those fields.
func ClientSigned(h http.Header) bool {
	return len(h[HeaderSignature]) > 0 || len(h[HeaderSignatureInput]) > 0 || len(h[HeaderSignatureAgent]) > 0
}
