//go:build unix

package e2e

// Client tests: the real robotsgate binary driven by real, unmodified
// clients against origins on 127.0.0.1 (helpers in clients_helpers_test.go,
// client scripts in testdata/clients/). For every client: an allowed GET
// returns the origin's bytes unchanged, a GET under /private is refused by
// the proxy (403) and never reaches the origin, and the proxy's audit log
// records both decisions. Some clients show more: HTTP/2 inside intercepted
// tunnels, plain HTTP inside CONNECT tunnels, WebSockets, Server-Sent Events
// streamed as they come, and Crawl-delay pacing.

import (
	"bufio"
	"crypto/tls"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestClientCurl: curl with -x (plain HTTP and intercepted HTTPS over
// HTTP/1.1), --http2 (h2 negotiated inside the tunnel), and -p (plain HTTP
// inside a CONNECT tunnel).
func TestClientCurl(t *testing.T) {
	t.Parallel()
	needTool(t, "curl")
	e := startClientEnv(t)
	proxy := e.proxyURL()

	cases := []struct {
		name    string
		o       *clientOrigin
		args    []string
		version string // %{http_version} of the origin's response
		tunnel  bool   // plain HTTP inside a CONNECT tunnel
	}{
		{"http via -x", e.plain, []string{"-x", proxy}, "1.1", false},
		{"https via -x over HTTP/1.1 in the intercepted tunnel", e.tls, []string{"-x", proxy, "--cacert", e.caFile, "--http1.1"}, "1.1", false},
		{"https --http2 negotiates h2 in the intercepted tunnel", e.tls, []string{"-x", proxy, "--cacert", e.caFile, "--http2"}, "2", false},
		{"http via -p: plain HTTP inside a CONNECT tunnel", e.plain, []string{"-x", proxy, "--proxytunnel"}, "1.1", true},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			id := "curl-" + string(rune('a'+i))
			r := curl(t, clientVars(), append(slices.Clone(c.args), c.o.URL+"/data/"+id)...)
			if r.code != 0 {
				t.Fatalf("curl exit %d; stderr: %s\n%s", r.code, r.stderr, e.log())
			}
			e.wantAllowed(t, "curl", c.o, "/data/"+id, r.status, []byte(r.body))
			if r.version != c.version {
				t.Errorf("curl reports HTTP version %q for the origin's response, want %q", r.version, c.version)
			}
			r = curl(t, clientVars(), append(slices.Clone(c.args), c.o.URL+"/private/"+id)...)
			if r.code != 0 {
				t.Fatalf("curl exit %d; stderr: %s\n%s", r.code, r.stderr, e.log())
			}
			e.wantRefused(t, "curl", c.o, "/private/"+id, r.status, r.body)
			if got := r.header.Get("X-Robotsgate-Decision"); got != "disallow" {
				t.Errorf("X-Robotsgate-Decision = %q, want disallow", got)
			}
			if r.version != c.version {
				t.Errorf("curl reports HTTP version %q for the refusal, want %q", r.version, c.version)
			}
			if c.tunnel {
				e.wantPlainTunnel(t, "curl -p", c.o)
			}
		})
	}
}

// TestClientCurlSSEStreamsIncrementally: an event stream reaches curl -N
// event by event — curl prints the first event while the origin is still
// holding back the second (which it sends only once the test has seen the
// first) — over plain HTTP, and over HTTP/1.1 and HTTP/2 in an intercepted
// tunnel.
func TestClientCurlSSEStreamsIncrementally(t *testing.T) {
	t.Parallel()
	curlBin := needTool(t, "curl")
	e := startClientEnv(t)
	cases := []struct {
		name string
		o    *clientOrigin
		args []string
	}{
		{"http", e.plain, nil},
		{"https HTTP/1.1", e.tls, []string{"--cacert", e.caFile, "--http1.1"}},
		{"https HTTP/2", e.tls, []string{"--cacert", e.caFile, "--http2"}},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			id := "sse-" + string(rune('a'+i))
			args := append([]string{"-q", "-sS", "-N", "--max-time", "20", "-x", e.proxyURL()}, c.args...)
			args = append(args, c.o.URL+"/sse?id="+id)
			lines, stderr, err := streamLines(t, clientVars(), func(line string) {
				if line == "data: first" {
					c.o.open(id) // the origin may now send the second event
				}
			}, curlBin, args...)
			if err != nil {
				t.Fatalf("curl: %v; stderr: %s\n%s", err, stderr, e.log())
			}
			if !slices.Contains(lines, "data: first") || !slices.Contains(lines, "data: second") {
				t.Fatalf("curl printed %q, want both events", lines)
			}
			if c.o.timedOut(id) {
				t.Errorf("curl saw the first event only after the origin gave up waiting (%v) and ended the stream: the proxy buffered the event stream", gateWait)
			}
			e.waitAudit(t, c.o.URL+"/sse?id="+id, "allow", http.StatusOK)
		})
	}
}

