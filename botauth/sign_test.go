package botauth

import (
	"bytes"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dunglas/httpsfv"
)

// rfc9421Ed25519 is the Ed25519 test key of RFC 9421 Appendix B.1.4, the
// key of the draft's Ed25519 test vectors (Appendix E.2).
const rfc9421Ed25519 = `-----BEGIN PRIVATE KEY-----
MC4CAQAwBQYDK2VwBCIEIJ+DYvh6SEqVTm50DFtMDoQikTmiCqirVv9mWG9qfSnF
-----END PRIVATE KEY-----`

func testKey(t testing.TB) ed25519.PrivateKey {
	t.Helper()
	block, _ := pem.Decode([]byte(rfc9421Ed25519))
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return k.(ed25519.PrivateKey)
}

// TestDraftTestVectorEd25519 reproduces the draft's Appendix E.2.1 vector:
// the key's JWK x and thumbprint, and the signature over the signature
// base built by this package from the vector's parameters, byte for byte
// (Ed25519 is deterministic).
func TestDraftTestVectorEd25519(t *testing.T) {
	key := testKey(t)
	pub := key.Public().(ed25519.PublicKey)
	if got := base64.RawURLEncoding.EncodeToString(pub); got != "JrQLj5P_89iXES9-vFgrIy29clF9CC_oPPsw3c5D0bs" {
		t.Fatalf("x = %s", got)
	}
	if got := Thumbprint(pub); got != "poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U" {
		t.Fatalf("thumbprint = %s", got)
	}
	params := `("@authority" "signature-agent";key="agent2");created=1735689600;keyid="poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U";alg="ed25519";expires=4889289600;nonce="n9p433xm+NJ3ph3upfBIGmsuwHw387YV7Q/F+6BSpGCVjYCqQw6rznNA8PVVLySrAWsv0hQtFioQb6E1YsauiA==";tag="web-bot-auth"`
	base, err := signatureBase("example.com", `"signature-agent";key="agent2"`, `"https://signature-agent.test"`, http.Header{}, nil, params)
	if err != nil {
		t.Fatal(err)
	}
	want := "RdNFx5Bj6au3YgAMQL/RzmUlZE8QZLIaXGRpw985hWnwPfMxT228NMk6ehRS1PSl4e8PhbNZACSanGdhEwYCCg=="
	if got := base64.StdEncoding.EncodeToString(ed25519.Sign(key, []byte(base))); got != want {
		t.Fatalf("signature over\n%s\n= %s, want %s", base, got, want)
	}
}

// TestSignWritesTheDraftsFields checks the three fields Sign writes: the
// dictionary form of Signature-Agent, the covered components and
// parameters the draft requires, a nonce of NonceSize random bytes (and no
// alg, which the draft does not require), and a signature Verify accepts;
// a changed authority or agent fails.
func TestSignWritesTheDraftsFields(t *testing.T) {
	s, err := NewSigner(testKey(t), mustAgent(t, "https://gate.example/.well-known/http-message-signatures-directory", FormTyped))
	if err != nil {
		t.Fatal(err)
	}
	nonce := make([]byte, 32)
	for i := range nonce {
		nonce[i] = byte(i + 1)
	}
	s.rand = bytes.NewReader(nonce)
	now := time.Unix(1_800_000_000, 0)
	req, _ := http.NewRequest("GET", "http://Origin.Example:80/x", nil)
	if err := s.Sign(req, now); err != nil {
		t.Fatal(err)
	}
	if got, want := req.Header.Get("Signature-Agent"), `sig1="https://gate.example"`; got != want {
		t.Errorf("Signature-Agent = %s, want %s", got, want)
	}
	wantInput := `sig1=("@authority" "signature-agent";key="sig1");created=1800000000;expires=1800000300;keyid="poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U";nonce="AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA=";tag="web-bot-auth"`
	if got := req.Header.Get("Signature-Input"); got != wantInput {
		t.Errorf("Signature-Input = %s\nwant %s", got, wantInput)
	}
	pub := s.Public()
	if err := Verify(req, pub, now.Add(time.Minute)); err != nil {
		t.Fatalf("Verify: %v", err)
	}
	for _, tc := range []struct {
		name   string
		tamper func(*http.Request)
		at     time.Time
	}{
		{"authority changed", func(r *http.Request) { r.Host = "other.example" }, now},
		{"agent changed", func(r *http.Request) { r.Header.Set("Signature-Agent", `sig1="https://evil.example/"`) }, now},
		{"expired", func(*http.Request) {}, now.Add(Lifetime + time.Second)},
		{"created in the future", func(*http.Request) {}, now.Add(-time.Second)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := req.Clone(req.Context())
			tc.tamper(r)
			if err := Verify(r, pub, tc.at); err == nil {
				t.Fatal("a tampered request verifies")
			}
		})
	}
}

