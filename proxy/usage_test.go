package proxy

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/robotsgate/robotsgate/config"
)

// bodyMarker is in every body the signals origin sends: it must never
// reach a client whose response was withheld.
const bodyMarker = "ORIGIN-BODY-MARKER"

// signalPage is one response of the signals origin.
type signalPage struct {
	header []string // name, value, ...
	body   []byte
}

func htmlPage(head string, bodyLen int) []byte {
	b := []byte("<!doctype html><html><head><title>" + bodyMarker + "</title>" + head + "</head><body>")
	for len(b) < bodyLen {
		b = append(b, "<p>"+bodyMarker+" filler text of the page</p>\n"...)
	}
	return append(b, "</body></html>"...)
}

func compress(t testing.TB, coding string, data []byte) []byte {
	var buf bytes.Buffer
	var w io.WriteCloser
	switch coding {
	case "gzip":
		w = gzip.NewWriter(&buf)
	case "zlib":
		w = zlib.NewWriter(&buf)
	case "flate":
		w, _ = flate.NewWriter(&buf, flate.DefaultCompression)
	}
	w.Write(data)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// signalPages are the responses the tests ask for, by path.
func signalPages(t testing.TB) map[string]signalPage {
	text := []byte("text " + bodyMarker + "\n")
	noai := htmlPage(`<meta name="robots" content="noindex, noai">`, 4<<10)
	// The scan reads the first 64 KiB (a literal: the documented figure):
	// a tag that ends a little before is found, one that starts after is not.
	within := htmlPage(`<script>`+strings.Repeat(" ", 64<<10-256)+`</script><meta name="robots" content="noai">`, 1<<10)
	late := htmlPage(`<script>`+strings.Repeat(" ", 64<<10)+`</script><meta name="robots" content="noai">`, 1<<10)
	return map[string]signalPage{
		"/plain":        {[]string{"Content-Type", "text/plain"}, text},
		"/tdm":          {[]string{"tdm-reservation", "1", "tdm-policy", "https://example.org/tdm-policy.json"}, text},
		"/tdm-0":        {[]string{"tdm-reservation", "0"}, text},
		"/content-use":  {[]string{"Content-Usage", "search=y, train-ai=n"}, text},
		"/content-ok":   {[]string{"Content-Usage", "train-ai=y"}, text},
		"/noai":         {[]string{"X-Robots-Tag", "noindex", "X-Robots-Tag", "noarchive, noai"}, text},
		"/scoped":       {[]string{"X-Robots-Tag", "TrainBot: noai"}, text},
		"/other-scope":  {[]string{"X-Robots-Tag", "OtherBot: noai"}, text},
		"/image":        {[]string{"Content-Type", "image/png", "X-Robots-Tag", "noimageai"}, text},
		"/not-image":    {[]string{"Content-Type", "text/html", "X-Robots-Tag", "noimageai"}, htmlPage("", 1<<10)},
		"/meta":         {[]string{"Content-Type", "text/html; charset=utf-8"}, noai},
		"/meta-tdm":     {[]string{"Content-Type", "text/html"}, htmlPage(`<meta name="tdm-reservation" content="1"><meta name="tdm-policy" content="https://example.org/p">`, 4<<10)},
		"/meta-agent":   {[]string{"Content-Type", "text/html"}, htmlPage(`<meta name="trainbot" content="noai">`, 4<<10)},
		"/meta-comment": {[]string{"Content-Type", "text/html"}, htmlPage(`<!-- <meta name="robots" content="noai"> -->`, 4<<10)},
		"/meta-within":  {[]string{"Content-Type", "text/html"}, within},
		"/meta-late":    {[]string{"Content-Type", "text/html"}, late},
		"/meta-gzip":    {[]string{"Content-Type", "text/html", "Content-Encoding", "gzip"}, compress(t, "gzip", noai)},
		"/meta-deflate": {[]string{"Content-Type", "text/html", "Content-Encoding", "deflate"}, compress(t, "zlib", noai)},
		"/meta-raw":     {[]string{"Content-Type", "text/html", "Content-Encoding", "deflate"}, compress(t, "flate", noai)},
		"/meta-br":      {[]string{"Content-Type", "text/html", "Content-Encoding", "br"}, append([]byte("\x1b\x00\x00"), noai...)},
		"/gzip-clean":   {[]string{"Content-Type", "text/html", "Content-Encoding", "gzip"}, compress(t, "gzip", htmlPage("", 200<<10))},
		"/big":          {[]string{"Content-Type", "text/html"}, htmlPage(`<meta name="viewport" content="width=device-width">`, 200<<10)},
		"/xhtml":        {[]string{"Content-Type", "application/xhtml+xml"}, noai},
		"/untyped":      {[]string{"Content-Type", "-"}, noai},
		// Sent as brotli to a request that accepts br, else as gzip.
		"/negotiated": {[]string{"Vary", "Accept-Encoding"}, noai},
	}
}

// startSignalOrigin serves signalPages on ip, robots.txt allowing all.
func startSignalOrigin(t testing.TB, ip string, tlsOn bool) *httptest.Server {
	t.Helper()
	pages := signalPages(t)
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
		body := pg.body
		for i := 0; i+1 < len(pg.header); i += 2 {
			if pg.header[i+1] == "-" { // sent without the field (net/http would sniff a Content-Type)
				w.Header()[pg.header[i]] = nil
				continue
			}
			w.Header().Add(pg.header[i], pg.header[i+1])
		}
		if r.URL.Path == "/negotiated" {
			w.Header().Set("Content-Type", "text/html")
			if strings.Contains(r.Header.Get("Accept-Encoding"), "br") {
				w.Header().Set("Content-Encoding", "br")
				body = append([]byte("\x1b\x00\x00"), body...) // not real brotli: no scan could read it
			} else {
				w.Header().Set("Content-Encoding", "gzip")
				body = compress(t, "gzip", body)
			}
		}
		w.Header().Set("Content-Length", fmt.Sprint(len(body)))
		w.Write(body)
	})
	ln, err := net.Listen("tcp", ip+":0")
	if err != nil {
		t.Fatal(err)
	}
	o := httptest.NewUnstartedServer(h)
	o.Listener.Close()
	o.Listener = ln
	if tlsOn {
		o.StartTLS()
	} else {
		o.Start()
	}
	t.Cleanup(o.Close)
	return o
}