// TestClientWget: wget over plain HTTP and intercepted HTTPS.
func TestClientWget(t *testing.T) {
	t.Parallel()
	needTool(t, "wget")
	e := startClientEnv(t)
	for _, c := range []struct {
		name  string
		o     *clientOrigin
		extra []string
	}{
		{"http", e.plain, nil},
		{"https", e.tls, []string{"--ca-certificate=" + e.caFile}},
	} {
		t.Run(c.name, func(t *testing.T) {
			id := "wget-" + c.name
			r := wget(t, e.p.addr, c.o.URL+"/data/"+id, c.extra...)
			if r.code != 0 {
				t.Errorf("wget exit %d; log:\n%s", r.code, r.stderr)
			}
			e.wantAllowed(t, "wget", c.o, "/data/"+id, statusFromWget(r), []byte(r.body))
			r = wget(t, e.p.addr, c.o.URL+"/private/"+id, c.extra...)
			if r.code != 8 { // 8: the server issued an error response
				t.Errorf("wget exit %d, want 8; log:\n%s", r.code, r.stderr)
			}
			e.wantRefused(t, "wget", c.o, "/private/"+id, statusFromWget(r), r.body)
		})
	}
}

// statusFromWget is the status of the last response in wget's -S log.
func statusFromWget(r wgetResult) int {
	status := 0
	for line := range strings.Lines(r.stderr) {
		f := strings.Fields(line)
		if len(f) >= 2 && strings.HasPrefix(f[0], "HTTP/") {
			if n, err := strconv.Atoi(f[1]); err == nil {
				status = n
			}
		}
	}
	return status
}

// TestClientPythonRequests: requests with HTTP_PROXY/HTTPS_PROXY and
// REQUESTS_CA_BUNDLE from the environment; three sequential requests to an
// HTTPS origin with a Crawl-delay (and slow TLS handshakes) reach it at
// least the delay apart.
func TestClientPythonRequests(t *testing.T) {
	t.Parallel()
	needPython(t, "requests")
	e := startClientEnv(t)
	env := clientVars(append(proxyVars(e.proxyURL()), "REQUESTS_CA_BUNDLE="+e.caFile)...)
	script := clientScript(t, "py_requests.py")

	t.Run("http and https", func(t *testing.T) {
		urls := []string{e.plain.URL + "/data/requests", e.plain.URL + "/private/requests", e.tls.URL + "/data/requests", e.tls.URL + "/private/requests"}
		res := runScript(t, e, env, systemPython, append([]string{script}, urls...)...)
		for _, o := range []*clientOrigin{e.plain, e.tls} {
			r := result(t, res, o.URL+"/data/requests")
			e.wantAllowed(t, "requests", o, "/data/requests", r.Status, r.body())
			r = result(t, res, o.URL+"/private/requests")
			e.wantRefused(t, "requests", o, "/private/requests", r.Status, string(r.body()))
		}
	})

	t.Run("Crawl-delay spaces sequential requests at the origin", func(t *testing.T) {
		var urls []string
		for _, n := range []string{"1", "2", "3"} {
			urls = append(urls, e.paced.URL+"/data/requests-"+n)
		}
		res := runScript(t, e, env, systemPython, append([]string{script}, urls...)...)
		for _, u := range urls {
			r := result(t, res, u)
			e.wantAllowed(t, "requests", e.paced, strings.TrimPrefix(u, e.paced.URL), r.Status, r.body())
		}
		e.wantPaced(t, "requests", len(urls))
	})
}