// Two requests signed for one authority in the same second carry
// different signatures (their nonces differ), both valid: a verifier that
// remembers nonces can tell a replay from a second request.
func TestSignaturesOfOneSecondDiffer(t *testing.T) {
	s, _ := NewSigner(testKey(t), mustAgent(t, "https://gate.example/d", FormTyped))
	now := time.Unix(1_800_000_000, 0)
	var sigs []string
	for range 2 {
		req, _ := http.NewRequest("GET", "https://origin.example/page", nil)
		if err := s.Sign(req, now); err != nil {
			t.Fatal(err)
		}
		if err := Verify(req, s.Public(), now); err != nil {
			t.Fatal(err)
		}
		sigs = append(sigs, req.Header.Get("Signature"))
	}
	if sigs[0] == sigs[1] {
		t.Errorf("two requests signed in the same second carry the same signature %s", sigs[0])
	}
}

// TestSignCoversPriceOffer checks that a field named to Sign is covered,
// and that changing it breaks the signature.
func TestSignCoversPriceOffer(t *testing.T) {
	s, _ := NewSigner(testKey(t), mustAgent(t, "https://gate.example/d", FormTyped))
	now := time.Now()
	req, _ := http.NewRequest("GET", "https://origin.example/paid", nil)
	req.Header.Set("Crawler-Max-Price", "USD 0.05")
	if err := s.Sign(req, now, "crawler-max-price"); err != nil {
		t.Fatal(err)
	}
	if err := Verify(req, s.Public(), now, "crawler-max-price"); err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Crawler-Max-Price", "USD 5.00")
	if err := Verify(req, s.Public(), now, "crawler-max-price"); err == nil {
		t.Fatal("a changed price verifies")
	}
	if err := s.Sign(req, now, "crawler-exact-price"); err == nil {
		t.Fatal("Sign covered a field the request lacks")
	}
}

func TestAuthority(t *testing.T) {
	for _, tc := range []struct{ url, host, want string }{
		{"http://a.example/", "", "a.example"},
		{"http://A.Example:80/", "", "a.example"},
		{"https://a.example:443/", "", "a.example"},
		{"https://a.example:80/", "", "a.example:80"},
		{"http://a.example:8080/", "", "a.example:8080"},
		{"http://a.example/", "B.example:81", "b.example:81"},
	} {
		req, _ := http.NewRequest("GET", tc.url, nil)
		if tc.host != "" {
			req.Host = tc.host
		}
		if got, _ := Authority(req); got != tc.want {
			t.Errorf("Authority(%s, Host %q) = %s, want %s", tc.url, tc.host, got, tc.want)
		}
	}
}

func TestCheckAgentURL(t *testing.T) {
	for _, tc := range []struct {
		url string
		ok  bool
	}{
		{"https://gate.example/.well-known/http-message-signatures-directory", true},
		{"http://gate.example/d", false},
		{"https:///d", false},
		{`https://gate.example/"d`, false},
		{"https://gate.example/a b", false},
		{"", false},
		{"https://gate.example/" + strings.Repeat("a", 2048), false},
	} {
		if err := CheckAgentURL(tc.url); (err == nil) != tc.ok {
			t.Errorf("CheckAgentURL(%.40q) = %v, want ok %v", tc.url, err, tc.ok)
		}
	}
}