// rawGet fetches u through c as a crawler would that keeps bodies as sent
// (no transparent decompression).
func rawGet(t *testing.T, c *http.Client, method, u, ua string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest(method, u, nil)
	req.Header.Set("User-Agent", ua)
	req.Header.Set("Accept-Encoding", "gzip, deflate, br")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, u, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the body: %v", method, u, err)
	}
	return resp, body
}

func TestResponseSignals(t *testing.T) {
	o := startSignalOrigin(t, "127.0.0.2", false)
	tlsOrigin := startSignalOrigin(t, "127.0.0.1", true) // the httptest certificate names 127.0.0.1
	pages := signalPages(t)
	newProxy := func(purposes []string, scan bool) *testProxy {
		cfg := testConfig(t, tlsOrigin.Certificate())
		cfg.Clients = []config.Client{{CIDR: "127.0.0.0/8", Mode: config.ModeEnforce, Purposes: purposes}}
		cfg.Usage.ScanHTML = scan
		cfg.Log.Audit = filepath.Join(t.TempDir(), "audit.log")
		return startProxy(t, cfg)
	}
	trainer := newProxy([]string{"train-ai"}, true)
	trainerNoScan := newProxy([]string{"train-ai"}, false)
	searcher := newProxy([]string{"search"}, true)
	plain := newProxy(nil, true)
	const ua = "Mozilla/5.0 (compatible; TrainBot/1.0)"

	const unknown = "unknown: "
	tests := []struct {
		path   string
		signal string // what the refusal names; "" when train-ai gets the page; unknown+why: 503 usage-unknown
	}{
		{"/plain", ""},
		{"/tdm", "tdm-reservation: 1 refuses the purpose train-ai (tdm-policy https://example.org/tdm-policy.json)"},
		{"/tdm-0", ""},
		{"/content-use", "Content-Usage: search=y, train-ai=n (train-ai=n) refuses the purpose train-ai"},
		{"/content-ok", ""},
		{"/noai", "X-Robots-Tag: noarchive, noai (noai) refuses the purpose train-ai"},
		{"/scoped", "X-Robots-Tag: TrainBot: noai (noai) refuses the purpose train-ai"},
		{"/other-scope", ""},
		{"/image", "X-Robots-Tag: noimageai refuses the purpose train-ai"},
		{"/not-image", ""},
		{"/meta", `<meta name="robots" content="noindex, noai"> (noai) refuses the purpose train-ai`},
		{"/meta-tdm", `<meta name="tdm-reservation" content="1"> refuses the purpose train-ai (tdm-policy https://example.org/p)`},
		{"/meta-agent", `<meta name="trainbot" content="noai"> refuses the purpose train-ai`},
		{"/meta-comment", ""},
		{"/meta-within", `<meta name="robots" content="noai"> refuses the purpose train-ai`},
		// The head does not end within the limit: what the page says is
		// unknown (usage.on_unknown: refuse), not "nothing".
		{"/meta-late", unknown + "the head does not end within the first 64 KiB"},
		{"/meta-gzip", `<meta name="robots" content="noindex, noai"> (noai) refuses the purpose train-ai`},
		{"/meta-deflate", `<meta name="robots" content="noindex, noai"> (noai) refuses the purpose train-ai`},
		{"/meta-raw", `<meta name="robots" content="noindex, noai"> (noai) refuses the purpose train-ai`},
		{"/meta-br", unknown + "Content-Encoding br is not decoded for the scan"},
		{"/gzip-clean", ""},
		{"/big", ""},
		{"/xhtml", `<meta name="robots" content="noindex, noai"> (noai) refuses the purpose train-ai`},
		{"/untyped", `<meta name="robots" content="noindex, noai"> (noai) refuses the purpose train-ai`},
		// The client asks for br; robotsgate asks the origin for what its
		// scan decodes (gzip, deflate), so the page is read.
		{"/negotiated", `<meta name="robots" content="noindex, noai"> (noai) refuses the purpose train-ai`},
	}
	for _, origin := range []*httptest.Server{o, tlsOrigin} {
		for _, tt := range tests {
			u := origin.URL + tt.path
			want := pages[tt.path].body
			t.Run(strings.TrimPrefix(u, "http"), func(t *testing.T) {
				resp, body := rawGet(t, trainer.client(), http.MethodGet, u, ua)
				why, isUnknown := strings.CutPrefix(tt.signal, unknown)
				switch {
				case isUnknown:
					checkRefusal(t, resp, 503, "usage-unknown", "http_request_denied")
					if ra := resp.Header.Get("Retry-After"); ra != "300" { // the documented figure
						t.Errorf("train-ai: Retry-After %q, want 300", ra)
					}
					if !strings.Contains(string(body), why) || bytes.Contains(body, []byte(bodyMarker)) {
						t.Errorf("train-ai: the refusal does not name %q, or carries the body:\n%s", why, body)
					}
				case tt.signal == "":
					if resp.StatusCode != 200 || !bytes.Equal(body, want) {
						t.Errorf("train-ai: %d, %d bytes (%.100q); want the origin's 200 and %d bytes", resp.StatusCode, len(body), body, len(want))
					}
				default:
					checkRefusal(t, resp, 403, "usage-denied", "http_request_denied")
					if !strings.Contains(string(body), tt.signal) {
						t.Errorf("train-ai: the refusal does not name %q:\n%s", tt.signal, body)
					}
					if bytes.Contains(body, []byte(bodyMarker)) || resp.Header.Get("X-Robots-Tag") != "" || resp.Header.Get("Content-Encoding") != "" {
						t.Errorf("train-ai: the refusal carries the origin's body or headers: %v\n%s", resp.Header, body)
					}
				}
				// A client without purposes, or with one no signal here
				// concerns, gets the origin's response as it was sent
				// (the search client too reads the head, for RSL <link>s:
				// an unreadable one is unknown to it as well).
				for name, p := range map[string]*testProxy{"no purposes": plain, "search": searcher} {
					resp, body := rawGet(t, p.client(), http.MethodGet, u, ua)
					if isUnknown && name == "search" {
						checkRefusal(t, resp, 503, "usage-unknown", "http_request_denied")
						continue
					}
					if tt.path == "/negotiated" && name == "no purposes" {
						want = append([]byte("\x1b\x00\x00"), pages[tt.path].body...) // what it asked for, untouched
					}
					if tt.path == "/negotiated" && name == "search" {
						want = compress(t, "gzip", pages[tt.path].body)
					}
					if resp.StatusCode != 200 || !bytes.Equal(body, want) {
						t.Errorf("%s: %d, %d bytes (%.100q); want the origin's 200 and %d bytes", name, resp.StatusCode, len(body), body, len(want))
					}
				}
				// Meta tags are read only with usage.scan_html.
				resp, _ = rawGet(t, trainerNoScan.client(), http.MethodGet, u, ua)
				if refused := resp.StatusCode == 403; refused != (tt.signal != "" && !isUnknown && !strings.HasPrefix(tt.signal, "<meta")) {
					t.Errorf("scan_html off: %d", resp.StatusCode)
				}
			})
		}
	}

	// The audit record: the origin was asked, its body withheld.
	byURL := map[string]map[string]any{}
	for deadline := time.Now().Add(5 * time.Second); len(byURL) < 2*len(tests) && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		for _, r := range readAudit(t, trainer.srv.settings().cfg.Log.Audit) {
			if r["method"] == http.MethodGet { // not the tunnels' CONNECTs
				byURL[r["url"].(string)] = r
			}
		}
	}
	if len(byURL) != 2*len(tests) {
		t.Fatalf("audit records of %d URLs, want %d", len(byURL), 2*len(tests))
	}
	r := byURL[o.URL+"/noai"]
	if r["decision"] != "usage-denied" || r["upstream_status"] != 200.0 || r["status"] != 403.0 || r["enforced"] != true ||
		!strings.Contains(r["note"].(string), "the origin's response (200) was withheld: X-Robots-Tag: noarchive, noai (noai) refuses the purpose train-ai") {
		t.Errorf("audit record of a withheld response: %v", r)
	}
	if r := byURL[o.URL+"/meta-br"]; r["decision"] != "usage-unknown" || r["upstream_status"] != 200.0 ||
		!strings.Contains(r["note"].(string), "Content-Encoding br is not decoded for the scan") {
		t.Errorf("audit record of a br page: %v", r)
	}
	if r := byURL[o.URL+"/plain"]; r["decision"] != "allow" || r["note"] != "" || r["upstream_status"] != 200.0 {
		t.Errorf("audit record of an allowed page: %v", r)
	}
	if logs := trainer.logText(); !strings.Contains(logs, "response refused") {
		t.Errorf("no log line for the withheld responses:\n%s", logs)
	}
}