// TestClientPythonHTTPXNegotiatesHTTP2: httpx with http2=True, the proxy and
// SSL_CERT_FILE from the environment, negotiates HTTP/2 with the proxy's
// interception of an https:// URL.
func TestClientPythonHTTPXNegotiatesHTTP2(t *testing.T) {
	t.Parallel()
	needPython(t, "httpx", "h2")
	e := startClientEnv(t)
	env := clientVars(append(proxyVars(e.proxyURL()), "SSL_CERT_FILE="+e.caFile)...)
	urls := []string{e.plain.URL + "/data/httpx", e.plain.URL + "/private/httpx", e.tls.URL + "/data/httpx", e.tls.URL + "/private/httpx"}
	res := runScript(t, e, env, systemPython, append([]string{clientScript(t, "py_httpx.py")}, urls...)...)
	for _, c := range []struct {
		o       *clientOrigin
		version string
	}{{e.plain, "HTTP/1.1"}, {e.tls, "HTTP/2"}} {
		r := result(t, res, c.o.URL+"/data/httpx")
		e.wantAllowed(t, "httpx", c.o, "/data/httpx", r.Status, r.body())
		if r.Version != c.version {
			t.Errorf("httpx GET %s: http_version %q, want %q", r.URL, r.Version, c.version)
		}
		r = result(t, res, c.o.URL+"/private/httpx")
		e.wantRefused(t, "httpx", c.o, "/private/httpx", r.Status, string(r.body()))
		if r.Version != c.version {
			t.Errorf("httpx GET %s: http_version %q, want %q", r.URL, r.Version, c.version)
		}
	}
}

// TestClientPythonAiohttp: aiohttp GETs (http and https) and WebSocket
// echoes (ws:// and wss://) through the proxy; a WebSocket to /private is
// refused at the handshake.
func TestClientPythonAiohttp(t *testing.T) {
	t.Parallel()
	needPython(t, "aiohttp")
	e := startClientEnv(t)
	script := clientScript(t, "py_aiohttp.py")
	env := clientVars()

	t.Run("http and https", func(t *testing.T) {
		urls := []string{e.plain.URL + "/data/aiohttp", e.plain.URL + "/private/aiohttp", e.tls.URL + "/data/aiohttp", e.tls.URL + "/private/aiohttp"}
		res := runScript(t, e, env, systemPython, append([]string{script, e.proxyURL(), e.caFile, "get"}, urls...)...)
		for _, o := range []*clientOrigin{e.plain, e.tls} {
			r := result(t, res, o.URL+"/data/aiohttp")
			e.wantAllowed(t, "aiohttp", o, "/data/aiohttp", r.Status, r.body())
			r = result(t, res, o.URL+"/private/aiohttp")
			e.wantRefused(t, "aiohttp", o, "/private/aiohttp", r.Status, string(r.body()))
		}
	})

	for _, c := range []struct {
		scheme string
		o      *clientOrigin
	}{{"ws", e.plain}, {"wss", e.tls}} {
		t.Run(c.scheme+" echo", func(t *testing.T) {
			wsURL := wsURLOf(c.o, c.scheme, "/ws")
			msg := "héllo ✓ aiohttp " + c.scheme
			res := runScript(t, e, env, systemPython, script, e.proxyURL(), e.caFile, "ws", wsURL, msg)
			r := result(t, res, wsURL)
			if r.Status != 101 || r.Echo != msg {
				t.Errorf("aiohttp %s: status %d, echo %q, error %q; want 101 and the echo %q\n%s", wsURL, r.Status, r.Echo, r.Error, msg, e.log())
			}
			e.wantWebSocketAudited(t, c.o)
			wsURL = wsURLOf(c.o, c.scheme, "/private/ws")
			res = runScript(t, e, env, systemPython, script, e.proxyURL(), e.caFile, "ws", wsURL, msg)
			r = result(t, res, wsURL)
			e.wantRefused(t, "aiohttp "+c.scheme, c.o, "/private/ws", r.Status, "")
		})
	}
}

// wantWebSocketAudited checks the audit line of the WebSocket echoed by
// o's /ws: allowed, the origin reached, and the status the client received
// (101) recorded as sent.
func (e *clientEnv) wantWebSocketAudited(t *testing.T, o *clientOrigin) {
	t.Helper()
	if !o.saw("/ws") {
		t.Errorf("the origin never received the WebSocket handshake")
	}
	e.waitAudit(t, o.URL+"/ws", "allow", http.StatusSwitchingProtocols)
}

