//go:build unix

package e2e

// End-to-end tests of Web Bot Auth signing through the real binary:
// loopback origins capture what robotsgate sent (proxied requests, plain
// and inside an intercepted tunnel, robots.txt fetches and each of their
// redirect hops), and an implementation robotsgate did not write (the npm
// packages of e2e/webbotauth, run by node) verifies the signatures against
// the key directory `robotsgate bot-auth` printed. A client's own
// signature passes through byte for byte.

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"golang.org/x/crypto/bcrypt"
)

// wbaAgentURL is the bot_auth.signature_agent of the tests' configuration:
// the well-known URL of gate.example, which the default form (typed)
// names by its origin.
const wbaAgentURL = "https://gate.example/.well-known/http-message-signatures-directory"

// captured is one request an origin received, as the verifier takes it.
type captured struct {
	Method  string      `json:"method"`
	URL     string      `json:"url"`
	Headers [][2]string `json:"headers"`
	header  http.Header
}

// captureOrigin records every request it receives; handle answers them.
type captureOrigin struct {
	*httptest.Server
	mu   sync.Mutex
	seen []captured
}

func startCaptureOrigin(t *testing.T, ip string, useTLS bool, handle http.HandlerFunc) *captureOrigin {
	t.Helper()
	o := &captureOrigin{}
	o.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		scheme := "http"
		if r.TLS != nil {
			scheme = "https"
		}
		c := captured{Method: r.Method, URL: scheme + "://" + r.Host + r.RequestURI, header: r.Header.Clone()}
		for name, values := range r.Header {
			for _, v := range values {
				c.Headers = append(c.Headers, [2]string{name, v})
			}
		}
		o.mu.Lock()
		o.seen = append(o.seen, c)
		o.mu.Unlock()
		handle(w, r)
	}))
	startAt(t, o.Server, ip, useTLS)
	return o
}

// request returns the first request for path, failing the test without one.
func (o *captureOrigin) request(t *testing.T, path string) captured {
	t.Helper()
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, c := range o.seen {
		if u, err := url.Parse(c.URL); err == nil && u.RequestURI() == path {
			return c
		}
	}
	t.Fatalf("the origin %s received no request for %s", o.URL, path)
	return captured{}
}

// wbaDir is where make deps installs the verifier's npm packages
// (e2e/webbotauth/package.json): $ROBOTSGATE_WBA_DIR, or
// robotsgate-e2e/webbotauth in the user's cache directory.
func wbaDir() string {
	if d := os.Getenv("ROBOTSGATE_WBA_DIR"); d != "" {
		return d
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	return filepath.Join(cache, "robotsgate-e2e", "webbotauth")
}

// verdict is the verifier's answer for one request or response.
type verdict struct {
	OK     bool   `json:"ok"`
	Error  string `json:"error"`
	WBA013 string `json:"wba013"`
}

// wbaInput is what verify.cjs checks: requests, resolving their
// Signature-Agent as Draft says ("typed", "url" or "string", the forms of
// botauth), against the key set Directory published at DirectoryURL; and
// directory responses (their Content-Digest and each key's signature).
type wbaInput struct {
	Directory    json.RawMessage `json:"directory"`
	DirectoryURL string          `json:"directoryURL"`
	Draft        string          `json:"draft"`
	Requests     []captured      `json:"requests"`
	Responses    []dirResponse   `json:"responses"`
}

// dirResponse is a key directory as served: the URL it was fetched from
// (whose authority its signatures cover), its header fields and its body.
type dirResponse struct {
	URL     string      `json:"url"`
	Headers [][2]string `json:"headers"`
	Body    string      `json:"body"`
}

// verifyWithNode runs e2e/webbotauth/verify.cjs on in: a verdict per
// request, then one per response. node and the packages are required:
// make deps installs them, and their absence is a failure, not a skip.
func verifyWithNode(t *testing.T, dir string, in wbaInput) []verdict {
	t.Helper()
	if in.Draft == "" {
		in.Draft = "typed"
	}
	if in.DirectoryURL == "" {
		in.DirectoryURL = wbaAgentURL
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is not installed: the independent Web Bot Auth verification needs it (make deps installs it)")
	}
	modules := filepath.Join(wbaDir(), "node_modules")
	for _, p := range []string{"web-bot-auth", "http-message-sig"} {
		if _, err := os.Stat(filepath.Join(modules, p, "package.json")); err != nil {
			t.Fatalf("npm package %s is not installed in %s (make deps installs it)", p, modules)
		}
	}
	data, _ := json.Marshal(in)
	inPath := filepath.Join(dir, "verify-input.json")
	writeFile(t, inPath, string(data))
	script, _ := filepath.Abs(filepath.Join("webbotauth", "verify.cjs"))
	stdout, stderr, code := runProgram(t, dir, cleanEnv("NODE_PATH="+modules), node, script, inPath)
	if code != 0 {
		t.Fatalf("verify.cjs exited %d: %s", code, stderr)
	}
	var out []verdict
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
		if line == "" {
			continue
		}
		var v verdict
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Fatalf("verify.cjs printed %q: %v", line, err)
		}
		out = append(out, v)
	}
	if len(out) != len(in.Requests)+len(in.Responses) {
		t.Fatalf("verify.cjs answered %d of %d requests and responses: %s", len(out), len(in.Requests)+len(in.Responses), stdout)
	}
	return out
}