func TestResponseSignalsHeadAndJSON(t *testing.T) {
	o := startSignalOrigin(t, "127.0.0.2", false)
	cfg := testConfig(t, nil)
	cfg.Clients = []config.Client{{CIDR: "127.0.0.0/8", Mode: config.ModeEnforce, Purposes: []string{"tdm"}}}
	p := startProxy(t, cfg)
	resp, _ := rawGet(t, p.client(), http.MethodHead, o.URL+"/tdm", "Bot")
	checkRefusal(t, resp, 403, "usage-denied", "http_request_denied")
	resp, body := get(t, p.client(), o.URL+"/noai", "Accept", "application/json", "User-Agent", "Bot/1")
	checkRefusal(t, resp, 403, "usage-denied", "http_request_denied")
	want := `{"decision":"usage-denied","status":403,"message":"The origin's response was withheld: X-Robots-Tag: noarchive, noai (noai) refuses the purpose tdm.","url":"` +
		o.URL + `/noai","user_agent":"Bot/1","client_rule":"127.0.0.0/8","purposes":["tdm"]}` + "\n"
	if body != want {
		t.Errorf("JSON refusal\n%s\nwant\n%s", body, want)
	}
}

// A monitored client gets the page; the audit says it would be refused.
func TestResponseSignalsMonitorMode(t *testing.T) {
	o := startSignalOrigin(t, "127.0.0.2", false)
	cfg := testConfig(t, nil)
	cfg.Clients = []config.Client{{CIDR: "127.0.0.0/8", Mode: config.ModeMonitor, Purposes: []string{"train-ai"}}}
	cfg.Usage.ScanHTML = true
	cfg.Log.Audit = filepath.Join(t.TempDir(), "audit.log")
	p := startProxy(t, cfg)
	resp, body := rawGet(t, p.client(), http.MethodGet, o.URL+"/meta", "Bot")
	if resp.StatusCode != 200 || !bytes.Equal(body, signalPages(t)["/meta"].body) {
		t.Fatalf("monitor mode: %d %.80q", resp.StatusCode, body)
	}
	r := waitAudit(t, cfg.Log.Audit, 1)[0]
	if r["decision"] != "usage-denied" || r["enforced"] != false || r["status"] != 200.0 || !strings.Contains(r["note"].(string), "monitor mode: delivered") {
		t.Errorf("audit record: %v", r)
	}
}