// wsURLOf is o's URL with the ws or wss scheme, and path.
func wsURLOf(o *clientOrigin, scheme, path string) string {
	return scheme + "://" + strings.TrimPrefix(strings.TrimPrefix(o.URL, "http://"), "https://") + path
}

// TestClientScrapy: a Scrapy spider (its own robots.txt support off) with
// HTTP_PROXY/HTTPS_PROXY; the proxy refuses /private, and paces the spider's
// concurrent requests so that an HTTPS origin with a Crawl-delay (and slow
// TLS handshakes) sees them at least the delay apart.
func TestClientScrapy(t *testing.T) {
	t.Parallel()
	needPython(t, "scrapy")
	e := startClientEnv(t)
	env := clientVars(proxyVars(e.proxyURL())...)
	script := clientScript(t, "scrapy_spider.py")
	spider := func(t *testing.T, urls []string) map[string]clientResult {
		return runScript(t, e, env, systemPython, "-m", "scrapy", "runspider", script, "-a", "urls="+strings.Join(urls, ","))
	}

	t.Run("http and https", func(t *testing.T) {
		urls := []string{e.plain.URL + "/data/scrapy", e.plain.URL + "/private/scrapy", e.tls.URL + "/data/scrapy", e.tls.URL + "/private/scrapy"}
		res := spider(t, urls)
		for _, o := range []*clientOrigin{e.plain, e.tls} {
			r := result(t, res, o.URL+"/data/scrapy")
			e.wantAllowed(t, "scrapy", o, "/data/scrapy", r.Status, r.body())
			r = result(t, res, o.URL+"/private/scrapy")
			e.wantRefused(t, "scrapy", o, "/private/scrapy", r.Status, string(r.body()))
		}
	})

	t.Run("Crawl-delay spaces concurrent requests at the origin", func(t *testing.T) {
		var urls []string
		for _, n := range []string{"1", "2", "3", "4"} {
			urls = append(urls, e.paced.URL+"/data/scrapy-"+n)
		}
		res := spider(t, urls)
		for _, u := range urls {
			r := result(t, res, u)
			e.wantAllowed(t, "scrapy", e.paced, strings.TrimPrefix(u, e.paced.URL), r.Status, r.body())
		}
		e.wantPaced(t, "scrapy", len(urls))
	})
}

// TestClientGoHTTP2: Go's net/http client with ForceAttemptHTTP2 speaks
// HTTP/2 with the proxy's interception (http.ProxyURL: ProxyFromEnvironment
// never proxies loopback addresses), and an event stream reaches it event by
// event over HTTP/2.
func TestClientGoHTTP2(t *testing.T) {
	t.Parallel()
	e := startClientEnv(t)
	tr := &http.Transport{
		Proxy:                 http.ProxyURL(&url.URL{Scheme: "http", Host: e.p.addr}),
		TLSClientConfig:       &tls.Config{RootCAs: certPool(t, e.caFile)},
		ForceAttemptHTTP2:     true,
		ResponseHeaderTimeout: requestTimeout,
	}
	t.Cleanup(tr.CloseIdleConnections)
	c := &http.Client{Transport: tr, Timeout: requestTimeout}
	fetch := func(t *testing.T, rawURL string) (*http.Response, []byte) {
		t.Helper()
		resp, err := c.Get(rawURL)
		if err != nil {
			t.Fatalf("GET %s: %v\n%s", rawURL, err, e.log())
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("GET %s: reading the body: %v", rawURL, err)
		}
		return resp, body
	}

	t.Run("https over HTTP/2", func(t *testing.T) {
		resp, body := fetch(t, e.tls.URL+"/data/go")
		e.wantAllowed(t, "Go", e.tls, "/data/go", resp.StatusCode, body)
		if resp.ProtoMajor != 2 {
			t.Errorf("response protocol %s, want HTTP/2 inside the intercepted tunnel", resp.Proto)
		}
		resp, body = fetch(t, e.tls.URL+"/private/go")
		e.wantRefused(t, "Go", e.tls, "/private/go", resp.StatusCode, string(body))
		if resp.ProtoMajor != 2 {
			t.Errorf("refusal protocol %s, want HTTP/2", resp.Proto)
		}
	})

	t.Run("http", func(t *testing.T) {
		resp, body := fetch(t, e.plain.URL+"/data/go")
		e.wantAllowed(t, "Go", e.plain, "/data/go", resp.StatusCode, body)
		resp, body = fetch(t, e.plain.URL+"/private/go")
		e.wantRefused(t, "Go", e.plain, "/private/go", resp.StatusCode, string(body))
	})

	t.Run("SSE streams incrementally over HTTP/2", func(t *testing.T) {
		const id = "go-h2"
		resp, err := c.Get(e.tls.URL + "/sse?id=" + id)
		if err != nil {
			t.Fatalf("GET /sse: %v\n%s", err, e.log())
		}
		defer resp.Body.Close()
		if resp.ProtoMajor != 2 || resp.StatusCode != 200 {
			t.Errorf("GET /sse: %s %s, want HTTP/2 200", resp.Proto, resp.Status)
		}
		var lines []string
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			lines = append(lines, sc.Text())
			if sc.Text() == "data: first" {
				e.tls.open(id)
			}
		}
		if err := sc.Err(); err != nil {
			t.Fatalf("reading the event stream: %v (got %q)", err, lines)
		}
		if !slices.Contains(lines, "data: first") || !slices.Contains(lines, "data: second") {
			t.Fatalf("got %q, want both events", lines)
		}
		if e.tls.timedOut(id) {
			t.Errorf("the first event arrived only after the origin gave up waiting (%v): the proxy buffered the event stream", gateWait)
		}
	})
}

