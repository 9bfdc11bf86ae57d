package botauth

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// A key directory's response carries one signature per key it lists
// (draft-ietf-webbotauth-httpsig-protocol-00, Appendix B.1; the registry
// draft's editor's copy, Section 3.1.2, asks clients to ignore keys
// without one): each key signs @authority of the request that fetched the
// directory (with ;req) and the Content-Digest of the body (RFC 9530), so
// the key set can be re-served neither under another authority nor with
// other keys, tagged "http-message-signatures-directory", with created,
// expires and keyid.

// DirectoryTag is the tag of a directory response's signatures.
const DirectoryTag = "http-message-signatures-directory"

// HeaderContentDigest is the field that carries the body's digest.
const HeaderContentDigest = "Content-Digest"

// ContentDigest is the Content-Digest field value of body (RFC 9530
// Section 2): its SHA-256, sha-256=:base64:.
func ContentDigest(body []byte) string {
	sum := sha256.Sum256(body)
	return "sha-256=:" + base64.StdEncoding.EncodeToString(sum[:]) + ":"
}

// directoryLabel is the label of the i-th key's signature: "binding", as
// the draft's example (Appendix E.2.3), then binding2, binding3...
func directoryLabel(i int) string {
	if i == 0 {
		return "binding"
	}
	return "binding" + strconv.Itoa(i+1)
}

// SignDirectory returns the header fields of a response serving body, the
// key directory of signers' keys, to a request for authority (the
// directory URL's authority: Agent.Authority), signed by each signer at
// created and valid for lifetime: Content-Digest, Signature-Input and
// Signature, one signature per signer. The caller serves body byte for
// byte, with MediaType.
func SignDirectory(body []byte, authority string, created time.Time, lifetime time.Duration, signers ...*Signer) (http.Header, error) {
	if authority == "" || len(signers) == 0 {
		return nil, errors.New("botauth: a directory signature needs an authority and a key")
	}
	digest := ContentDigest(body)
	h := http.Header{}
	h.Set(HeaderContentDigest, digest)
	var inputs, sigs []string
	for i, s := range signers {
		params := directoryParams(created, lifetime, s.keyID)
		base := directoryBase(authority, digest, params)
		sig := ed25519.Sign(s.key, []byte(base))
		label := directoryLabel(i)
		inputs = append(inputs, label+"="+params)
		sigs = append(sigs, label+"=:"+base64.StdEncoding.EncodeToString(sig)+":")
	}
	h.Set(HeaderSignatureInput, strings.Join(inputs, ", "))
	h.Set(HeaderSignature, strings.Join(sigs, ", "))
	return h, nil
}

// directoryParams serializes a directory signature's @signature-params,
// in the order of the draft's example.
func directoryParams(created time.Time, lifetime time.Duration, keyID string) string {
	c := created.Unix()
	return `("@authority";req "content-digest");created=` + strconv.FormatInt(c, 10) +
		";expires=" + strconv.FormatInt(c+int64(lifetime/time.Second), 10) +
		`;keyid="` + keyID + `";tag="` + DirectoryTag + `"`
}

// directoryBase is a directory signature's signature base (RFC 9421
// Section 2.5; ;req takes @authority from the request, Section 2.4).
func directoryBase(authority, digest, params string) string {
	return `"@authority";req: ` + authority + "\n" +
		`"content-digest": ` + digest + "\n" +
		`"@signature-params": ` + params
}
