//go:build unix

package e2e

// End-to-end tests of the AI-usage signals of responses: the
// real binary between a client with purposes [train-ai] and origins whose
// responses carry tdm-reservation, Content-Usage, X-Robots-Tag (noai, also
// agent-scoped) and, with usage.scan_html, meta tags; a client without
// purposes beside it. Every exchange is read raw, whole, from the client's
// socket: a withheld response must not leak one byte of the origin's body.

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
)

// usageMarker is in every body the usage origin sends.
const usageMarker = "E2E-ORIGIN-BODY-MARKER"

// usagePage is a response of the usage origin.
type usagePage struct {
	header []string // name, value, ...
	body   []byte
}

func usageHTML(head string) []byte {
	b := []byte("<!doctype html><html><head><title>" + usageMarker + "</title>" + head + "</head><body>\n")
	for len(b) < 20<<10 {
		b = append(b, "<p>"+usageMarker+" text of the page</p>\n"...)
	}
	return append(b, "</body></html>\n"...)
}

func gzipped(t *testing.T, data []byte) []byte {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	w.Write(data)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// usagePages are the usage origin's responses by path, and the signal each
// refusal must name ("" for none).
func usagePages(t *testing.T) (map[string]usagePage, map[string]string) {
	text := []byte("plain text " + usageMarker + "\n")
	noaiPage := usageHTML(`<meta name="robots" content="noai, noimageai">`)
	pages := map[string]usagePage{
		"/plain":         {[]string{"Content-Type", "text/plain"}, text},
		"/tdm":           {[]string{"Content-Type", "text/plain", "tdm-reservation", "1", "tdm-policy", "https://example.org/tdm.json"}, text},
		"/content-usage": {[]string{"Content-Type", "text/plain", "Content-Usage", "train-ai=n, search=y"}, text},
		"/noai":          {[]string{"Content-Type", "text/plain", "X-Robots-Tag", "noindex", "X-Robots-Tag", "noai"}, text},
		"/scoped":        {[]string{"Content-Type", "text/plain", "X-Robots-Tag", "TrainBot: noai"}, text},
		"/scoped-other":  {[]string{"Content-Type", "text/plain", "X-Robots-Tag", "OtherBot: noai"}, text},
		"/meta":          {[]string{"Content-Type", "text/html; charset=utf-8"}, noaiPage},
		"/meta-tdm":      {[]string{"Content-Type", "text/html"}, usageHTML(`<meta name="tdm-reservation" content="1">`)},
		"/meta-gzip":     {[]string{"Content-Type", "text/html", "Content-Encoding", "gzip"}, gzipped(t, noaiPage)},
		"/meta-comment":  {[]string{"Content-Type", "text/html"}, usageHTML(`<!-- <meta name="robots" content="noai"> -->`)},
	}
	signals := map[string]string{
		"/tdm":           "tdm-reservation: 1 refuses the purpose train-ai (tdm-policy https://example.org/tdm.json)",
		"/content-usage": "Content-Usage: train-ai=n, search=y (train-ai=n) refuses the purpose train-ai",
		"/noai":          "X-Robots-Tag: noai refuses the purpose train-ai",
		"/scoped":        "X-Robots-Tag: TrainBot: noai (noai) refuses the purpose train-ai",
		"/meta":          `<meta name="robots" content="noai, noimageai"> (noai) refuses the purpose train-ai`,
		"/meta-tdm":      `<meta name="tdm-reservation" content="1"> refuses the purpose train-ai`,
		"/meta-gzip":     `<meta name="robots" content="noai, noimageai"> (noai) refuses the purpose train-ai`,
	}
	return pages, signals
}

// usageKinds are the kinds of signal (the audit's usage, the metric's
// label) of the usage origin's pages, and whether each refuses train-ai.
var usageKinds = map[string]struct {
	kind    string
	refuses bool
}{
	"/tdm": {"tdm-reservation-header", true}, "/content-usage": {"content-usage-header", true},
	"/noai": {"x-robots-tag", true}, "/scoped": {"x-robots-tag", true}, "/scoped-other": {"x-robots-tag", false},
	"/meta": {"meta-robots", true}, "/meta-tdm": {"meta-tdm-reservation", true}, "/meta-gzip": {"meta-robots", true},
}

// checkUsageAudit checks the audit record's usage list: the page's signal,
// refusing train-ai or not, or nothing for a page without one.
func checkUsageAudit(t *testing.T, a auditEntry, path string) {
	t.Helper()
	want, ok := usageKinds[path]
	switch {
	case !ok && len(a.Usage) > 0:
		t.Errorf("audit usage %+v for a page without a signal", a.Usage)
	case ok && (len(a.Usage) != 1 || a.Usage[0].Signal != want.kind || contains(a.Usage[0].Refuses, "train-ai") != want.refuses):
		t.Errorf("audit usage %+v, want one %s signal that refuses train-ai: %t", a.Usage, want.kind, want.refuses)
	}
}

func startUsageOrigin(t *testing.T, pages map[string]usagePage, useTLS bool) *httptest.Server {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			io.WriteString(w, "User-agent: *\nAllow: /\n")
			return
		}
		pg, ok := pages[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		for i := 0; i+1 < len(pg.header); i += 2 {
			w.Header().Add(pg.header[i], pg.header[i+1])
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(pg.body)))
		w.Write(pg.body)
	})
	var o *httptest.Server
	if useTLS {
		o = httptest.NewTLSServer(h)
	} else {
		o = httptest.NewServer(h)
	}
	t.Cleanup(o.Close)
	return o
}

