//go:build unix

package e2e

// Helpers of the client tests (clients_test.go): the real robotsgate binary
// between real, unmodified clients — curl, wget, Python's requests, httpx,
// aiohttp and Scrapy, Go's net/http, Node's undici and ws, headless
// Chromium — and origins served by this test process on 127.0.0.1. The
// client scripts are in testdata/clients/.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/websocket"
)

// clientRobotsTxt is the robots.txt of the client tests' origins: line 2
// refuses /private; the paced origin adds a Crawl-delay.
const clientRobotsTxt = "User-agent: *\nDisallow: /private\n"

// crawlDelay is the paced origin's Crawl-delay (fractional seconds are
// allowed), written into its robots.txt.
const crawlDelay = 500 * time.Millisecond

// handshakeLatency is how long the paced origin takes to complete a TLS
// handshake, as an origin a few tens of milliseconds away does (TCP and TLS
// cost round trips). A request that needs a new upstream connection
// therefore reaches the origin later after leaving its pacing hold than one
// on a reused connection: the origin must still see them at least the
// Crawl-delay apart. It is the origin's latency, not a wait of
// the test.
const handshakeLatency = 100 * time.Millisecond

// arrivalJitter is how much closer than the Crawl-delay two requests may
// reach the paced origin's handler. The proxy spaces the moments it writes
// them (plus its 5 ms padding); the handler's clock also counts the
// origin's own work before it runs, which is longer for a request on a new
// connection (HTTP/2 preface and settings) than on an open one, and on a
// loaded 2-core machine running -race differed by 7.5 ms. It stays well
// under handshakeLatency, which the proxy must not lose from a gap.
const arrivalJitter = 25 * time.Millisecond

// gateWait bounds how long an origin holds a response for a signal from the
// test (an SSE event, the end of a browser's WebSocket script): a failing
// client costs this long, a working one nothing.
const gateWait = 10 * time.Second

// clientBody is what the origins serve at /data/...: a few KiB of UTF-8 text
// with non-ASCII characters, then every byte value once (so also bytes that
// are not UTF-8). Every client must receive exactly these bytes.
var clientBody = func() []byte {
	var b bytes.Buffer
	for b.Len() < 5000 {
		b.WriteString("Grüße aus Köln — 東京 — ✓ robotsgate relays bytes unchanged\n")
	}
	for i := range 256 {
		b.WriteByte(byte(i))
	}
	return b.Bytes()
}()

// clientPageText is the text of the HTML page at /page/... (for the
// browser, which shows text, not bytes): UTF-8 with non-ASCII characters,
// nothing the DOM serialiser would escape.
var clientPageText = strings.Repeat("Grüße aus Köln — 東京 — ✓ ", 160)

// clientOrigin is an origin of the client tests. It records every request's
// target in arrival order and serves:
//
//	/robots.txt        its robots.txt
//	/data/...          clientBody (application/octet-stream)
//	/page/...          an HTML page holding clientPageText
//	/private/...       "secret" (robots.txt disallows it: it must never arrive)
//	/ws, /private/ws   a WebSocket echo (golang.org/x/net/websocket)
//	/sse?id=ID         two Server-Sent Events; the second only after the test
//	                   opens gate ID (or gateWait passes: then timedOut(ID))
//	/wspage?id=ID&path=P  a page whose script echoes a message through a
//	                   WebSocket to P and writes the outcome into the DOM,
//	                   then fetches /release?id=ID; its <img src=/hold?id=ID>
//	                   keeps the page's load event (and so Chromium's
//	                   --dump-dom) waiting until then.
type clientOrigin struct {
	*httptest.Server
	robots string

	mu       sync.Mutex
	targets  []string  // request-targets, in arrival order
	arrivals []arrival // each /data/... request
	gates    map[string]*gate
}

// gate is a one-shot signal from the test (or a page) to a held response.
type gate struct {
	ch       chan struct{}
	once     sync.Once
	timedOut bool // the origin stopped waiting after gateWait
}