// adminDirectory fetches the key directory the admin listener at admin
// serves, as verify.cjs takes it: fetched for wbaAgentURL.
func adminDirectory(t *testing.T, admin string) dirResponse {
	t.Helper()
	resp, err := (&http.Client{Timeout: requestTimeout}).Get(admin + "/.well-known/http-message-signatures-directory")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/http-message-signatures-directory+json" {
		t.Fatalf("the admin listener serves the directory as %d %s %q", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	d := dirResponse{URL: wbaAgentURL, Body: string(body)}
	for name, values := range resp.Header {
		for _, v := range values {
			d.Headers = append(d.Headers, [2]string{name, v})
		}
	}
	return d
}

// readPublished reads the directory `robotsgate bot-auth -publish` wrote
// into dir and the header fields it says to serve it with, as served at
// url.
func readPublished(t *testing.T, dir, url string) dirResponse {
	t.Helper()
	body, err := os.ReadFile(filepath.Join(dir, "http-message-signatures-directory"))
	if err != nil {
		t.Fatal(err)
	}
	headers, err := os.ReadFile(filepath.Join(dir, "http-message-signatures-directory.headers"))
	if err != nil {
		t.Fatal(err)
	}
	d := dirResponse{URL: url, Body: string(body)}
	for _, line := range strings.Split(strings.TrimSpace(string(headers)), "\n") {
		name, value, ok := strings.Cut(line, ": ")
		if !ok {
			t.Fatalf("the headers file has the line %q", line)
		}
		d.Headers = append(d.Headers, [2]string{name, value})
	}
	return d
}

// signatureLifetime is expires - created of a directory response's
// signature.
func signatureLifetime(t *testing.T, d dirResponse) int64 {
	t.Helper()
	for _, h := range d.Headers {
		if strings.EqualFold(h[0], "Signature-Input") {
			m := regexp.MustCompile(`;created=(\d+);expires=(\d+);`).FindStringSubmatch(h[1])
			if m == nil {
				t.Fatalf("Signature-Input %s", h[1])
			}
			created, _ := strconv.ParseInt(m[1], 10, 64)
			expires, _ := strconv.ParseInt(m[2], 10, 64)
			return expires - created
		}
	}
	t.Fatalf("no Signature-Input in %v", d.Headers)
	return 0
}

// wbaConfig is the e2e configuration with gateway signing, an audit log,
// identification that would change a signed request, and extra: the
// audit log is auditLog ("-": the process's output).
func wbaConfig(dir, auditLog, extra string) string {
	c := e2eConfig{dir: dir, upstreamCA: true, allowNetworks: "127.0.0.0/8"}
	return c.yaml() + fmt.Sprintf(`state_dir: %q
log:
  audit: %q
identify:
  from: crawler-admin@example.org
  user_agent_suffix: "(+https://gate.example/bot)"
bot_auth:
  signature_agent: %q
`, filepath.Join(dir, "state"), auditLog, wbaAgentURL) + extra
}

// TestWebBotAuthSignaturesVerifyIndependently sends requests through the
// binary with bot_auth set: a proxied http request, an https request in
// an intercepted tunnel, and the robots.txt fetches of both origins, one of
// which redirects to a third origin (each hop signed for its own
// authority). node verifies every captured signature against the directory
// `robotsgate bot-auth` printed; the same requests with @authority or
// Signature-Agent changed fail; and a request the client signed itself
// reaches the origin with its Signature, Signature-Input and
// Signature-Agent byte for byte, none of robotsgate's, and neither From nor
// User-Agent changed (its signature covers them).
func TestWebBotAuthSignaturesVerifyIndependently(t *testing.T) {
	dir := t.TempDir()
	page := func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			io.WriteString(w, "User-agent: *\nAllow: /\n")
			return
		}
		io.WriteString(w, "page "+r.URL.Path)
	}
	target := startCaptureOrigin(t, "127.0.0.3", false, page)
	plain := startCaptureOrigin(t, "127.0.0.2", false, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" { // RFC 9309 §2.3.1.2: followed
			http.Redirect(w, r, target.URL+"/robots.txt", http.StatusMovedPermanently)
			return
		}
		page(w, r)
	})
	secure := startCaptureOrigin(t, "127.0.0.1", true, page) // the test certificate names 127.0.0.1
	upstream := filepath.Join(dir, "upstream.pem")
	(&origin{Server: secure.Server}).writeCertPEM(t, upstream)
	cfgPath := filepath.Join(dir, "robotsgate.yaml")
	writeFile(t, cfgPath, wbaConfig(dir, filepath.Join(dir, "audit.log"), ""))
	p := startServe(t, dir, "-config", cfgPath, "-admin-listen", "127.0.0.1:0")

	c := proxyClient(t, p.addr, filepath.Join(dir, "certs", "ca.pem"))
	for _, u := range []string{plain.URL + "/page", secure.URL + "/secure"} {
		if r := get(t, c, u); r.status != http.StatusOK {
			t.Fatalf("GET %s through the proxy: %d %s", u, r.status, r.body)
		}
	}
	// A request its client signed itself, covering From and User-Agent.
	own := map[string]string{
		"Signature-Agent": `client="https://client.example/keys"`,
		"Signature-Input": `client=("@authority" "signature-agent";key="client" "from" "user-agent");created=1;keyid="k";tag="web-bot-auth"`,
		"Signature":       `client=:c2lnbmVkIGJ5IHRoZSBjbGllbnQ=:`,
		"User-Agent":      "ClientBot/1.0",
		"From":            "client@example.org",
	}
	req, _ := http.NewRequest("GET", plain.URL+"/client-signed", nil)
	for k, v := range own {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()

	published := filepath.Join(dir, "published")
	stdout, stderr, code := runBin(t, dir, "bot-auth", "-config", cfgPath, "-publish", published)
	if code != 0 {
		t.Fatalf("robotsgate bot-auth -publish: exit %d: %s", code, stderr)
	}
	directory := json.RawMessage(strings.TrimSpace(stdout))
	// The admin listener serves the same directory, signed, for operators
	// who publish it from there, and the card.
	admin := adminOf(t, p)
	served := adminDirectory(t, admin)
	if served.Body != string(directory) {
		t.Errorf("the admin listener serves the directory %q, bot-auth printed %q", served.Body, directory)
	}
	if code, body := adminStatus(t, admin+"/signature-agent-card"); code != http.StatusOK || !strings.Contains(body, `"jwks_uri": "`+wbaAgentURL+`"`) ||
		!strings.Contains(body, `"rfc9309-compliance": true`) {
		t.Errorf("the admin listener serves the card as %d %q", code, body)
	}

	// robotsgate check -fetch requests the page too (as /explain does).
	if _, stderr, code := runBin(t, dir, "check", "-config", cfgPath, "-fetch", plain.URL+"/checked"); code != 0 {
		t.Fatalf("robotsgate check -fetch: exit %d: %s", code, stderr)
	}

	signed := []captured{
		plain.request(t, "/checked"),
		plain.request(t, "/page"),
		secure.request(t, "/secure"),
		plain.request(t, "/robots.txt"),  // the first hop
		target.request(t, "/robots.txt"), // the redirect's hop, another authority
		secure.request(t, "/robots.txt"),
	}
	for _, c := range signed {
		// The default form names the origin of the well-known URL.
		if got := c.header.Get("Signature-Agent"); got != `sig1="https://gate.example"` {
			t.Errorf("%s carries Signature-Agent %s, want the origin", c.URL, got)
		}
	}
	// robotsgate's own fetches say who runs it: identify.from.
	for _, c := range signed[3:] {
		if got := c.header.Get("From"); got != "crawler-admin@example.org" {
			t.Errorf("the fetch of %s carries From %q, want identify.from", c.URL, got)
		}
	}
	responses := []dirResponse{served, readPublished(t, published, wbaAgentURL)}
	// The admin listener signs for a day, -publish for -valid's default,
	// a week.
	for i, want := range []int64{24 * 3600, 7 * 24 * 3600} {
		if got := signatureLifetime(t, responses[i]); got != want {
			t.Errorf("directory signature %d is valid for %d s, want %d", i, got, want)
		}
	}
	verdicts := verifyWithNode(t, dir, wbaInput{Directory: directory, Requests: signed, Responses: responses})
	for i, v := range verdicts[:len(signed)] {
		if !v.OK {
			t.Errorf("the signature of %s %s does not verify: %s", signed[i].Method, signed[i].URL, v.Error)
		}
		t.Logf("%s: web-bot-auth 0.1.3's own verify(): %s", signed[i].URL, v.WBA013)
	}
	for i, v := range verdicts[len(signed):] {
		if !v.OK {
			t.Errorf("the signature of the directory %s (%d) does not verify: %s", []string{"the admin listener serves", "bot-auth -publish wrote"}[i], i, v.Error)
		}
	}

	tampered := []captured{signed[1], signed[1]}
	tampered[0].URL = strings.Replace(tampered[0].URL, "127.0.0.2", "127.0.0.9", 1) // @authority
	tampered[1].Headers = nil
	for _, h := range signed[1].Headers {
		if h[0] == "Signature-Agent" {
			h[1] = `sig1="https://impostor.example"`
		}
		tampered[1].Headers = append(tampered[1].Headers, h)
	}
	// The directory re-served under another authority, and with another
	// body (a key added), must not verify either.
	moved := served
	moved.URL = "https://impostor.example/.well-known/http-message-signatures-directory"
	swapped := served
	swapped.Body = strings.Replace(served.Body, `"keys":[`, `"keys":[{"kty":"OKP","crv":"Ed25519","x":"JrQLj5P_89iXES9-vFgrIy29clF9CC_oPPsw3c5D0bs"},`, 1)
	for i, v := range verifyWithNode(t, dir, wbaInput{Directory: directory, Requests: tampered, Responses: []dirResponse{moved, swapped}}) {
		if v.OK {
			t.Errorf("tampered request or directory %d verifies", i)
		}
	}

	got := plain.request(t, "/client-signed")
	for k, v := range own {
		if vs := got.header.Values(k); len(vs) != 1 || vs[0] != v {
			t.Errorf("the client-signed request reached the origin with %s %q, want %q untouched", k, vs, v)
		}
	}
}