// TestClientNodeUndici: undici's fetch with its ProxyAgent (https:// and
// http:// both through CONNECT tunnels) and NODE_EXTRA_CA_CERTS.
func TestClientNodeUndici(t *testing.T) {
	t.Parallel()
	nodePath := needNode(t, "undici")
	e := startClientEnv(t)
	for _, agent := range []string{"ProxyAgent", "EnvHttpProxyAgent"} {
		t.Run(agent, func(t *testing.T) {
			env := clientVars(nodePath, "NODE_EXTRA_CA_CERTS="+e.caFile)
			proxyArg, id := e.proxyURL(), "undici"
			if agent == "EnvHttpProxyAgent" {
				env = append(env, "HTTP_PROXY="+e.proxyURL(), "HTTPS_PROXY="+e.proxyURL())
				proxyArg, id = "env", "undici-env"
			}
			urls := []string{e.plain.URL + "/data/" + id, e.plain.URL + "/private/" + id, e.tls.URL + "/data/" + id, e.tls.URL + "/private/" + id}
			res := runScript(t, e, env, "node", append([]string{clientScript(t, "node_undici.js"), proxyArg}, urls...)...)
			for _, o := range []*clientOrigin{e.plain, e.tls} {
				r := result(t, res, o.URL+"/data/"+id)
				e.wantAllowed(t, id, o, "/data/"+id, r.Status, r.body())
				r = result(t, res, o.URL+"/private/"+id)
				e.wantRefused(t, id, o, "/private/"+id, r.Status, string(r.body()))
			}
		})
	}
	e.wantPlainTunnel(t, "undici", e.plain)
}

// TestClientNodeWebSocket: the ws package through https-proxy-agent (a
// CONNECT tunnel for ws:// and wss:// alike) echoes through the proxy; a
// WebSocket to /private is refused at the handshake.
func TestClientNodeWebSocket(t *testing.T) {
	t.Parallel()
	nodePath := needNode(t, "ws", "https-proxy-agent")
	e := startClientEnv(t)
	env := clientVars(nodePath, "NODE_EXTRA_CA_CERTS="+e.caFile)
	script := clientScript(t, "node_ws.js")
	for _, c := range []struct {
		scheme string
		o      *clientOrigin
	}{{"ws", e.plain}, {"wss", e.tls}} {
		t.Run(c.scheme, func(t *testing.T) {
			msg := "héllo ✓ node " + c.scheme
			wsURL := wsURLOf(c.o, c.scheme, "/ws")
			r := result(t, runScript(t, e, env, "node", script, e.proxyURL(), wsURL, msg), wsURL)
			if r.Status != 101 || r.Echo != msg {
				t.Errorf("ws %s: status %d, echo %q, error %q; want 101 and the echo %q\n%s", wsURL, r.Status, r.Echo, r.Error, msg, e.log())
			}
			e.wantWebSocketAudited(t, c.o)
			if c.scheme == "ws" {
				e.wantPlainTunnel(t, "ws", c.o)
			}
			wsURL = wsURLOf(c.o, c.scheme, "/private/ws")
			r = result(t, runScript(t, e, env, "node", script, e.proxyURL(), wsURL, msg), wsURL)
			e.wantRefused(t, "ws "+c.scheme, c.o, "/private/ws", r.Status, string(r.body()))
			if r.Decision != "disallow" {
				t.Errorf("ws %s: X-Robotsgate-Decision %q, want disallow", wsURL, r.Decision)
			}
		})
	}
}