// startClientOrigin starts an origin: plain HTTP, or HTTPS offering HTTP/2
// (ALPN h2 and http/1.1) whose TLS handshakes take at least handshake.
func startClientOrigin(t *testing.T, useTLS bool, robots string, handshake time.Duration) *clientOrigin {
	t.Helper()
	var cfg *tls.Config
	if useTLS {
		cfg = &tls.Config{}
	}
	return startClientOriginOn(t, nil, cfg, robots, handshake)
}

// startClientOriginOn is startClientOrigin on ln (nil: a free loopback
// port) with tlsCfg (nil: plain HTTP; without GetConfigForClient:
// httptest's certificate).
func startClientOriginOn(t *testing.T, ln net.Listener, tlsCfg *tls.Config, robots string, handshake time.Duration) *clientOrigin {
	t.Helper()
	useTLS := tlsCfg != nil
	o := &clientOrigin{robots: robots, gates: map[string]*gate{}}
	mux := http.NewServeMux()
	mux.HandleFunc("/robots.txt", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, o.robots)
	})
	mux.HandleFunc("/data/", func(w http.ResponseWriter, r *http.Request) {
		o.mu.Lock()
		o.arrivals = append(o.arrivals, arrival{r.RequestURI, time.Now()})
		o.mu.Unlock()
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("X-Origin", "clients")
		w.Write(clientBody)
	})
	mux.HandleFunc("/page/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>page</title></head>"+
			"<body><p id=\"text\">%s</p></body></html>\n", clientPageText)
	})
	mux.HandleFunc("/private/", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "secret")
	})
	echo := websocket.Server{Handler: func(ws *websocket.Conn) {
		// Handshake is nil: no Origin check (Node's ws and aiohttp send
		// no Origin header).
		defer ws.Close()
		for {
			var msg string
			if err := websocket.Message.Receive(ws, &msg); err != nil {
				return
			}
			if err := websocket.Message.Send(ws, msg); err != nil {
				return
			}
		}
	}}
	mux.Handle("/ws", echo)
	mux.Handle("/private/ws", echo)
	mux.HandleFunc("/sse", func(w http.ResponseWriter, r *http.Request) {
		g := o.gate(r.URL.Query().Get("id"))
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
		io.WriteString(w, "data: first\n\n")
		http.NewResponseController(w).Flush()
		if !o.hold(r, g) {
			return
		}
		io.WriteString(w, "data: second\n\n")
	})
	mux.HandleFunc("/wspage", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, wsPage, strconv.Quote(q.Get("path")), strconv.Quote(q.Get("msg")), url.QueryEscape(q.Get("id")))
	})
	mux.HandleFunc("/hold", func(w http.ResponseWriter, r *http.Request) {
		o.hold(r, o.gate(r.URL.Query().Get("id")))
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("/release", func(w http.ResponseWriter, r *http.Request) {
		o.open(r.URL.Query().Get("id"))
		w.WriteHeader(http.StatusNoContent)
	})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o.mu.Lock()
		o.targets = append(o.targets, r.RequestURI)
		o.mu.Unlock()
		mux.ServeHTTP(w, r)
	})
	o.Server = httptest.NewUnstartedServer(h)
	if ln != nil {
		o.Listener.Close()
		o.Listener = ln
	}
	if useTLS {
		o.EnableHTTP2 = true
		if tlsCfg.GetConfigForClient != nil || handshake > 0 {
			o.TLS = tlsCfg.Clone()
		}
		if handshake > 0 {
			configFor := tlsCfg.GetConfigForClient
			o.TLS.GetConfigForClient = func(hello *tls.ClientHelloInfo) (*tls.Config, error) {
				time.Sleep(handshake) // the origin's latency (see handshakeLatency)
				if configFor != nil {
					return configFor(hello)
				}
				return nil, nil
			}
		}
		o.StartTLS()
	} else {
		o.Start()
	}
	t.Cleanup(func() {
		o.mu.Lock()
		for _, g := range o.gates {
			g.once.Do(func() { close(g.ch) })
		}
		o.mu.Unlock()
		o.Close()
	})
	return o
}

