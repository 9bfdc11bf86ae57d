package botauth

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// The texts disagree on what a Signature-Agent carries, so the form is a
// choice (docs/webbotauth.md, "Which form"):
//
//   - draft-ietf-webbotauth-httpsig-protocol-00 (adopted 1 September 2026;
//     the same text as draft-meunier-webbotauth-httpsig-protocol-02 of 18
//     August 2026), Section 5.2.1 and 5.5: a Dictionary whose member has a
//     type parameter, "directory" when absent. A directory member MUST be
//     the ASCII serialization of an origin (a verifier MUST ignore anything
//     else) whose key set is at the well-known path; a key set elsewhere is
//     named by its URL with ;type=jwks_uri. This is FormTyped.
//   - The working group's editor's copy of 9 October 2026 (after its PR
//     #132, merged 4 September 2026, heading for -01): every member is the
//     key set's own URL, and a member with parameters MUST be ignored. This
//     is FormURL.
//   - Before the working group (draft-meunier-http-message-signatures-
//     directory-01, and what Cloudflare's Web Bot Auth documentation and
//     the npm web-bot-auth 0.1.3 verifier implement): a bare String, the
//     key set's URL, covered as "signature-agent" without a key. Both drafts
//     above let a verifier accept it and tell signers to send the
//     dictionary. This is FormString.

// Form is how Signature-Agent names the signer's key set.
type Form string

// The forms of Signature-Agent.
const (
	// FormTyped is draft-ietf-webbotauth-httpsig-protocol-00's: the origin
	// for a key set at the well-known path (the default type, directory),
	// else the key set's URL with ;type=jwks_uri.
	FormTyped Form = "typed"
	// FormURL is the working group editor's copy of 9 October 2026: the key
	// set's URL, no parameter.
	FormURL Form = "url"
	// FormString is the pre-working-group bare String of the key set's URL.
	FormString Form = "string"
)

// Forms lists the forms, the default first.
var Forms = []Form{FormTyped, FormURL, FormString}

// TypeJWKSURI is the type parameter of a member naming a key set that is
// not at the well-known path (FormTyped).
const TypeJWKSURI = "jwks_uri"

// Agent is where a signer's public keys are published, and how
// Signature-Agent names it.
type Agent struct {
	// directory is the key set's URL: the origin's well-known path, or
	// another https URL.
	directory string
	// origin is the ASCII serialization of directory's origin (RFC 6454
	// Section 6.2): scheme, lower-case host, and the port unless 443.
	origin string
	// wellKnown: directory is origin + WellKnownPath.
	wellKnown bool
	form      Form
}

// ParseAgent reads the configured place of a key set: an https origin
// ("https://crawler.example", whose key set is then at WellKnownPath), that
// well-known URL itself, or the https URL of a key set served elsewhere; no
// user information, query or fragment, at most 2048 bytes of printable
// ASCII without '"' or '\' (a String that needs no escaping). form says how
// Signature-Agent names it ("" is FormTyped).
func ParseAgent(raw string, form Form) (Agent, error) {
	if form == "" {
		form = FormTyped
	}
	if !validForm(form) {
		return Agent{}, fmt.Errorf("botauth: unknown Signature-Agent form %q (want typed, url or string)", form)
	}
	if err := CheckAgentURL(raw); err != nil {
		return Agent{}, err
	}
	u, _ := url.Parse(raw) // CheckAgentURL parsed it
	if u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.Contains(raw, "#") {
		return Agent{}, fmt.Errorf("botauth: signature agent URL %q: no user information, query or fragment", raw)
	}
	host := strings.ToLower(u.Hostname())
	if host == "" {
		return Agent{}, fmt.Errorf("botauth: signature agent URL %q: no host", raw)
	}
	origin := "https://" + host
	if strings.Contains(host, ":") { // an IPv6 literal
		origin = "https://[" + host + "]"
	}
	if p := u.Port(); p != "" && p != "443" {
		origin += ":" + p
	}
	a := Agent{origin: origin, form: form}
	switch u.EscapedPath() {
	case "", "/", WellKnownPath:
		a.directory, a.wellKnown = origin+WellKnownPath, true
	default:
		a.directory = origin + u.EscapedPath()
	}
	return a, nil
}

func validForm(f Form) bool {
	for _, g := range Forms {
		if f == g {
			return true
		}
	}
	return false
}

// CheckAgentURL reports why u cannot be a Signature-Agent URL: the draft
// requires an absolute https URI; robotsgate also requires it to be an
// sf-string that needs no escaping.
func CheckAgentURL(u string) error {
	if u == "" {
		return errors.New("botauth: empty signature agent URL")
	}
	if len(u) > maxAgentURL {
		return fmt.Errorf("botauth: signature agent URL longer than %d bytes", maxAgentURL)
	}
	for i := 0; i < len(u); i++ {
		if c := u[i]; c < 0x21 || c > 0x7e || c == '"' || c == '\\' {
			return fmt.Errorf("botauth: signature agent URL %q: byte %d is not printable ASCII (or is '\"' or '\\')", u, i)
		}
	}
	p, err := url.Parse(u)
	if err != nil {
		return fmt.Errorf("botauth: signature agent URL %q: %w", u, err)
	}
	if p.Scheme != "https" || p.Host == "" {
		return fmt.Errorf("botauth: signature agent URL %q: must be an absolute https URL", u)
	}
	return nil
}

// DirectoryURL is the URL a verifier fetches the key set from (the
// registry draft's jwks_uri).
func (a Agent) DirectoryURL() string { return a.directory }

// Origin is the ASCII serialization of the key set's origin.
func (a Agent) Origin() string { return a.origin }

// WellKnown reports whether the key set is at its origin's WellKnownPath.
func (a Agent) WellKnown() bool { return a.wellKnown }

// Form is how Signature-Agent names the key set.
func (a Agent) Form() Form { return a.form }

// Authority is the key set URL's authority (@authority, RFC 9421 Section
// 2.2.3: lower-case, without the default port): what a signature over a
// directory response covers with ;req.
func (a Agent) Authority() string { return strings.TrimPrefix(a.origin, "https://") }

// Member is the Signature-Agent member's value as Signature-Agent
// serializes it (RFC 9651 Section 4.1: a String, then its parameters): in
// FormTyped the origin, or the key set's URL with ;type=jwks_uri; else the
// key set's URL.
func (a Agent) Member() string {
	if a.form != FormTyped {
		return `"` + a.directory + `"`
	}
	if a.wellKnown {
		return `"` + a.origin + `"`
	}
	return `"` + a.directory + `";type=` + TypeJWKSURI
}

// Field is the Signature-Agent field of a signature labelled label: the
// Dictionary label=Member, or the bare String in FormString.
func (a Agent) Field(label string) string {
	if a.form == FormString {
		return a.Member()
	}
	return label + "=" + a.Member()
}

// component is the identifier of the Signature-Agent component a
// signature labelled label covers: its member (RFC 9421 Section 2.1.2,
// the key parameter), or the whole field in FormString.
func (a Agent) component(label string) string {
	if a.form == FormString {
		return `"signature-agent"`
	}
	return `"signature-agent";key="` + label + `"`
}
