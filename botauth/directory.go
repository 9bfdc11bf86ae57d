package botauth

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
)

// WellKnownPath is where a key directory is served on its host
// (the draft's Section 8.1).
const WellKnownPath = "/.well-known/http-message-signatures-directory"

// MediaType is the media type of a key directory served at WellKnownPath.
const MediaType = "application/http-message-signatures-directory+json"

// JWK is an Ed25519 public key as a JSON Web Key (RFC 8037): kid is its
// thumbprint, as the draft requires of a directory at WellKnownPath.
type JWK struct {
	Kty string `json:"kty"`
	Crv string `json:"crv"`
	Kid string `json:"kid"`
	X   string `json:"x"`
	Use string `json:"use"`
}

// PublicJWK is pub as a JWK.
func PublicJWK(pub ed25519.PublicKey) JWK {
	return JWK{Kty: "OKP", Crv: "Ed25519", Kid: Thumbprint(pub), X: base64.RawURLEncoding.EncodeToString(pub), Use: "sig"}
}

// Thumbprint is pub's JWK SHA-256 thumbprint (RFC 7638 over the members
// RFC 8037 Appendix A.3 names, crv, kty and x, in that order), base64url
// without padding: the keyid of its signatures.
func Thumbprint(pub ed25519.PublicKey) string {
	sum := sha256.Sum256([]byte(`{"crv":"Ed25519","kty":"OKP","x":"` + base64.RawURLEncoding.EncodeToString(pub) + `"}`))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// Directory is the key directory of keys, a JWK Set (RFC 7517 §5): what an
// operator serves at the Signature-Agent URL with MediaType. Duplicate keys
// are listed once.
func Directory(keys ...ed25519.PublicKey) []byte {
	set := struct {
		Keys []JWK `json:"keys"`
	}{Keys: []JWK{}}
	seen := map[string]bool{}
	for _, k := range keys {
		j := PublicJWK(k)
		if seen[j.Kid] {
			continue
		}
		seen[j.Kid] = true
		set.Keys = append(set.Keys, j)
	}
	out, _ := json.Marshal(set) // strings and slices only: cannot fail
	return out
}

// CardFacts are what robotsgate states about itself in a signature agent
// card.
type CardFacts struct {
	// Name is the card's client_name.
	Name string
	// JWKSURI is the key set's URL (jwks_uri).
	JWKSURI string
	// Contact is a URI to reach the operator (contacts), "" for none.
	Contact string
	// ProductToken is the robots.txt product token the agent's requests
	// are judged by (rfc9309-product-token), "" for none stated.
	ProductToken string
	// Compliance is rfc9309-compliance: every request signed with the key
	// is judged by robots.txt (no client in monitor or bypass mode, no site
	// whose robots.txt is ignored).
	Compliance bool
	// Purpose is what the collected data is used for (purpose, a label of
	// the aipref vocabulary), "" for none stated.
	Purpose string
}

// Card is a signature agent card as the registry draft's editor's copy of
// 10 September 2026 has it (draft-meunier-webbotauth-registry, Section
// 3): OAuth client metadata (client_name, contacts, jwks_uri) and a
// web_bot_auth object whose rfc9309-compliance is a boolean (Section
// 3.2.3), with the robots.txt product token (3.2.2), the trigger (3.2.4),
// the purpose (3.2.5), how origins control the rate (3.2.7) and the URLs
// robotsgate fetches of its own (3.2.9).
func Card(f CardFacts) []byte {
	type wba struct {
		ProductToken string   `json:"rfc9309-product-token,omitempty"`
		Compliance   bool     `json:"rfc9309-compliance"`
		Trigger      string   `json:"trigger"`
		Purpose      string   `json:"purpose,omitempty"`
		RateControl  string   `json:"rate-control"`
		KnownURLs    []string `json:"known-urls"`
	}
	card := struct {
		ClientName string   `json:"client_name"`
		Contacts   []string `json:"contacts,omitempty"`
		JWKSURI    string   `json:"jwks_uri"`
		WebBotAuth wba      `json:"web_bot_auth"`
	}{
		ClientName: f.Name,
		JWKSURI:    f.JWKSURI,
		WebBotAuth: wba{
			ProductToken: f.ProductToken,
			Compliance:   f.Compliance,
			Trigger:      "crawler",
			Purpose:      f.Purpose,
			RateControl: "Crawl-delay and Request-rate in robots.txt; 429 and 503 (with Retry-After) pause the origin, " +
				"and so do 500, 502, 504 and timeouts several times in a row",
			KnownURLs: []string{"/robots.txt", "/.well-known/tdmrep.json"},
		},
	}
	if f.Contact != "" {
		card.Contacts = []string{f.Contact}
	}
	out, _ := json.MarshalIndent(card, "", "  ")
	return out
}