// rawExchange sends one GET for originURL+path through the proxy at addr
// with "Connection: close" and returns every byte the client received
// after the request (after the CONNECT's 200 for HTTPS): the whole
// response, and anything that would follow it.
func rawExchange(t *testing.T, addr, caFile, originURL, path, ua, proxyAuth string) []byte {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, requestTimeout)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(requestTimeout))
	authHeader := ""
	if proxyAuth != "" {
		authHeader = "Proxy-Authorization: " + proxyAuth + "\r\n"
	}
	host := strings.TrimPrefix(strings.TrimPrefix(originURL, "http://"), "https://")
	var conn net.Conn = c
	target := originURL + path
	if strings.HasPrefix(originURL, "https://") {
		fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n%s\r\n", host, host, authHeader)
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, nil)
		if err != nil || resp.StatusCode != 200 || br.Buffered() > 0 {
			t.Fatalf("CONNECT %s: %v %v", host, resp, err)
		}
		tc := tls.Client(c, &tls.Config{RootCAs: certPool(t, caFile), ServerName: "127.0.0.1"})
		if err := tc.Handshake(); err != nil {
			t.Fatalf("TLS in the tunnel to %s: %v", host, err)
		}
		conn, target, authHeader = tc, path, ""
	}
	fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: %s\r\nAccept-Encoding: gzip\r\nConnection: close\r\n%s\r\n", target, host, ua, authHeader)
	got, err := io.ReadAll(conn)
	if err != nil && len(got) == 0 {
		t.Fatalf("GET %s%s: %v", originURL, path, err)
	}
	return got
}

