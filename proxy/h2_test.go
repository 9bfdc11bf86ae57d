package proxy

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
)

// h2Client returns a client that speaks HTTP/2 to the proxy's
// interception, over one TLS connection per origin.
func (p *testProxy) h2Client() (*http.Client, *atomic.Int64) {
	u, _ := url.Parse("http://" + p.addr)
	var conns atomic.Int64
	tr := &http.Transport{
		Proxy:             http.ProxyURL(u),
		TLSClientConfig:   &tls.Config{RootCAs: p.ca.CertPool()},
		ForceAttemptHTTP2: true,
		OnProxyConnectResponse: func(context.Context, *url.URL, *http.Request, *http.Response) error {
			conns.Add(1)
			return nil
		},
	}
	return &http.Client{Transport: tr}, &conns
}

// Inside an intercepted tunnel the client gets HTTP/2 when it offers it,
// and every stream is judged on its own: a refusal on one stream leaves the
// others, on the same connection, answered.
func TestHTTP2StreamsAreJudgedOneByOne(t *testing.T) {
	o := startOrigin(t, "127.0.0.1", true, testRobots, 0)
	p := startProxy(t, testConfig(t, o.Certificate()))
	c, conns := p.h2Client()
	type result struct {
		target string
		status int
		proto  int
		body   string
	}
	// One request first: concurrent first requests would each dial.
	if resp, err := c.Get(o.URL + "/first"); err != nil || resp.ProtoMajor != 2 {
		t.Fatalf("first request: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	targets := []string{"/a", "/private/1", "/b", "/private/2", "/c", "/private/ok"}
	results := make(chan result, len(targets))
	for _, target := range targets {
		go func() {
			resp, err := c.Get(o.URL + target)
			if err != nil {
				results <- result{target: target}
				return
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			results <- result{target, resp.StatusCode, resp.ProtoMajor, string(body)}
		}()
	}
	for range targets {
		r := <-results
		want := 200
		if strings.HasPrefix(r.target, "/private/") && r.target != "/private/ok" {
			want = 403
		}
		if r.status != want || r.proto != 2 {
			t.Errorf("%s: %d over HTTP/%d, want %d over HTTP/2 (%q)", r.target, r.status, r.proto, want, r.body)
		}
		if want == 200 && r.body != "target="+r.target {
			t.Errorf("%s: body %q", r.target, r.body)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("%d CONNECTs for %d requests, want one HTTP/2 connection", n, len(targets))
	}
	if o.saw("/private/1") || o.saw("/private/2") {
		t.Error("a refused stream reached the origin")
	}
}

// Pacing holds a stream, not the connection: while one stream waits for
// its Crawl-delay slot, another stream on the same connection is answered;
// and a client that resets the held stream releases it.
func TestHTTP2PacingHoldsOneStream(t *testing.T) {
	o := startTimedOriginOn(t, "127.0.0.1", "User-agent: SlowBot\nCrawl-delay: 30\n\nUser-agent: *\nAllow: /\n", true)
	p := startProxy(t, testConfig(t, o.Certificate()))
	c, conns := p.h2Client()
	get := func(ctx context.Context, target, ua string) (*http.Response, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, o.URL+target, nil)
		req.Header.Set("User-Agent", ua)
		return c.Do(req)
	}
	resp, err := get(t.Context(), "/first", "SlowBot/1")
	if err != nil || resp.StatusCode != 200 || resp.ProtoMajor != 2 {
		t.Fatalf("first SlowBot request: %v %v", resp, err)
	}
	resp.Body.Close()

	ctx, cancel := context.WithCancel(t.Context())
	held := make(chan error, 1)
	go func() {
		_, err := get(ctx, "/second", "SlowBot/1")
		held <- err
	}()
	waitForHeld(t, p, 1)

	resp, err = get(t.Context(), "/other", "OtherBot/1")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("a stream beside the held one: %v %v", resp, err)
	}
	resp.Body.Close()
	select {
	case err := <-held:
		t.Fatalf("the held stream ended (%v) before its slot", err)
	default:
	}

	cancel()
	if err := <-held; !errors.Is(err, context.Canceled) {
		t.Errorf("held stream after the client reset it: %v", err)
	}
	waitForHeld(t, p, 0)
	if n := len(o.of("SlowBot/1")); n != 1 {
		t.Errorf("the origin saw %d SlowBot requests, want 1 (the reset one never left)", n)
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("%d CONNECTs, want one HTTP/2 connection", n)
	}
}

// A tunnel that carries plain HTTP (undici and curl -p tunnel http:// URLs
// through CONNECT) is served as http://host:port: every request in it is
// judged, and a Host naming another origin is 421.
func TestPlainHTTPInsideATunnel(t *testing.T) {
	o := startOrigin(t, "127.0.0.2", false, testRobots, 0)
	p := startProxy(t, testConfig(t, nil))
	host := strings.TrimPrefix(o.URL, "http://")
	c := dialProxy(t, p)
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", host, host)
	if resp, err := http.ReadResponse(c.r, nil); err != nil || resp.StatusCode != 200 {
		t.Fatalf("CONNECT: %v %v", resp, err)
	}
	for _, tt := range []struct {
		target, host string
		status       int
	}{
		{"/a", host, 200},
		{"/private/x", host, 403},
		{"/b", "other.example", 421},
		{"/c?q=1", host, 200},
	} {
		resp, body := c.roundTrip(t, fmt.Sprintf("GET %s HTTP/1.1\r\nHost: %s\r\n\r\n", tt.target, tt.host))
		if resp.StatusCode != tt.status {
			t.Errorf("%s (Host %s): %d %q, want %d", tt.target, tt.host, resp.StatusCode, body, tt.status)
		}
		if tt.status == 200 && body != "target="+tt.target {
			t.Errorf("%s: body %q", tt.target, body)
		}
	}
	if o.saw("/private/x") || o.saw("/b") {
		t.Errorf("the origin saw a refused request: %v", o.seen())
	}
}

// Over HTTP/2 a body the origin cuts short resets that stream only: the
// client sees an error, not a complete body, and the connection carries
// the next request.
func TestHTTP2TruncatedBodyResetsOnlyItsStream(t *testing.T) {
	o := startOrigin(t, "127.0.0.1", true, testRobots, 0)
	inner := o.Config.Handler
	o.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/cut" {
			inner.ServeHTTP(w, r)
			return
		}
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nhello")
		conn.Close()
	})
	p := startProxy(t, testConfig(t, o.Certificate()))
	c, conns := p.h2Client()
	resp, err := c.Get(o.URL + "/cut")
	if err == nil {
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err == nil {
			t.Fatalf("HTTP/%d body %q ended cleanly", resp.ProtoMajor, body)
		}
	}
	resp, err = c.Get(o.URL + "/after")
	if err != nil || resp.StatusCode != 200 || resp.ProtoMajor != 2 {
		t.Fatalf("the next request: %v %v", resp, err)
	}
	resp.Body.Close()
	if n := conns.Load(); n != 1 {
		t.Errorf("%d CONNECTs: the aborted stream took its connection down", n)
	}
}