// TestDirectoryIsAJWKSet checks the directory: one JWK per distinct key,
// kid the thumbprint.
func TestDirectoryIsAJWKSet(t *testing.T) {
	pub := testKey(t).Public().(ed25519.PublicKey)
	var set struct{ Keys []map[string]string }
	if err := json.Unmarshal(Directory(pub, pub), &set); err != nil {
		t.Fatal(err)
	}
	want := []map[string]string{{"kty": "OKP", "crv": "Ed25519", "kid": "poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U", "x": "JrQLj5P_89iXES9-vFgrIy29clF9CC_oPPsw3c5D0bs", "use": "sig"}}
	if len(set.Keys) != 1 || !mapsEqual(set.Keys[0], want[0]) {
		t.Fatalf("directory = %v, want %v", set.Keys, want)
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func TestCoveredFields(t *testing.T) {
	for _, tc := range []struct {
		name  string
		lines []string
		want  []string // nil: an error
	}{
		{"draft example", []string{`sig=("@authority" "signature-agent";key="sig");created=1700000000;expires=1700011111;keyid="ba3e64==";tag="web-bot-auth"`},
			[]string{"@authority", "signature-agent"}},
		{"two signatures over two lines", []string{`a=("@method" "User-Agent");created=1`, ` b=("from" "@path";req);alg=rsa;x=?1;y=:AAA=:;z=1.5`},
			[]string{"@method", "user-agent", "from", "@path"}},
		{"empty inner list", []string{`a=();created=1`}, []string{}},
		{"not a dictionary", []string{`("@authority")`}, nil},
		{"a member is not a list", []string{`a="x"`}, nil},
		{"component not a string", []string{`a=(user-agent)`}, nil},
		{"unterminated", []string{`a=("user-agent"`}, nil},
		{"trailing comma", []string{`a=("x"),`}, nil},
		{"control byte", []string{"a=(\"x\ty\")"}, nil},
		{"too long", []string{`a=("` + strings.Repeat("x", MaxSignatureInput) + `")`}, nil},
		{"empty", []string{""}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{"Signature-Input": tc.lines}
			got, err := CoveredFields(h)
			if tc.want == nil {
				if err == nil {
					t.Fatalf("CoveredFields = %q, want an error", got)
				}
				return
			}
			if err != nil || !slices.Equal(got, tc.want) && !(len(got) == 0 && len(tc.want) == 0) {
				t.Fatalf("CoveredFields = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestClientSigned(t *testing.T) {
	for _, name := range []string{"Signature", "Signature-Input", "Signature-Agent"} {
		if !ClientSigned(http.Header{name: {"x"}}) {
			t.Errorf("a request with %s is not taken as signed", name)
		}
	}
	if ClientSigned(http.Header{"User-Agent": {"x"}}) {
		t.Error("an unsigned request is taken as signed")
	}
}

// FuzzCoveredFields: any Signature-Input parses or fails without panic,
// within its bounds, and what parses lists lower-case names once each.
func FuzzCoveredFields(f *testing.F) {
	for _, s := range []string{
		`sig1=("@authority" "signature-agent";key="sig1");created=1;expires=2;keyid="k";tag="web-bot-auth"`,
		`a=("@method" "user-agent");alg=rsa;x=?1;y=:AAA=:;z=-1.5, b=()`,
		`a=("x\"y" "\\")`, `a=(`, `,`, `a=("x";`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		names, err := CoveredFields(http.Header{"Signature-Input": {s}})
		if err != nil {
			return
		}
		if len(names) > maxComponents {
			t.Fatalf("%d names", len(names))
		}
		for i, n := range names {
			if n != strings.ToLower(n) || slices.Contains(names[i+1:], n) {
				t.Fatalf("names %q", names)
			}
		}
	})
}

// BenchmarkSign is the cost of signing one request: building the
// signature base and one Ed25519 signature, and setting the three fields.
func BenchmarkSign(b *testing.B) {
	s, _ := NewSigner(testKey(b), mustAgent(b, "https://gate.example/.well-known/http-message-signatures-directory", FormURL))
	req, _ := http.NewRequest("GET", "https://origin.example/some/page", nil)
	now := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		if err := s.Sign(req, now); err != nil {
			b.Fatal(err)
		}
	}
}

func mustAgent(t testing.TB, raw string, form Form) Agent {
	t.Helper()
	a, err := ParseAgent(raw, form)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestDraftTestVectorLegacyString reproduces Appendix E.2.2 of
// draft-ietf-webbotauth-httpsig-protocol-00 (the legacy sf-string
// Signature-Agent, covered as "signature-agent" without a key) byte for
// byte from the signature base FormString builds.
func TestDraftTestVectorLegacyString(t *testing.T) {
	a := mustAgent(t, "https://signature-agent.test/d", FormString)
	if got := a.component("sig2"); got != `"signature-agent"` {
		t.Fatalf("component %s", got)
	}
	params := `("@authority" "signature-agent");created=1735689600;keyid="poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U";alg="ed25519";expires=1735693200;nonce="e8N7S2MFd/qrd6T2R3tdfAuuANngKI7LFtKYI/vowzk4lAZYadIX6wW25MwG7DCT9RUKAJ0qVkU0mEeLElW1qg==";tag="web-bot-auth"`
	base, err := signatureBase("example.com", a.component("sig2"), `"https://signature-agent.test"`, http.Header{}, nil, params)
	if err != nil {
		t.Fatal(err)
	}
	want := "jdq0SqOwHdyHr9+r5jw3iYZH6aNGKijYp/EstF4RQTQdi5N5YYKrD+mCT1HA1nZDsi6nJKuHxUi/5Syp3rLWBA=="
	if got := base64.StdEncoding.EncodeToString(ed25519.Sign(testKey(t), []byte(base))); got != want {
		t.Fatalf("signature over\n%s\n= %s, want %s", base, got, want)
	}
}

// TestDraftTestVectorSignedDirectory reproduces Appendix E.2.3 of
// draft-ietf-webbotauth-httpsig-protocol-00 (the Signed Directory
// Response) byte for byte: Directory renders the vector's body, and
// SignDirectory its Content-Digest, Signature-Input and Signature.
func TestDraftTestVectorSignedDirectory(t *testing.T) {
	key := testKey(t)
	body := Directory(key.Public().(ed25519.PublicKey))
	if want := `{"keys":[{"kty":"OKP","crv":"Ed25519","kid":"poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U","x":"JrQLj5P_89iXES9-vFgrIy29clF9CC_oPPsw3c5D0bs","use":"sig"}]}`; string(body) != want {
		t.Fatalf("directory %s\nwant %s", body, want)
	}
	a := mustAgent(t, "https://signature-agent.test", FormTyped)
	s, err := NewSigner(key, a)
	if err != nil {
		t.Fatal(err)
	}
	h, err := SignDirectory(body, a.Authority(), time.Unix(1735689600, 0), time.Duration(4889289600-1735689600)*time.Second, s)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		"Content-Digest":  "sha-256=:CADMT2aBdV/rqQr/NIru64ERQkCobVvllA4V0fLFDu0=:",
		"Signature-Input": `binding=("@authority";req "content-digest");created=1735689600;expires=4889289600;keyid="poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U";tag="http-message-signatures-directory"`,
		"Signature":       "binding=:l6P8R67tm3kujAxbHWio7ll01qrEZ0dKD/WWlGhNYEmTnFZM8Wt0VQ9zqGfvo7T/UMkBxsigzChM1Gpz7gOVBg==:",
	} {
		if got := h.Get(name); got != want {
			t.Errorf("%s: %s\nwant %s", name, got, want)
		}
	}
}

// A directory of several keys carries one signature per key, each under
// a label of its own, each over the same digest.
func TestSignDirectoryOneSignaturePerKey(t *testing.T) {
	a := mustAgent(t, "https://gate.example", FormTyped)
	s1, _ := NewSigner(testKey(t), a)
	_, k2, _ := ed25519.GenerateKey(nil)
	s2, _ := NewSigner(k2, a)
	h, err := SignDirectory(Directory(s1.Public(), s2.Public()), a.Authority(), time.Unix(1_800_000_000, 0), time.Hour, s1, s2)
	if err != nil {
		t.Fatal(err)
	}
	in := h.Get("Signature-Input")
	if !strings.HasPrefix(in, `binding=(`) || !strings.Contains(in, `, binding2=(`) || !strings.Contains(in, s2.KeyID()) {
		t.Errorf("Signature-Input %s", in)
	}
	if got := strings.Count(h.Get("Signature"), "binding"); got != 2 {
		t.Errorf("%d signatures: %s", got, h.Get("Signature"))
	}
	if _, err := SignDirectory([]byte("{}"), "", time.Now(), time.Hour, s1); err == nil {
		t.Error("signed without an authority")
	}
}

// TestSignatureAgentForms: what each configured place of the key set and
// each form put in Signature-Agent and which component the signature
// covers (draft-ietf-webbotauth-httpsig-protocol-00 Section 5.5: an origin
// for the default type directory, ;type=jwks_uri elsewhere; the editor's
// copy of 9 October 2026: the key set's URL; the legacy String), and that
// each verifies.
func TestSignatureAgentForms(t *testing.T) {
	for _, tc := range []struct {
		raw       string
		form      Form
		field     string
		covers    string
		directory string
		authority string
		wellKnown bool
	}{
		{"https://Gate.Example", FormTyped, `sig1="https://gate.example"`, `"signature-agent";key="sig1"`,
			"https://gate.example/.well-known/http-message-signatures-directory", "gate.example", true},
		{"https://gate.example:443/", FormTyped, `sig1="https://gate.example"`, `"signature-agent";key="sig1"`,
			"https://gate.example/.well-known/http-message-signatures-directory", "gate.example", true},
		{"https://gate.example/.well-known/http-message-signatures-directory", FormTyped, `sig1="https://gate.example"`, `"signature-agent";key="sig1"`,
			"https://gate.example/.well-known/http-message-signatures-directory", "gate.example", true},
		{"https://gate.example:8443/keys/jwks.json", FormTyped, `sig1="https://gate.example:8443/keys/jwks.json";type=jwks_uri`, `"signature-agent";key="sig1"`,
			"https://gate.example:8443/keys/jwks.json", "gate.example:8443", false},
		{"https://gate.example", FormURL, `sig1="https://gate.example/.well-known/http-message-signatures-directory"`, `"signature-agent";key="sig1"`,
			"https://gate.example/.well-known/http-message-signatures-directory", "gate.example", true},
		{"https://gate.example/keys.json", FormURL, `sig1="https://gate.example/keys.json"`, `"signature-agent";key="sig1"`,
			"https://gate.example/keys.json", "gate.example", false},
		{"https://gate.example", FormString, `"https://gate.example/.well-known/http-message-signatures-directory"`, `"signature-agent"`,
			"https://gate.example/.well-known/http-message-signatures-directory", "gate.example", true},
	} {
		t.Run(string(tc.form)+" "+tc.raw, func(t *testing.T) {
			a := mustAgent(t, tc.raw, tc.form)
			if a.DirectoryURL() != tc.directory || a.Authority() != tc.authority || a.WellKnown() != tc.wellKnown {
				t.Errorf("directory %s, authority %s, well-known %v", a.DirectoryURL(), a.Authority(), a.WellKnown())
			}
			s, _ := NewSigner(testKey(t), a)
			req, _ := http.NewRequest("GET", "https://origin.example/x", nil)
			now := time.Unix(1_800_000_000, 0)
			if err := s.Sign(req, now); err != nil {
				t.Fatal(err)
			}
			if got := req.Header.Get("Signature-Agent"); got != tc.field {
				t.Errorf("Signature-Agent: %s, want %s", got, tc.field)
			}
			if in := req.Header.Get("Signature-Input"); !strings.HasPrefix(in, `sig1=("@authority" `+tc.covers+`);`) {
				t.Errorf("Signature-Input: %s, want it to cover %s", in, tc.covers)
			}
			if err := Verify(req, s.Public(), now); err != nil {
				t.Errorf("Verify: %v", err)
			}
		})
	}
}

func TestParseAgentRefuses(t *testing.T) {
	for _, tc := range []struct {
		raw  string
		form Form
	}{
		{"http://gate.example", FormTyped},
		{"https://gate.example/?x=1", FormTyped},
		{"https://gate.example/#f", FormTyped},
		{"https://user@gate.example/", FormTyped},
		{"https://gate.example", "directory"},
		{"", FormTyped},
	} {
		if a, err := ParseAgent(tc.raw, tc.form); err == nil {
			t.Errorf("ParseAgent(%q, %q) = %+v, want an error", tc.raw, tc.form, a)
		}
	}
}

// TestCardFollowsTheRegistryDraft: the card's web_bot_auth is the
// editor's copy's (10 September 2026): a boolean rfc9309-compliance,
// rfc9309-product-token and purpose when stated, jwks_uri the key set.
func TestCardFollowsTheRegistryDraft(t *testing.T) {
	var card struct {
		ClientName string         `json:"client_name"`
		Contacts   []string       `json:"contacts"`
		JWKSURI    string         `json:"jwks_uri"`
		WBA        map[string]any `json:"web_bot_auth"`
	}
	raw := Card(CardFacts{Name: "robotsgate", JWKSURI: "https://gate.example/.well-known/http-message-signatures-directory",
		Contact: "mailto:ops@example.org", ProductToken: "ResearchBot", Compliance: true, Purpose: "search"})
	if err := json.Unmarshal(raw, &card); err != nil {
		t.Fatal(err)
	}
	if card.ClientName != "robotsgate" || card.JWKSURI != "https://gate.example/.well-known/http-message-signatures-directory" ||
		len(card.Contacts) != 1 || card.Contacts[0] != "mailto:ops@example.org" {
		t.Errorf("card %s", raw)
	}
	if v, ok := card.WBA["rfc9309-compliance"].(bool); !ok || !v {
		t.Errorf("rfc9309-compliance = %v (%T), want true as a boolean", card.WBA["rfc9309-compliance"], card.WBA["rfc9309-compliance"])
	}
	if card.WBA["rfc9309-product-token"] != "ResearchBot" || card.WBA["purpose"] != "search" || card.WBA["trigger"] != "crawler" {
		t.Errorf("web_bot_auth %v", card.WBA)
	}
	raw = Card(CardFacts{Name: "robotsgate", JWKSURI: "https://gate.example/k"})
	if strings.Contains(string(raw), "rfc9309-product-token") || strings.Contains(string(raw), `"purpose"`) ||
		!strings.Contains(string(raw), `"rfc9309-compliance": false`) {
		t.Errorf("a card with nothing stated: %s", raw)
	}
}

// FuzzParseAgent: any configured value and form parses or fails without
// panic; what parses names an https key set, and its Signature-Agent is a
// structured field of the form's shape (RFC 9651: a String, or a
// Dictionary whose sig1 member is a String) that reads back as the
// member's value, an origin for the typed form of a well-known directory.
func FuzzParseAgent(f *testing.F) {
	for _, s := range []string{"https://gate.example", "https://gate.example:8443/keys.json", "https://[::1]/", "https://a/.well-known/http-message-signatures-directory", "https://a/%22", "https://a/?", "http://a"} {
		for _, form := range Forms {
			f.Add(s, string(form))
		}
	}
	f.Fuzz(func(t *testing.T, raw, form string) {
		a, err := ParseAgent(raw, Form(form))
		if err != nil {
			return
		}
		if !strings.HasPrefix(a.DirectoryURL(), "https://") || !strings.HasPrefix(a.Origin(), "https://") {
			t.Fatalf("%q: directory %q, origin %q", raw, a.DirectoryURL(), a.Origin())
		}
		field := a.Field(Label)
		var value any
		if a.Form() == FormString {
			item, err := httpsfv.UnmarshalItem([]string{field})
			if err != nil {
				t.Fatalf("%q: Signature-Agent %s is not an Item: %v", raw, field, err)
			}
			value = item.Value
		} else {
			dict, err := httpsfv.UnmarshalDictionary([]string{field})
			if err != nil {
				t.Fatalf("%q: Signature-Agent %s is not a Dictionary: %v", raw, field, err)
			}
			m, ok := dict.Get(Label)
			item, isItem := m.(httpsfv.Item)
			if !ok || !isItem {
				t.Fatalf("%q: no member %s in %s", raw, Label, field)
			}
			value = item.Value
		}
		s, ok := value.(string)
		switch {
		case !ok:
			t.Fatalf("%q: the value of %s is not a String", raw, field)
		case a.Form() == FormTyped && a.WellKnown() && s != a.Origin():
			t.Fatalf("%q: typed member %q is not the origin %q", raw, s, a.Origin())
		case !(a.Form() == FormTyped && a.WellKnown()) && s != a.DirectoryURL():
			t.Fatalf("%q: member %q is not the key set %q", raw, s, a.DirectoryURL())
		}
	})
}