// TestE2EUsageSignalsOfResponses: a client with purposes [train-ai] is
// refused by each signal of a response (403 usage-denied naming it, none of
// the origin's body), over HTTP and intercepted HTTPS; a client without
// purposes gets every response byte for byte; the audit log records the
// origin's status and why the body was withheld.
func TestE2EUsageSignalsOfResponses(t *testing.T) {
	dir := t.TempDir()
	pages, signals := usagePages(t)
	httpO := startUsageOrigin(t, pages, false)
	httpsO := startUsageOrigin(t, pages, true)
	cfg := e2eConfig{dir: dir, upstreamCA: true}
	pem := filepath.Join(dir, "upstream.pem")
	(&origin{Server: httpsO}).writeCertPEM(t, pem)
	hash, err := bcrypt.GenerateFromPassword([]byte("pw"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "cfg.yaml")
	writeFile(t, cfgPath, cfg.yaml()+fmt.Sprintf(`clients:
  - { user: plain, password_bcrypt: %q }
  - { cidr: 127.0.0.1/32, purposes: [train-ai] }
usage:
  scan_html: true
log:
  audit: "-"
`, hash))
	p := startServe(t, dir, "-config", cfgPath, "-admin-listen", "127.0.0.1:0")
	plainAuth := "Basic " + base64.StdEncoding.EncodeToString([]byte("plain:pw"))
	const trainUA, plainUA = "Mozilla/5.0 (compatible; TrainBot/1.0)", "PlainBot/1.0"

	for _, o := range []*httptest.Server{httpO, httpsO} {
		for path, pg := range pages {
			t.Run(strings.TrimPrefix(o.URL, "http")+path, func(t *testing.T) {
				// The client without purposes: the origin's response.
				raw := rawExchange(t, p.addr, cfg.caPath(), o.URL, path, plainUA, plainAuth)
				resp, body := parseRaw(t, raw)
				if resp.StatusCode != 200 || !bytes.Equal(body, pg.body) {
					t.Errorf("client without purposes: %d, %d bytes; want 200 and the origin's %d bytes", resp.StatusCode, len(body), len(pg.body))
				}
				if a := waitUsageAudit(t, p, o.URL+path, plainUA); len(a.Usage) > 0 {
					t.Errorf("client without purposes: audit usage %+v, want none (signals are not read for it)", a.Usage)
				}
				for i := 0; i+1 < len(pg.header); i += 2 {
					if got := resp.Header.Values(pg.header[i]); !contains(got, pg.header[i+1]) {
						t.Errorf("client without purposes: %s %q, want %q among them", pg.header[i], got, pg.header[i+1])
					}
				}

				// The train-ai client.
				raw = rawExchange(t, p.addr, cfg.caPath(), o.URL, path, trainUA, "")
				resp, body = parseRaw(t, raw)
				signal := signals[path]
				if signal == "" {
					if resp.StatusCode != 200 || !bytes.Equal(body, pg.body) {
						t.Errorf("train-ai, no refusing signal: %d, %d bytes; want 200 and the origin's %d bytes", resp.StatusCode, len(body), len(pg.body))
					}
					checkUsageAudit(t, waitUsageAudit(t, p, o.URL+path, trainUA), path)
					return
				}
				if resp.StatusCode != 403 || resp.Header.Get("X-Robotsgate-Decision") != "usage-denied" ||
					!strings.HasPrefix(resp.Header.Get("Proxy-Status"), "robotsgate; error=http_request_denied") ||
					resp.Header.Get("Cache-Control") != "no-store" {
					t.Errorf("train-ai: %d %v, want 403 usage-denied with Proxy-Status and Cache-Control: no-store", resp.StatusCode, resp.Header)
				}
				if want := "The origin's response was withheld: " + signal; !strings.Contains(string(body), want) {
					t.Errorf("train-ai: the refusal does not say %q:\n%s", want, body)
				}
				if bytes.Contains(raw, []byte(usageMarker)) {
					t.Errorf("train-ai: a byte of the withheld body reached the client:\n%s", raw)
				}
				a := waitUsageAudit(t, p, o.URL+path, trainUA)
				if a.Decision != "usage-denied" || a.UpstreamStatus != 200 || a.Status != 403 ||
					!strings.Contains(a.Note, "the origin's response (200) was withheld: "+signal) {
					t.Errorf("train-ai: audit line %+v, want usage-denied, upstream_status 200, status 403 and the signal in the note", a)
				}
				checkUsageAudit(t, a, path)
			})
		}
	}
	checkUsageMetrics(t, p, signals)
}

// checkUsageMetrics checks robotsgate_usage_refusals_total: one refusal
// per refusing page and origin (two origins), by kind of signal.
func checkUsageMetrics(t *testing.T, p *proc, signals map[string]string) {
	t.Helper()
	m := regexp.MustCompile(`admin=(127\.0\.0\.1:\d+)`).FindStringSubmatch(p.out.String())
	if m == nil {
		t.Fatalf("no admin address in the start-up log")
	}
	want := map[string]int{"tdmrep": 0, "robots-content-usage": 0}
	for path := range signals {
		want[usageKinds[path].kind] += 2
	}
	metrics := httpGet(t, "http://"+m[1]+"/metrics")
	for kind, n := range want {
		line := fmt.Sprintf("robotsgate_usage_refusals_total{signal=%q} %d\n", kind, n)
		if !strings.Contains(metrics, line) {
			t.Errorf("metrics: want %q", line)
		}
	}
}

func contains(values []string, v string) bool {
	for _, x := range values {
		if x == v {
			return true
		}
	}
	return false
}

// parseRaw reads a raw response: one response, nothing after it.
func parseRaw(t *testing.T, raw []byte) (*http.Response, []byte) {
	t.Helper()
	br := bufio.NewReader(bytes.NewReader(raw))
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("not an HTTP response (%v): %.300q", err, raw)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the body: %v", err)
	}
	if rest, _ := io.ReadAll(br); len(rest) > 0 {
		t.Errorf("%d bytes after the response: %.100q", len(rest), rest)
	}
	return resp, body
}

// waitUsageAudit waits (bounded) for the audit line (on the process's
// output) of a GET of rawURL by a client with User-Agent ua.
func waitUsageAudit(t *testing.T, p *proc, rawURL, ua string) auditEntry {
	t.Helper()
	var found auditEntry
	ok := p.out.waitFor(logTimeout, p.done, func(s string) bool {
		for line := range strings.Lines(s) {
			var a auditEntry
			if strings.HasPrefix(line, "{") && json.Unmarshal([]byte(line), &a) == nil &&
				a.Method == http.MethodGet && a.URL == rawURL && a.UserAgent == ua {
				found = a
				return true
			}
		}
		return false
	})
	if !ok {
		t.Errorf("no audit line for GET %s by %q within %v", rawURL, ua, logTimeout)
	}
	return found
}