// TestWebBotAuthClientKeySignsItsRequests: a clients entry with a
// signature_agent and sign_key of its own has its requests signed with
// that key, naming its URL: they verify against the directory
// `robotsgate bot-auth -client 0` prints and not against the gateway's,
// while another client's requests are signed with the gateway key.
func TestWebBotAuthClientKeySignsItsRequests(t *testing.T) {
	const clientAgent = "https://research.example/.well-known/http-message-signatures-directory"
	dir := t.TempDir()
	o := startCaptureOrigin(t, "127.0.0.5", false, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			io.WriteString(w, "User-agent: *\nAllow: /\n")
			return
		}
		io.WriteString(w, "page")
	})
	unused := httptest.NewTLSServer(http.NotFoundHandler())
	t.Cleanup(unused.Close)
	(&origin{Server: unused}).writeCertPEM(t, filepath.Join(dir, "upstream.pem"))
	hash, err := bcrypt.GenerateFromPassword([]byte("pw"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "robotsgate.yaml")
	writeFile(t, cfgPath, wbaConfig(dir, "-", fmt.Sprintf(`clients:
  - user: research
    password_bcrypt: %q
    signature_agent: %q
    sign_key: research-key.pem
  - cidr: 127.0.0.0/8
`, hash, clientAgent)))
	p := startServe(t, dir, "-config", cfgPath)
	research := proxyClient(t, p.addr, filepath.Join(dir, "certs", "ca.pem"))
	research.Transport.(*http.Transport).Proxy = http.ProxyURL(&url.URL{Scheme: "http", User: url.UserPassword("research", "pw"), Host: p.addr})
	other := proxyClient(t, p.addr, filepath.Join(dir, "certs", "ca.pem"))
	for _, tc := range []struct {
		c    *http.Client
		path string
	}{{research, "/research"}, {other, "/other"}} {
		if r := get(t, tc.c, o.URL+tc.path); r.status != http.StatusOK {
			t.Fatalf("GET %s: %d %s", tc.path, r.status, r.body)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "state", "research-key.pem")); err != nil {
		t.Errorf("the client's key was not created in state_dir: %v", err)
	}
	directory := func(args ...string) json.RawMessage {
		stdout, stderr, code := runBin(t, dir, append([]string{"bot-auth", "-config", cfgPath}, args...)...)
		if code != 0 {
			t.Fatalf("robotsgate bot-auth %v: exit %d: %s", args, code, stderr)
		}
		return json.RawMessage(strings.TrimSpace(stdout))
	}
	clientDir, gatewayDir := directory("-client", "0"), directory()
	if string(clientDir) == string(gatewayDir) {
		t.Fatalf("the client's directory is the gateway's: %s", clientDir)
	}
	reqs := []captured{o.request(t, "/research"), o.request(t, "/other")}
	for _, tc := range []struct {
		name      string
		directory json.RawMessage
		agent     string
		want      []bool
	}{
		{"the client's directory", clientDir, clientAgent, []bool{true, false}},
		{"the gateway's directory", gatewayDir, wbaAgentURL, []bool{false, true}},
	} {
		for i, v := range verifyWithNode(t, dir, wbaInput{Directory: tc.directory, DirectoryURL: tc.agent, Requests: reqs}) {
			if v.OK != tc.want[i] {
				t.Errorf("against %s, %s verifies: %v (%s), want %v", tc.name, reqs[i].URL, v.OK, v.Error, tc.want[i])
			}
		}
	}
}