// wsPage is the browser's WebSocket page: %s are the path and the message
// (JavaScript string literals) and the id (URL-escaped).
const wsPage = `<!doctype html>
<html><head><meta charset="utf-8"><title>ws</title></head><body>
<p id="echo">waiting</p>
<script>
let finished = false;
function finish(text) {
  if (finished) return;
  finished = true;
  document.getElementById('echo').textContent = text;
  fetch('/release?id=%[3]s');
}
const ws = new WebSocket((location.protocol === 'https:' ? 'wss://' : 'ws://') + location.host + %[1]s);
ws.onopen = () => ws.send(%[2]s);
ws.onmessage = (e) => { finish('echo: ' + e.data); ws.close(); };
ws.onerror = () => finish('error');
ws.onclose = (e) => finish('closed: ' + e.code);
</script>
<img src="/hold?id=%[3]s" alt="">
</body></html>
`

func (o *clientOrigin) gate(id string) *gate {
	o.mu.Lock()
	defer o.mu.Unlock()
	g := o.gates[id]
	if g == nil {
		g = &gate{ch: make(chan struct{})}
		o.gates[id] = g
	}
	return g
}

// open opens gate id: the responses it holds go on.
func (o *clientOrigin) open(id string) {
	g := o.gate(id)
	g.once.Do(func() { close(g.ch) })
}

// hold waits until g opens, gateWait passes (recorded) or the client
// leaves (false).
func (o *clientOrigin) hold(r *http.Request, g *gate) bool {
	timer := time.NewTimer(gateWait)
	defer timer.Stop()
	select {
	case <-g.ch:
	case <-timer.C:
		o.mu.Lock()
		g.timedOut = true
		o.mu.Unlock()
	case <-r.Context().Done():
		return false
	}
	return true
}

// timedOut reports whether a response held by gate id went on only because
// gateWait passed.
func (o *clientOrigin) timedOut(id string) bool {
	g := o.gate(id)
	o.mu.Lock()
	defer o.mu.Unlock()
	return g.timedOut
}

// saw reports whether target arrived.
func (o *clientOrigin) saw(target string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Contains(o.targets, target)
}

// arrival is when a request for target reached the origin's handler.
type arrival struct {
	target string
	at     time.Time
}

func (o *clientOrigin) arrivalTimes() []arrival {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.arrivals)
}

// ---------------------------------------------------------------------------
// The proxy and its origins.

// clientEnv is one test's robotsgate with a plain HTTP origin, an HTTPS
// origin offering HTTP/2 (both serving the WebSocket echo too) and an HTTPS
// origin with a Crawl-delay and slow handshakes (all three share httptest's
// certificate, which the proxy trusts upstream). The audit log goes to the
// process's stdout, so that tests can wait for a decision's line.
type clientEnv struct {
	dir    string
	p      *proc
	plain  *clientOrigin // http://, ws://
	tls    *clientOrigin // https:// (h2 and http/1.1), wss://
	paced  *clientOrigin // https://, Crawl-delay, handshakeLatency
	caFile string        // the interception CA that clients must trust
}

func startClientEnv(t *testing.T) *clientEnv {
	t.Helper()
	dir := t.TempDir()
	e := &clientEnv{
		dir:   dir,
		plain: startClientOrigin(t, false, clientRobotsTxt, 0),
		tls:   startClientOrigin(t, true, clientRobotsTxt, 0),
		paced: startClientOrigin(t, true, fmt.Sprintf("%sCrawl-delay: %g\n", clientRobotsTxt, crawlDelay.Seconds()), handshakeLatency),
	}
	upstream := filepath.Join(dir, "upstream.pem")
	e.tls.writeCertPEM(t, upstream)
	e.caFile = filepath.Join(dir, "certs", "ca.pem")
	cfgPath := filepath.Join(dir, "cfg.yaml")
	writeFile(t, cfgPath, clientConfig(dir, upstream))
	e.p = startServe(t, dir, "-config", cfgPath)
	return e
}