// TestClientChromium: headless Chromium with --proxy-server, trusting the
// interception CA through its NSS database: pages over http and https, the
// proxy's 403 page for /private, and WebSocket echoes (ws:// and wss://)
// from a page's script.
func TestClientChromium(t *testing.T) {
	t.Parallel()
	needTool(t, "chromium")
	needTool(t, "certutil")
	e := startClientEnv(t)
	for _, c := range []struct {
		scheme, ws string
		o          *clientOrigin
	}{{"http", "ws", e.plain}, {"https", "wss", e.tls}} {
		t.Run(c.scheme+" page", func(t *testing.T) {
			dom := chromium(t, e, c.o.URL+"/page/chromium")
			text, _, _ := strings.Cut(after(dom, `<p id="text">`), "</p>")
			if text != clientPageText {
				t.Errorf("the page's text in Chromium differs from the origin's; DOM:\n%.2000s\n%s", dom, e.log())
			}
			e.waitAudit(t, c.o.URL+"/page/chromium", "allow", http.StatusOK)
		})
		t.Run(c.scheme+" /private refused", func(t *testing.T) {
			dom := chromium(t, e, c.o.URL+"/private/chromium")
			for _, want := range []string{"403 Forbidden", "robots.txt", "Disallow: /private (line 2)"} {
				if !strings.Contains(dom, want) {
					t.Errorf("Chromium's page for /private does not contain %q; DOM:\n%.2000s", want, dom)
				}
			}
			if c.o.saw("/private/chromium") {
				t.Errorf("the origin received /private/chromium")
			}
			e.waitAudit(t, c.o.URL+"/private/chromium", "disallow", http.StatusForbidden)
		})
		t.Run(c.ws+" echo", func(t *testing.T) {
			msg := "héllo ✓ chromium " + c.ws
			id := "chromium-" + c.ws
			dom := chromium(t, e, c.o.URL+"/wspage?id="+id+"&path=/ws&msg="+url.QueryEscape(msg))
			if want := `<p id="echo">echo: ` + msg + `</p>`; !strings.Contains(dom, want) {
				t.Errorf("Chromium's WebSocket page: want %s; DOM:\n%.2000s\n%s", want, dom, e.log())
			}
			if c.o.timedOut(id) {
				t.Errorf("the page never finished its WebSocket script (the origin waited %v)", gateWait)
			}
			e.wantWebSocketAudited(t, c.o)
			if c.ws == "ws" { // Chromium sends WebSockets through CONNECT, ws:// too
				e.wantPlainTunnel(t, "Chromium", c.o)
			}
		})
		t.Run(c.ws+" /private refused", func(t *testing.T) {
			id := "chromium-private-" + c.ws
			dom := chromium(t, e, c.o.URL+"/wspage?id="+id+"&path=/private/ws&msg=x")
			if strings.Contains(dom, `<p id="echo">echo:`) || strings.Contains(dom, `<p id="echo">waiting`) {
				t.Errorf("Chromium's WebSocket to /private/ws: want an error; DOM:\n%.2000s", dom)
			}
			if c.o.saw("/private/ws") {
				t.Errorf("the origin received /private/ws")
			}
			e.waitAudit(t, c.o.URL+"/private/ws", "disallow", http.StatusForbidden)
		})
	}
}

// after is s after the first sep, or "".
func after(s, sep string) string {
	_, rest, _ := strings.Cut(s, sep)
	return rest
}