// TestWebBotAuthDirectoryBeforeFirstStart: an operator publishes the key
// directory before robotsgate sends its first signed request. `robotsgate
// bot-auth` creates the missing key (mode 0600) and says so; a second run
// prints the same directory without creating one; serve then signs with
// that key (its admin listener serves the same directory).
func TestWebBotAuthDirectoryBeforeFirstStart(t *testing.T) {
	dir := t.TempDir()
	secure := startCaptureOrigin(t, "127.0.0.1", true, func(http.ResponseWriter, *http.Request) {})
	(&origin{Server: secure.Server}).writeCertPEM(t, filepath.Join(dir, "upstream.pem")) // mitm.upstream_ca
	cfgPath := filepath.Join(dir, "robotsgate.yaml")
	writeFile(t, cfgPath, wbaConfig(dir, filepath.Join(dir, "audit.log"), ""))
	keyPath := filepath.Join(dir, "state", "bot-auth-key.pem")

	first, stderr, code := runBin(t, dir, "bot-auth", "-config", cfgPath)
	if code != 0 || !strings.Contains(stderr, "created the signing key "+keyPath) {
		t.Fatalf("robotsgate bot-auth with no key yet: exit %d, stderr %q; want 0 and the key created", code, stderr)
	}
	if fi, err := os.Stat(keyPath); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the key file: %v, %v; want mode 0600", fi, err)
	}
	if matches, _ := filepath.Glob(filepath.Join(dir, "state", ".signing-key-*")); len(matches) != 0 {
		t.Errorf("temporary key files left behind: %q", matches)
	}
	second, stderr, code := runBin(t, dir, "bot-auth", "-config", cfgPath)
	if code != 0 || second != first || strings.Contains(stderr, "created") {
		t.Fatalf("robotsgate bot-auth again: exit %d, stderr %q, same directory %v", code, stderr, second == first)
	}

	p := startServe(t, dir, "-config", cfgPath, "-admin-listen", "127.0.0.1:0")
	if code, body := adminStatus(t, adminOf(t, p)+"/.well-known/http-message-signatures-directory"); code != http.StatusOK || strings.TrimSpace(body) != strings.TrimSpace(first) {
		t.Errorf("serve's directory is %d %q, want the one bot-auth printed before it started: %q", code, body, first)
	}
}