// clientConfig is the client tests' configuration: the proxy on a free
// loopback port, no admin listener, the interception CA created in
// dir/certs on first start, the HTTPS origin's certificate trusted
// upstream, and the audit log on stdout. The egress guard lets the proxy
// reach 127.0.0.1 and nothing else: allow_hosts refuses every other name
// before any lookup (Chromium's own background requests to Google's hosts,
// which --disable-background-networking does not stop, get 403
// egress-denied instead of going out).
func clientConfig(dir, upstreamCA string) string {
	return fmt.Sprintf(`# written by the client tests
listen: 127.0.0.1:0
admin_listen: ""
robots:
  fetch_user_agent: %q
  fetch_timeout: 5s
egress:
  allow_networks: [127.0.0.1/32]
  allow_hosts: ["127.0.0.1"]
mitm:
  ca_cert: %q
  ca_key: %q
  upstream_ca: %q
log:
  audit: "-"
`, e2eFetchUA, filepath.Join(dir, "certs", "ca.pem"), filepath.Join(dir, "certs", "ca-key.pem"), upstreamCA)
}

// writeCertPEM writes the origin's certificate as PEM (mitm.upstream_ca).
func (o *clientOrigin) writeCertPEM(t *testing.T, path string) {
	t.Helper()
	(&origin{Server: o.Server}).writeCertPEM(t, path)
}

func (e *clientEnv) proxyURL() string { return "http://" + e.p.addr }

// log is the end of the proxy's output (its log and audit lines), for
// failure messages.
func (e *clientEnv) log() string {
	s := e.p.out.String()
	if len(s) > 6000 {
		s = "...\n" + s[len(s)-6000:]
	}
	return "robotsgate's output (log and audit):\n" + s
}

// auditEntry is the part of an audit line the tests look at.
type auditEntry struct {
	Time           time.Time `json:"time"`
	WaitMS         float64   `json:"wait_ms"`
	Method         string    `json:"method"`
	Via            string    `json:"via"`
	Client         string    `json:"client"`
	URL            string    `json:"url"`
	Decision       string    `json:"decision"`
	Rule           string    `json:"rule"`
	Status         int       `json:"status"`
	UpstreamStatus int       `json:"upstream_status"`
	Bytes          int64     `json:"bytes"`
	UserAgent      string    `json:"user_agent"`
	Note           string    `json:"note"`
	Usage          []struct {
		Signal, Value, Where string
		Refuses              []string
	} `json:"usage"`
}

// waitAudit waits (bounded) for the audit line of rawURL with decision,
// checks that it records status as sent to the client, and returns it; it
// fails the test without one.
func (e *clientEnv) waitAudit(t *testing.T, rawURL, decision string, status int) auditEntry {
	t.Helper()
	a, ok := e.waitAuditLine(func(a auditEntry) bool { return a.URL == rawURL && a.Decision == decision })
	switch {
	case !ok:
		t.Errorf("no audit line for %s with decision %s within %v; %s", rawURL, decision, logTimeout, e.log())
	case a.Status != status:
		t.Errorf("the audit line of %s (decision %s) records status %d sent to the client, want %d (upstream status %d)",
			rawURL, decision, a.Status, status, a.UpstreamStatus)
	}
	return a
}

// wantPlainTunnel checks that the client reached o through a CONNECT
// tunnel carrying plain HTTP (which the proxy tells from TLS by the first
// bytes, and audits as such).
func (e *clientEnv) wantPlainTunnel(t *testing.T, client string, o *clientOrigin) {
	t.Helper()
	authority := strings.TrimPrefix(o.URL, "http://")
	if _, ok := e.waitAuditLine(func(a auditEntry) bool {
		return a.Method == http.MethodConnect && strings.Contains(a.URL, "//"+authority+"/") && a.Decision == "allow" &&
			strings.Contains(a.Note, "plain HTTP")
	}); !ok {
		t.Errorf("%s: no audit line of a CONNECT to %s carrying plain HTTP within %v; %s", client, authority, logTimeout, e.log())
	}
}

// waitAuditLine waits (bounded) for an audit line for which match holds.
func (e *clientEnv) waitAuditLine(match func(auditEntry) bool) (auditEntry, bool) {
	var found auditEntry
	ok := e.p.out.waitFor(logTimeout, e.p.done, func(s string) bool {
		for line := range strings.Lines(s) {
			if !strings.HasPrefix(line, "{") || !strings.Contains(line, `"decision"`) {
				continue
			}
			var a auditEntry
			if json.Unmarshal([]byte(line), &a) == nil && match(a) {
				found = a
				return true
			}
		}
		return false
	})
	return found, ok
}