// A refused response's body is not read to its end: the relay closes it,
// and with it the origin's connection, and the client gets none of it.
func TestWithheldResponseClosesTheOrigin(t *testing.T) {
	closed := make(chan error, 1)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			io.WriteString(w, "User-agent: *\nAllow: /\n")
			return
		}
		w.Header().Set("X-Robots-Tag", "noai")
		chunk := bytes.Repeat([]byte(bodyMarker), 1<<10)
		for i := 0; i < 10000; i++ { // 180 MB, far more than any buffer holds
			if _, err := w.Write(chunk); err != nil {
				closed <- err
				return
			}
		}
		closed <- nil
	})
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Fatal(err)
	}
	o := httptest.NewUnstartedServer(h)
	o.Listener.Close()
	o.Listener = ln
	o.Start()
	defer o.Close()
	cfg := testConfig(t, nil)
	cfg.Clients = []config.Client{{CIDR: "127.0.0.0/8", Mode: config.ModeEnforce, Purposes: []string{"train-ai"}}}
	p := startProxy(t, cfg)
	resp, body := rawGet(t, p.client(), http.MethodGet, o.URL+"/stream", "Bot")
	checkRefusal(t, resp, 403, "usage-denied", "http_request_denied")
	if bytes.Contains(body, []byte(bodyMarker)) {
		t.Errorf("the client got the origin's body:\n%.200s", body)
	}
	select {
	case err := <-closed:
		if err == nil {
			t.Error("the origin wrote its whole body: the relay read it")
		}
	case <-time.After(10 * time.Second):
		t.Error("the origin is still writing 10 s after the refusal: its connection was not closed")
	}
}