// TestWebBotAuthSignatureAgentForms signs a request (robotsgate check
// -fetch) in each bot_auth.signature_agent_form and has each verifier
// logic judge it: the verifier of draft-ietf-webbotauth-httpsig-protocol-00
// (typed: an origin for the default type, or ;type=jwks_uri), that of the
// working group's editor's copy of 9 October 2026 (url: the key set's URL,
// no parameters), that of the pre-working-group bare String, and the npm
// web-bot-auth 0.1.3 verify() that Cloudflare publishes. Each form is
// accepted by its own text's logic and refused by the others, and
// web-bot-auth 0.1.3 accepts the string form: the table of
// docs/webbotauth.md ("Which form").
func TestWebBotAuthSignatureAgentForms(t *testing.T) {
	o := startCaptureOrigin(t, "127.0.0.6", false, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			io.WriteString(w, "User-agent: *\nAllow: /\n")
			return
		}
		io.WriteString(w, "page")
	})
	unused := httptest.NewTLSServer(http.NotFoundHandler())
	t.Cleanup(unused.Close)
	drafts := []string{"typed", "url", "string"}
	for _, tc := range []struct {
		form, agent, directoryURL, field string
		accepted                         string // the draft logic that accepts it
		wba013                           bool
	}{
		{"typed", "https://gate.example", wbaAgentURL, `sig1="https://gate.example"`, "typed", false},
		{"typed", "https://gate.example/keys/jwks.json", "https://gate.example/keys/jwks.json", `sig1="https://gate.example/keys/jwks.json";type=jwks_uri`, "typed", false},
		{"url", "https://gate.example", wbaAgentURL, `sig1="` + wbaAgentURL + `"`, "url", false},
		{"string", "https://gate.example", wbaAgentURL, `"` + wbaAgentURL + `"`, "string", true},
	} {
		t.Run(tc.form+" "+tc.agent, func(t *testing.T) {
			dir := t.TempDir()
			(&origin{Server: unused}).writeCertPEM(t, filepath.Join(dir, "upstream.pem"))
			cfgPath := filepath.Join(dir, "robotsgate.yaml")
			cfg := strings.Replace(wbaConfig(dir, "-", "  signature_agent_form: "+tc.form+"\n"),
				"signature_agent: \""+wbaAgentURL+"\"", "signature_agent: \""+tc.agent+"\"", 1)
			writeFile(t, cfgPath, cfg)
			path := "/" + strings.NewReplacer("/", "-", ":", "").Replace(tc.form+tc.agent)
			if _, stderr, code := runBin(t, dir, "check", "-config", cfgPath, "-fetch", o.URL+path); code != 0 {
				t.Fatalf("robotsgate check -fetch: exit %d: %s", code, stderr)
			}
			stdout, stderr, code := runBin(t, dir, "bot-auth", "-config", cfgPath)
			if code != 0 {
				t.Fatalf("robotsgate bot-auth: exit %d: %s", code, stderr)
			}
			req := o.request(t, path)
			if got := req.header.Get("Signature-Agent"); got != tc.field {
				t.Fatalf("Signature-Agent %s, want %s", got, tc.field)
			}
			for _, draft := range drafts {
				v := verifyWithNode(t, dir, wbaInput{Directory: json.RawMessage(strings.TrimSpace(stdout)), DirectoryURL: tc.directoryURL,
					Draft: draft, Requests: []captured{req}})[0]
				if v.OK != (draft == tc.accepted) {
					t.Errorf("the %s verifier logic: ok %v (%s), want %v", draft, v.OK, v.Error, draft == tc.accepted)
				}
				if (v.WBA013 == "ok") != tc.wba013 {
					t.Errorf("web-bot-auth 0.1.3's verify(): %q, want accepted %v", v.WBA013, tc.wba013)
				}
			}
		})
	}
}