// waitAuditCount waits (bounded) until n audit lines match.
func (e *clientEnv) waitAuditCount(match func(auditEntry) bool, n int) bool {
	return e.p.out.waitFor(logTimeout, e.p.done, func(s string) bool {
		count := 0
		for line := range strings.Lines(s) {
			var a auditEntry
			if strings.HasPrefix(line, "{") && json.Unmarshal([]byte(line), &a) == nil && match(a) {
				count++
			}
		}
		return count >= n
	})
}

// wantAllowed checks a response to an allowed GET of o's target: status
// 200, the origin's bytes unchanged, and the proxy's audit line.
func (e *clientEnv) wantAllowed(t *testing.T, client string, o *clientOrigin, target string, status int, body []byte) {
	t.Helper()
	rawURL := o.URL + target
	if status != http.StatusOK {
		t.Errorf("%s GET %s: status %d, want 200; body %.300q; %s", client, rawURL, status, body, e.log())
		return
	}
	if !bytes.Equal(body, clientBody) {
		t.Errorf("%s GET %s: the body (%d bytes) differs from the origin's (%d bytes): %s", client, rawURL, len(body), len(clientBody), firstDiff(body, clientBody))
	}
	if !o.saw(target) {
		t.Errorf("%s GET %s: the origin never received %s", client, rawURL, target)
	}
	a := e.waitAudit(t, rawURL, "allow", http.StatusOK)
	if a.URL != "" && a.Bytes != int64(len(clientBody)) {
		t.Errorf("%s GET %s: audit line says %d bytes sent, want %d", client, rawURL, a.Bytes, len(clientBody))
	}
}

// wantRefused checks a response to a GET of o's target under /private: the
// proxy's 403 (with a body naming robots.txt, when the client shows it),
// the origin never reached, and the audit line.
func (e *clientEnv) wantRefused(t *testing.T, client string, o *clientOrigin, target string, status int, body string) {
	t.Helper()
	rawURL := o.URL + target
	if status != http.StatusForbidden {
		t.Errorf("%s GET %s: status %d, want 403 from the proxy; body %.300q; %s", client, rawURL, status, body, e.log())
	}
	if body != "" && !strings.Contains(body, "robots.txt") {
		t.Errorf("%s GET %s: the refusal body does not mention robots.txt:\n%s", client, rawURL, body)
	}
	if o.saw(target) {
		t.Errorf("%s GET %s: the origin received %s, which robots.txt disallows", client, rawURL, target)
	}
	e.waitAudit(t, rawURL, "disallow", http.StatusForbidden)
}

// firstDiff describes where two byte strings first differ.
func firstDiff(got, want []byte) string {
	n := min(len(got), len(want))
	for i := range n {
		if got[i] != want[i] {
			return fmt.Sprintf("first difference at byte %d: got %q, want %q", i, got[i:min(i+16, len(got))], want[i:min(i+16, len(want))])
		}
	}
	return fmt.Sprintf("one is a prefix of the other (got %d bytes, want %d)", len(got), len(want))
}

// wantPaced checks that the paced origin's /data/ requests (n of them)
// arrived at least crawlDelay apart, less arrivalJitter. On failure it
// shows, for each request, when the proxy received it and how long it held
// it for its slot (from the audit log; the robots.txt fetch comes between
// the two) beside when the origin received it.
func (e *clientEnv) wantPaced(t *testing.T, client string, n int) {
	t.Helper()
	o := e.paced
	as := o.arrivalTimes()
	if len(as) != n {
		t.Fatalf("%s: the paced origin received %d page requests, want %d", client, len(as), n)
	}
	slices.SortFunc(as, func(a, b arrival) int { return a.at.Compare(b.at) })
	short := false
	for i := 1; i < len(as); i++ {
		if gap := as[i].at.Sub(as[i-1].at); gap < crawlDelay-arrivalJitter {
			short = true
			t.Errorf("%s: %s and %s reached the origin %v apart, less than the Crawl-delay %v by more than %v", client, as[i-1].target, as[i].target, gap, crawlDelay, arrivalJitter)
		}
	}
	if !short {
		return
	}
	var b strings.Builder
	for _, a := range as {
		line := e.waitAudit(t, o.URL+a.target, "allow", http.StatusOK)
		fmt.Fprintf(&b, "\n  %s: at the proxy %s, held %.1f ms for its slot; at the origin %s",
			a.target, line.Time.Format("15:04:05.000000"), line.WaitMS, a.at.Format("15:04:05.000000"))
	}
	t.Logf("%s: the paced requests, in order of arrival at the origin:%s", client, b.String())
}

// ---------------------------------------------------------------------------
// Running clients.

// clientVars is cleanEnv without the other settings that would change what
// the clients trust or where they connect (this machine may set CA bundles
// for Python, Node and others), plus extra.
func clientVars(extra ...string) []string {
	var env []string
	for _, kv := range cleanEnv() {
		name, _, _ := strings.Cut(kv, "=")
		switch strings.ToLower(name) {
		case "requests_ca_bundle", "node_extra_ca_certs", "node_options", "node_path", "node_tls_reject_unauthorized",
			"ws_proxy", "wss_proxy", "pythonpath", "pythonhome", "pythonstartup", "scrapy_settings_module":
			continue
		}
		env = append(env, kv)
	}
	return append(env, extra...)
}

// proxyVars are the proxy environment variables in both cases (curl and
// wget read the lower-case ones, most other clients either).
func proxyVars(proxyURL string) []string {
	return []string{"http_proxy=" + proxyURL, "https_proxy=" + proxyURL, "HTTP_PROXY=" + proxyURL, "HTTPS_PROXY=" + proxyURL}
}

// clientScript is the absolute path of a script in testdata/clients.
func clientScript(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("testdata", "clients", name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// clientResult is one line a client script prints (JSON): what it got for
// one URL.
type clientResult struct {
	URL      string `json:"url"`
	Status   int    `json:"status"`
	Version  string `json:"version"` // the HTTP version of the response
	Decision string `json:"decision"`
	BodyB64  string `json:"body_b64"`
	Echo     string `json:"echo"` // a WebSocket's echo
	Error    string `json:"error"`
}

func (r clientResult) body() []byte {
	b, _ := base64.StdEncoding.DecodeString(r.BodyB64)
	return b
}

// runScript runs a client script (bounded) and returns its results by URL;
// it fails the test when the script fails.
func runScript(t *testing.T, e *clientEnv, env []string, name string, args ...string) map[string]clientResult {
	t.Helper()
	stdout, stderr, code := runProgram(t, t.TempDir(), env, name, args...)
	if code != 0 {
		t.Fatalf("%s %s: exit status %d; stderr:\n%s\nstdout:\n%s\n%s", filepath.Base(name), strings.Join(args, " "), code, stderr, stdout, e.log())
	}
	results := map[string]clientResult{}
	for line := range strings.Lines(stdout) {
		if !strings.HasPrefix(line, "{") {
			continue
		}
		var r clientResult
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("%s: bad result line %q: %v", filepath.Base(name), line, err)
		}
		results[r.URL] = r
	}
	return results
}

// result returns the script's result for rawURL, failing the test without one.
func result(t *testing.T, results map[string]clientResult, rawURL string) clientResult {
	t.Helper()
	r, ok := results[rawURL]
	if !ok {
		t.Fatalf("the client printed no result for %s (results: %v)", rawURL, results)
	}
	return r
}

// systemPython is Debian's Python, which has Debian's python3-* packages
// (the python3 first on PATH may be another one).
const systemPython = "/usr/bin/python3"

var pythonModules sync.Map // module name -> error from importing it

// needPython skips the test unless systemPython can import every module.
func needPython(t *testing.T, modules ...string) {
	t.Helper()
	for _, m := range modules {
		v, ok := pythonModules.Load(m)
		if !ok {
			cmd := exec.Command(systemPython, "-c", "import "+m)
			cmd.Env = clientVars()
			out, err := cmd.CombinedOutput()
			if err != nil {
				err = fmt.Errorf("%v: %s", err, bytes.TrimSpace(out))
			}
			v, _ = pythonModules.LoadOrStore(m, err)
		}
		if err, _ := v.(error); err != nil {
			t.Skipf("%s cannot import %s (%v): this test drives the real binary with it; make deps installs Debian's python3-* packages", systemPython, m, err)
		}
	}
}

// nodeDir is where make deps installs the npm packages of the Node clients
// (testdata/clients/package.json): $ROBOTSGATE_NODE_DIR, or robotsgate-e2e/node
// in the user's cache directory (~/.cache), outside the repository.
func nodeDir() string {
	if d := os.Getenv("ROBOTSGATE_NODE_DIR"); d != "" {
		return d
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	return filepath.Join(cache, "robotsgate-e2e", "node")
}

// needNode skips the test unless node and the npm packages are installed,
// and returns the environment variable that lets the scripts require them.
func needNode(t *testing.T, packages ...string) string {
	t.Helper()
	needTool(t, "node")
	modules := filepath.Join(nodeDir(), "node_modules")
	for _, p := range packages {
		if _, err := os.Stat(filepath.Join(modules, p, "package.json")); err != nil {
			t.Skipf("npm package %s is not installed in %s: this test drives the real binary with it (make deps installs it)", p, modules)
		}
	}
	return "NODE_PATH=" + modules
}

// streamLines starts name with args and calls onLine for each line it
// prints, as it prints it, until it exits (bounded by requestTimeout). It
// returns the lines and the exit error.
func streamLines(t *testing.T, env []string, onLine func(string), name string, args ...string) ([]string, string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = env
	cmd.Dir = t.TempDir()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	var lines []string
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		onLine(sc.Text())
	}
	err = cmd.Wait()
	if ctx.Err() != nil {
		err = errors.Join(err, fmt.Errorf("still running after %v; killed", requestTimeout))
	}
	return lines, stderr.String(), err
}

// chromium loads pageURL in headless Chromium through the proxy and returns
// the DOM after the page's load event (--dump-dom). Chromium trusts the
// interception CA through an NSS database in a temporary HOME (made with
// certutil, as a user would for their own browser); --proxy-bypass-list=
// <-loopback> sends loopback through the proxy too, which Chromium bypasses
// by default.
func chromium(t *testing.T, e *clientEnv, pageURL string) string {
	t.Helper()
	return chromiumVia(t, e, e.proxyURL(), pageURL)
}

// chromiumVia is chromium with --proxy-server=proxyServer (socks5://...).
func chromiumVia(t *testing.T, e *clientEnv, proxyServer, pageURL string) string {
	t.Helper()
	bin := needTool(t, "chromium")
	home := chromiumHome(t, e)
	args := []string{
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + filepath.Join(home, "profile"),
		"--proxy-server=" + proxyServer, "--proxy-bypass-list=<-loopback>",
		"--dump-dom", pageURL,
	}
	stdout, stderr, code := runProgram(t, home, clientVars("HOME="+home), bin, args...)
	if code != 0 {
		t.Fatalf("chromium --dump-dom %s: exit status %d; stderr:\n%s\n%s", pageURL, code, lastLines(stderr, 30), e.log())
	}
	return stdout
}

// chromiumHome makes a HOME whose NSS database (~/.pki/nssdb, where
// Chromium on Linux reads user-added roots) trusts the interception CA.
func chromiumHome(t *testing.T, e *clientEnv) string {
	t.Helper()
	certutil := needTool(t, "certutil")
	home := t.TempDir()
	db := filepath.Join(home, ".pki", "nssdb")
	if err := os.MkdirAll(db, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"-N", "-d", "sql:" + db, "--empty-password"},
		{"-A", "-d", "sql:" + db, "-n", "robotsgate e2e CA", "-t", "C,,", "-i", e.caFile},
	} {
		if _, stderr, code := runProgram(t, home, clientVars("HOME="+home), certutil, args...); code != 0 {
			t.Fatalf("certutil %s: exit status %d: %s", strings.Join(args, " "), code, stderr)
		}
	}
	return home
}

// lastLines is the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
