package resolver

import (
	"crypto/sha256"
	"encoding/hex"
	"io"

	"github.com/robotsgate/robotsgate/internal/testclock"

	"bytes"
	"compress/gzip"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/robotsgate/robotsgate/egress"
	"github.com/robotsgate/robotsgate/origin"
)

// newClock returns the tests' settable clock, so freshness and backoff can
// be tested without waiting.
func newClock() *testclock.Clock {
	return testclock.New(time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC))
}

// testOrigin is a real HTTP(S) server on a loopback address that counts the
// requests it gets.
type testOrigin struct {
	*httptest.Server
	hits   atomic.Int64
	origin origin.Origin
}

func startOrigin(t *testing.T, ip string, tlsOn bool, h http.HandlerFunc) *testOrigin {
	t.Helper()
	ln, err := net.Listen("tcp", ip+":0")
	if err != nil {
		t.Fatalf("listen on %s: %v", ip, err)
	}
	o := &testOrigin{}
	o.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o.hits.Add(1)
		h(w, r)
	}))
	o.Server.Listener.Close()
	o.Server.Listener = ln
	if tlsOn {
		o.StartTLS()
	} else {
		o.Start()
	}
	t.Cleanup(o.Close)
	o.origin, err = origin.Parse(o.URL)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func serveRobots(body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, body)
	}
}

func serveStatus(code int, header ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		w.WriteHeader(code)
	}
}

// testGuard allows the loopback addresses the tests' origins use, and no
// other private address: 127.0.0.1 in particular stays forbidden.
func testGuard() *egress.Guard {
	return &egress.Guard{BlockPrivate: true, AllowNetworks: []netip.Prefix{
		netip.MustParsePrefix("127.0.0.2/32"), netip.MustParsePrefix("127.0.0.3/32"),
	}}
}

func newResolver(t *testing.T, cfg Config) *Resolver {
	t.Helper()
	if cfg.DialContext == nil {
		cfg.DialContext = testGuard().DialContext
	}
	if cfg.FetchTimeout == 0 {
		cfg.FetchTimeout = 2 * time.Second
	}
	r, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	return r
}

func resolve(t *testing.T, r *Resolver, o origin.Origin) *Result {
	t.Helper()
	res, err := r.Resolve(context.Background(), o)
	if err != nil {
		t.Fatalf("Resolve(%s): %v", o, err)
	}
	return res
}

func TestStatusClasses(t *testing.T) {
	tests := []struct {
		name    string
		h       http.HandlerFunc
		status  Status
		allowed bool // for /private
	}{
		{"200 parses rules", serveRobots("User-agent: *\nDisallow: /private\n"), OK, false},
		{"200 empty allows", serveRobots(""), OK, true},
		{"404 is unavailable: allow all", serveStatus(404), Unavailable, true},
		{"401 is unavailable", serveStatus(401), Unavailable, true},
		{"403 is unavailable", serveStatus(403), Unavailable, true},
		{"410 is unavailable", serveStatus(410), Unavailable, true},
		{"429 is unreachable: disallow all", serveStatus(429), Unreachable, false},
		{"500 is unreachable", serveStatus(500), Unreachable, false},
		{"503 is unreachable", serveStatus(503), Unreachable, false},
		{"407 is unreachable: a proxy's answer, not the file's", serveStatus(407), Unreachable, false},
		{"304 without redirect is unavailable", serveStatus(304), Unavailable, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := startOrigin(t, "127.0.0.2", false, tt.h)
			res := resolve(t, newResolver(t, Config{}), o.origin)
			if res.Status != tt.status || res.Allowed("Bot", "/private") != tt.allowed {
				t.Errorf("status %v allowed %v, want %v %v (err %v)", res.Status, res.Allowed("Bot", "/private"), tt.status, tt.allowed, res.Err())
			}
		})
	}
}

func TestRetryAfterIsHonoured(t *testing.T) {
	clock := newClock()
	o := startOrigin(t, "127.0.0.2", false, serveStatus(503, "Retry-After", "3600"))
	r := newResolver(t, Config{Now: clock.Now})
	res := resolve(t, r, o.origin)
	if got := res.Expires().Sub(clock.Now()); got != time.Hour {
		t.Errorf("next retry in %v, want the 1h of Retry-After", got)
	}
}

func redirectChain(n int, final string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var i int
		fmt.Sscanf(r.URL.Query().Get("hop"), "%d", &i)
		if i < n {
			http.Redirect(w, r, fmt.Sprintf("/robots.txt?hop=%d", i+1), http.StatusFound)
			return
		}
		fmt.Fprint(w, final)
	}
}

func TestRedirects(t *testing.T) {
	// Five redirects are followed (RFC 9309 asks for at least five, the
	// docs promise five), a sixth is not: literals, not the constant.
	for n := 1; n <= 6; n++ {
		t.Run(fmt.Sprintf("%d hops", n), func(t *testing.T) {
			o := startOrigin(t, "127.0.0.2", false, redirectChain(n, "User-agent: *\nDisallow: /private\n"))
			res := resolve(t, newResolver(t, Config{}), o.origin)
			want := OK
			if n > 5 {
				want = Unavailable
			}
			if res.Status != want {
				t.Errorf("status %v, want %v (err %v)", res.Status, want, res.Err())
			}
			if want == OK && !strings.HasSuffix(res.URL(), fmt.Sprintf("hop=%d", n)) {
				t.Errorf("URL %q", res.URL())
			}
		})
	}
}

func TestRedirectLoopIsUnavailable(t *testing.T) {
	o := startOrigin(t, "127.0.0.2", false, func(w http.ResponseWriter, r *http.Request) {
		target := "/robots.txt?b"
		if r.URL.RawQuery == "b" {
			target = "/robots.txt"
		}
		http.Redirect(w, r, target, http.StatusMovedPermanently)
	})
	res := resolve(t, newResolver(t, Config{}), o.origin)
	if res.Status != Unavailable || !errors.Is(res.Err(), errRedirectLoop) {
		t.Errorf("status %v err %v, want unavailable by loop", res.Status, res.Err())
	}
	if o.hits.Load() != 2 {
		t.Errorf("origin hit %d times, want 2", o.hits.Load())
	}
}

func TestRedirectAcrossHostsKeepsOriginalKey(t *testing.T) {
	other := startOrigin(t, "127.0.0.3", false, serveRobots("User-agent: *\nDisallow: /moved\n"))
	o := startOrigin(t, "127.0.0.2", false, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/robots.txt", http.StatusFound)
	})
	r := newResolver(t, Config{})
	res := resolve(t, r, o.origin)
	if res.Status != OK || res.Allowed("Bot", "/moved") || res.Origin() != o.origin {
		t.Fatalf("status %v origin %v: rules of the redirect target not kept under the original origin", res.Status, res.Origin())
	}
	if _, ok := r.peek(other.origin); ok {
		t.Error("the redirect target was cached under its own key")
	}
}

func TestRedirectToForbiddenAddressIsNotFollowed(t *testing.T) {
	internal := startOrigin(t, "127.0.0.1", false, serveRobots("User-agent: *\nAllow: /\n"))
	o := startOrigin(t, "127.0.0.2", false, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, internal.URL+"/robots.txt", http.StatusFound)
	})
	res := resolve(t, newResolver(t, Config{}), o.origin)
	var denied *egress.DeniedError
	if res.Status != Unreachable || !errors.As(res.Err(), &denied) {
		t.Errorf("status %v err %v, want unreachable by egress denial", res.Status, res.Err())
	}
	if internal.hits.Load() != 0 {
		t.Error("the forbidden address was reached")
	}
}

func TestRedirectToMetadataAddressIsNeverDialled(t *testing.T) {
	var mu sync.Mutex
	var dialled []string
	guard := testGuard()
	guard.Dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
		mu.Lock()
		dialled = append(dialled, addr)
		mu.Unlock()
		if strings.HasPrefix(addr, "127.0.0.") {
			return (&net.Dialer{}).DialContext(ctx, network, addr)
		}
		return nil, errors.New("test dialer connects only to loopback")
	}
	o := startOrigin(t, "127.0.0.2", false, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://169.254.169.254/latest/meta-data/", http.StatusFound)
	})
	res := resolve(t, newResolver(t, Config{DialContext: guard.DialContext}), o.origin)
	if res.Status != Unreachable {
		t.Errorf("status %v, want unreachable", res.Status)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, a := range dialled {
		if strings.HasPrefix(a, "169.254.") {
			t.Errorf("dialled %s", a)
		}
	}
}

func TestOnlyFirst500KiBAreParsed(t *testing.T) {
	var b strings.Builder
	b.WriteString("User-agent: *\nDisallow: /early\n")
	filler := "# filler filler filler filler filler filler filler filler\n"
	for b.Len() < 510<<10 {
		b.WriteString(filler)
	}
	b.WriteString("Disallow: /late\n")
	for b.Len() < 600<<10 {
		b.WriteString(filler)
	}
	o := startOrigin(t, "127.0.0.2", false, serveRobots(b.String()))
	res := resolve(t, newResolver(t, Config{}), o.origin)
	if res.Status != OK || !res.File.Truncated {
		t.Fatalf("status %v truncated %v", res.Status, res.File != nil && res.File.Truncated)
	}
	if res.Allowed("Bot", "/early") || !res.Allowed("Bot", "/late") {
		t.Error("rule before 500 KiB not applied, or rule after it applied")
	}
}

func gzipped(t *testing.T, body []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(body); err != nil {
		t.Fatal(err)
	}
	zw.Close()
	return buf.Bytes()
}

func serveGzip(body []byte) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Encoding", "gzip")
		w.Write(body)
	}
}

func TestGzipBodyIsDecompressed(t *testing.T) {
	o := startOrigin(t, "127.0.0.2", false, serveGzip(gzipped(t, []byte("User-agent: *\nDisallow: /zipped\n"))))
	res := resolve(t, newResolver(t, Config{}), o.origin)
	if res.Status != OK || res.Allowed("Bot", "/zipped") {
		t.Errorf("status %v: gzip body not read", res.Status)
	}
}

func TestGzipBombIsReadOnlyTo500KiB(t *testing.T) {
	bomb := append([]byte("User-agent: *\nDisallow: /bomb\n#"), bytes.Repeat([]byte{'a'}, 16<<20)...)
	o := startOrigin(t, "127.0.0.2", false, serveGzip(gzipped(t, bomb)))
	res := resolve(t, newResolver(t, Config{}), o.origin)
	if res.Status != OK || !res.File.Truncated || res.Allowed("Bot", "/bomb") {
		t.Errorf("status %v: bomb not cut at the limit", res.Status)
	}
}

func TestSilentServerIsUnreachableAfterTimeout(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var held []net.Conn
	accepting := make(chan struct{})
	go func() {
		defer close(accepting)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c) // accept and never answer
			mu.Unlock()
		}
	}()
	defer func() {
		ln.Close()
		<-accepting
		for _, c := range held {
			c.Close()
		}
	}()
	o, _ := origin.Parse("http://" + ln.Addr().String())
	r := newResolver(t, Config{FetchTimeout: 300 * time.Millisecond})
	start := time.Now()
	res := resolve(t, r, o)
	if el := time.Since(start); res.Status != Unreachable || el > 3*time.Second {
		t.Errorf("status %v after %v, want unreachable bounded by the 300ms timeout", res.Status, el)
	}
}

func TestTricklingBodyIsUnreachableAfterTimeout(t *testing.T) {
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	o := startOrigin(t, "127.0.0.2", false, func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("User-agent: *\n"))
		for range 100 { // one byte every 50ms: 5s in all, far past the timeout
			select {
			case <-stop:
				return
			case <-r.Context().Done():
				return
			case <-time.After(50 * time.Millisecond):
			}
			w.Write([]byte("#"))
			w.(http.Flusher).Flush()
		}
	})
	start := time.Now()
	res := resolve(t, newResolver(t, Config{FetchTimeout: 300 * time.Millisecond}), o.origin)
	if el := time.Since(start); res.Status != Unreachable || el > 3*time.Second {
		t.Errorf("status %v after %v, want unreachable once the whole-fetch timeout expires", res.Status, el)
	}
}

func TestConnectionResetIsUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Read(make([]byte, 1024))
			c.(*net.TCPConn).SetLinger(0) // close with RST
			c.Close()
		}
	}()
	o, _ := origin.Parse("http://" + ln.Addr().String())
	res := resolve(t, newResolver(t, Config{}), o)
	if res.Status != Unreachable || res.Err() == nil {
		t.Errorf("status %v err %v, want unreachable", res.Status, res.Err())
	}
}

func TestHTTPSIsVerified(t *testing.T) {
	// httptest's certificate names 127.0.0.1, so this test allows it.
	o := startOrigin(t, "127.0.0.1", true, serveRobots("User-agent: *\nDisallow: /tls\n"))
	guard := &egress.Guard{BlockPrivate: true, AllowNetworks: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}}
	roots := x509.NewCertPool()
	roots.AddCert(o.Certificate())
	res := resolve(t, newResolver(t, Config{RootCAs: roots, DialContext: guard.DialContext}), o.origin)
	if res.Status != OK || res.Allowed("Bot", "/tls") {
		t.Errorf("with the right root: status %v err %v", res.Status, res.Err())
	}
	res = resolve(t, newResolver(t, Config{RootCAs: x509.NewCertPool(), DialContext: guard.DialContext}), o.origin)
	if res.Status != Unreachable {
		t.Errorf("with no root: status %v, want unreachable (TLS failure)", res.Status)
	}
}

func TestProxyFromEnvironmentIsIgnored(t *testing.T) {
	trap := startOrigin(t, "127.0.0.3", false, serveStatus(502))
	t.Setenv("HTTP_PROXY", trap.URL)
	t.Setenv("http_proxy", trap.URL)
	o := startOrigin(t, "127.0.0.2", false, serveRobots("User-agent: *\nDisallow: /\n"))
	res := resolve(t, newResolver(t, Config{}), o.origin)
	if res.Status != OK || trap.hits.Load() != 0 {
		t.Errorf("status %v, proxy hit %d times", res.Status, trap.hits.Load())
	}
}

// TestProxyOption: with Config.Proxy, every fetch (each redirect too) goes
// to the proxy it names, in absolute form; an error from it fails the
// fetch (unreachable) without sending anything.
func TestProxyOption(t *testing.T) {
	var mu sync.Mutex
	var atProxy []string
	parent := startOrigin(t, "127.0.0.3", false, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		atProxy = append(atProxy, r.RequestURI)
		mu.Unlock()
		if strings.HasPrefix(r.RequestURI, "http://first.test/") {
			http.Redirect(w, r, "http://second.test/robots.txt", http.StatusMovedPermanently)
			return
		}
		fmt.Fprint(w, "User-agent: *\nDisallow: /via-parent\n")
	})
	parentURL, _ := url.Parse(parent.URL)
	var asked []string
	proxy := func(req *http.Request) (*url.URL, error) {
		asked = append(asked, req.URL.Host) // one fetch at a time here
		if req.URL.Host == "refused.test" {
			return nil, errors.New("refused by the test")
		}
		return parentURL, nil
	}
	r := newResolver(t, Config{Proxy: proxy})
	res := resolve(t, r, mustOrigin(t, "http://first.test"))
	if res.Status != OK || res.Allowed("Bot", "/via-parent") {
		t.Errorf("through the proxy: status %v err %v", res.Status, res.Err())
	}
	if want := []string{"http://first.test/robots.txt", "http://second.test/robots.txt"}; !slices.Equal(atProxy, want) {
		t.Errorf("the proxy received %q, want %q", atProxy, want)
	}
	if want := []string{"first.test", "second.test"}; !slices.Equal(asked, want) {
		t.Errorf("Proxy was asked for %q, want %q", asked, want)
	}
	res = resolve(t, r, mustOrigin(t, "http://refused.test"))
	if res.Status != Unreachable || len(atProxy) != 2 {
		t.Errorf("Proxy refusing: status %v, the proxy received %q", res.Status, atProxy)
	}
}

func mustOrigin(t *testing.T, rawURL string) origin.Origin {
	t.Helper()
	o, err := origin.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func TestUserAgentIsSent(t *testing.T) {
	var got atomic.Value
	o := startOrigin(t, "127.0.0.2", false, func(w http.ResponseWriter, r *http.Request) {
		got.Store(r.UserAgent())
	})
	resolve(t, newResolver(t, Config{UserAgent: "robotsgate-test/2"}), o.origin)
	if got.Load() != "robotsgate-test/2" {
		t.Errorf("User-Agent %v", got.Load())
	}
}

// rulesServer serves whatever rules it currently holds.
type rulesServer struct {
	mu    sync.Mutex
	body  string
	code  int
	cache string
}

func (s *rulesServer) set(code int, body, cacheControl string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.code, s.body, s.cache = code, body, cacheControl
}

func (s *rulesServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cache != "" {
		w.Header().Set("Cache-Control", s.cache)
	}
	w.WriteHeader(s.code)
	fmt.Fprint(w, s.body)
}

// waitRefresh returns a resolver whose background refreshes signal on the
// returned channel.
func newSignallingResolver(t *testing.T, cfg Config) (*Resolver, chan origin.Origin) {
	r := newResolver(t, cfg)
	done := make(chan origin.Origin, 16)
	r.refreshed = func(o origin.Origin) { done <- o }
	return r, done
}

func TestMaxAgeExpiryTakesNewRules(t *testing.T) {
	clock := newClock()
	srv := &rulesServer{}
	srv.set(200, "User-agent: *\nDisallow: /old\n", "max-age=60")
	o := startOrigin(t, "127.0.0.2", false, srv.ServeHTTP)
	r, refreshed := newSignallingResolver(t, Config{Now: clock.Now, MinTTL: time.Second})
	first := resolve(t, r, o.origin)
	<-refreshed
	if first.Expires().Sub(first.FetchedAt()) != time.Minute {
		t.Errorf("fresh for %v, want max-age 60s", first.Expires().Sub(first.FetchedAt()))
	}
	srv.set(200, "User-agent: *\nDisallow: /new\n", "max-age=60")
	clock.Advance(59 * time.Second)
	if res := resolve(t, r, o.origin); res != first || o.hits.Load() != 1 {
		t.Fatal("refetched while fresh")
	}
	clock.Advance(2 * time.Second)
	if res := resolve(t, r, o.origin); res != first {
		t.Error("expired entry not served while refreshing")
	}
	<-refreshed
	res := resolve(t, r, o.origin)
	if res.Allowed("Bot", "/new") || !res.Allowed("Bot", "/old") || o.hits.Load() != 2 {
		t.Errorf("after refresh: new rules not in effect (hits %d)", o.hits.Load())
	}
}

func TestTTLBounds(t *testing.T) {
	for _, tt := range []struct {
		cacheControl string
		want         time.Duration
	}{
		{"", 24 * time.Hour},
		{"max-age=0", time.Minute},
		{"no-store", time.Minute},
		{"public, max-age=3600", time.Hour},
		{"max-age=999999999", 24 * time.Hour},
	} {
		clock := newClock()
		srv := &rulesServer{}
		srv.set(200, "", tt.cacheControl)
		o := startOrigin(t, "127.0.0.2", false, srv.ServeHTTP)
		res := resolve(t, newResolver(t, Config{Now: clock.Now}), o.origin)
		if got := res.Expires().Sub(res.FetchedAt()); got != tt.want {
			t.Errorf("Cache-Control %q: fresh for %v, want %v", tt.cacheControl, got, tt.want)
		}
	}
}

func TestStaleCopyServesWhileUnreachable(t *testing.T) {
	clock := newClock()
	srv := &rulesServer{}
	srv.set(200, "User-agent: *\nDisallow: /secret\n", "max-age=60")
	o := startOrigin(t, "127.0.0.2", false, srv.ServeHTTP)
	r, refreshed := newSignallingResolver(t, Config{Now: clock.Now, RetryMin: 10 * time.Second})
	resolve(t, r, o.origin)
	<-refreshed
	srv.set(503, "", "")
	clock.Advance(2 * time.Minute)
	resolve(t, r, o.origin) // expired: old copy served, refresh fails in the background
	<-refreshed
	res := resolve(t, r, o.origin)
	if res.Status != OK || !res.Stale || res.Err() == nil || res.Allowed("Bot", "/secret") {
		t.Fatalf("status %v stale %v err %v: old rules not kept", res.Status, res.Stale, res.Err())
	}
	if res.Expires().Sub(clock.Now()) != 10*time.Second {
		t.Errorf("next retry in %v, want 10s", res.Expires().Sub(clock.Now()))
	}
	hits := o.hits.Load()
	for range 5 {
		resolve(t, r, o.origin)
	}
	if o.hits.Load() != hits {
		t.Error("retried on every request instead of after the backoff")
	}
}

func TestUnreachableIsCachedWithBackoff(t *testing.T) {
	clock := newClock()
	o := startOrigin(t, "127.0.0.2", false, serveStatus(500))
	r := newResolver(t, Config{Now: clock.Now, RetryMin: 10 * time.Second, RetryMax: 35 * time.Second})
	wantRetries := []time.Duration{10 * time.Second, 20 * time.Second, 35 * time.Second, 35 * time.Second}
	for i, want := range wantRetries {
		res := resolve(t, r, o.origin)
		resolve(t, r, o.origin)
		if res.Status != Unreachable || o.hits.Load() != int64(i+1) {
			t.Fatalf("attempt %d: status %v hits %d", i+1, res.Status, o.hits.Load())
		}
		if got := res.Expires().Sub(clock.Now()); got != want {
			t.Errorf("attempt %d: retry in %v, want %v", i+1, got, want)
		}
		clock.Advance(want)
	}
}

func TestColdOriginIsFetchedOnce(t *testing.T) {
	release := make(chan struct{})
	o := startOrigin(t, "127.0.0.2", false, func(w http.ResponseWriter, r *http.Request) {
		<-release
		fmt.Fprint(w, "User-agent: *\nDisallow: /x\n")
	})
	r := newResolver(t, Config{})
	const n = 200
	var started, done sync.WaitGroup
	results := make(chan *Result, n)
	for range n {
		started.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			started.Done()
			res, err := r.Resolve(context.Background(), o.origin)
			if err != nil {
				t.Error(err)
			}
			results <- res
		}()
	}
	started.Wait()
	close(release)
	done.Wait()
	close(results)
	for res := range results {
		if res == nil || res.Status != OK || res.Allowed("Bot", "/x") {
			t.Fatalf("a caller got %+v", res)
		}
	}
	if o.hits.Load() != 1 {
		t.Errorf("%d fetches for %d concurrent requests, want 1", o.hits.Load(), n)
	}
}

func TestSlowOriginHoldsOnlyItsOwnRequests(t *testing.T) {
	release := make(chan struct{})
	arrived := make(chan struct{}, 1)
	slow := startOrigin(t, "127.0.0.2", false, func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-release
	})
	fast := startOrigin(t, "127.0.0.3", false, serveRobots("User-agent: *\nDisallow: /\n"))
	// The slow fetch must outlive the fast one's deadline: were it to time
	// out first, a lock it held would be released in time and the test
	// would pass with the very bug it guards against.
	r := newResolver(t, Config{FetchTimeout: time.Minute})
	slowDone := make(chan struct{})
	go func() {
		defer close(slowDone)
		resolve(t, r, slow.origin)
	}()
	defer func() {
		close(release)
		<-slowDone
	}()
	// The slow origin's fetch is under way before the fast one starts, so
	// anything the slow fetch holds would stop the fast one.
	<-arrived
	// 5 s is far above one loopback fetch on a loaded machine, and far
	// below the slow fetch, which ends only when the test releases it.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	res, err := r.Resolve(ctx, fast.origin)
	if err != nil {
		t.Fatalf("fast origin waited for the slow one: %v", err)
	}
	if res.Status != OK {
		t.Errorf("fast origin: %v", res.Status)
	}
}

func TestCallerCancellationDoesNotFailTheSharedFetch(t *testing.T) {
	release := make(chan struct{})
	arrived := make(chan struct{}, 1)
	o := startOrigin(t, "127.0.0.2", false, func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-release
		fmt.Fprint(w, "User-agent: *\nDisallow: /x\n")
	})
	r := newResolver(t, Config{})
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := r.Resolve(ctx, o.origin)
		errc <- err
	}()
	<-arrived
	other := make(chan *Result, 1)
	go func() { other <- resolve(t, r, o.origin) }()
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled caller got %v", err)
	}
	close(release)
	if res := <-other; res.Status != OK {
		t.Errorf("other caller got %v (%v)", res.Status, res.Err())
	}
}

// mapStore is a Store in a map: it stands in for the shared Redis store
// only to check the resolver's use of the interface.
type mapStore struct {
	mu   sync.Mutex
	recs map[origin.Origin]Record
}

func (s *mapStore) Load(_ context.Context, o origin.Origin) (Record, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, ok := s.recs[o]
	return rec, ok, nil
}

func (s *mapStore) Save(_ context.Context, o origin.Origin, rec Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.recs[o] = rec
	return nil
}

func TestStoreSharesFetchesBetweenResolvers(t *testing.T) {
	o := startOrigin(t, "127.0.0.2", false, serveRobots("User-agent: *\nDisallow: /shared\n"))
	store := &mapStore{recs: map[origin.Origin]Record{}}
	a := newResolver(t, Config{Store: store})
	b := newResolver(t, Config{Store: store})
	resolve(t, a, o.origin)
	res := resolve(t, b, o.origin)
	if res.Status != OK || res.Allowed("Bot", "/shared") || o.hits.Load() != 1 {
		t.Errorf("status %v hits %d: second instance did not use the shared copy", res.Status, o.hits.Load())
	}
}

func TestResolveHitDoesNotAllocate(t *testing.T) {
	o := startOrigin(t, "127.0.0.2", false, serveRobots("User-agent: *\nDisallow: /x\n"))
	r := newResolver(t, Config{})
	resolve(t, r, o.origin)
	ctx := context.Background()
	if n := testing.AllocsPerRun(100, func() { r.Resolve(ctx, o.origin) }); n != 0 {
		t.Errorf("%v allocations per cache hit", n)
	}
}

// TestHashCollisionIsAMiss: the cache is keyed by a hash of the origin, so
// an entry found under an origin's key must be that origin's; another
// origin's rules there (a collision) mean a fetch, never their verdict.
func TestHashCollisionIsAMiss(t *testing.T) {
	a := startOrigin(t, "127.0.0.2", false, serveRobots("User-agent: *\nDisallow: /a-only\n"))
	b := startOrigin(t, "127.0.0.3", false, serveRobots("User-agent: *\nDisallow: /b-only\n"))
	r := newResolver(t, Config{})
	resA := resolve(t, r, a.origin)
	r.cache.Add(r.key(b.origin), resA, resA.size()) // as if b's key collided with a's

	resB := resolve(t, r, b.origin)
	if resB.Origin() != b.origin || !resB.Allowed("Bot", "/a-only") || resB.Allowed("Bot", "/b-only") {
		t.Fatalf("got the verdict of %v for %v", resB.Origin(), b.origin)
	}
	if b.hits.Load() != 1 {
		t.Errorf("%d fetches of b's robots.txt, want 1", b.hits.Load())
	}
}

// A stale copy with an ETag is refreshed conditionally: the origin's 304
// keeps the file (same body, same SHA-256) with new freshness, and the
// answer is reported as a 304; a changed file comes back whole. With
// OnAnswer set every file names its body's SHA-256.
func TestRevalidationKeepsTheFileOn304(t *testing.T) {
	clock := newClock()
	body := "User-agent: *\nDisallow: /private\n"
	var inm atomic.Value
	inm.Store("")
	var changed atomic.Bool
	o := startOrigin(t, "127.0.0.2", false, func(w http.ResponseWriter, r *http.Request) {
		inm.Store(r.Header.Get("If-None-Match"))
		w.Header().Set("Cache-Control", "max-age=60")
		if changed.Load() {
			w.Header().Set("ETag", `"v2"`)
			io.WriteString(w, "User-agent: *\nDisallow: /\n")
			return
		}
		w.Header().Set("ETag", `"v1"`)
		if r.Header.Get("If-None-Match") == `"v1"` {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		io.WriteString(w, body)
	})
	answers := make(chan Answer, 8)
	r, refreshed := newSignallingResolver(t, Config{Now: clock.Now, MinTTL: time.Second, OnAnswer: func(a Answer) { answers <- a }})
	first := resolve(t, r, o.origin)
	<-refreshed
	a := <-answers
	if first.SHA256() != sha256hex(body) || a.HTTPStatus != 200 || string(a.Body) != body {
		t.Fatalf("first fetch: sha %q, answer %d %q", first.SHA256(), a.HTTPStatus, a.Body)
	}
	clock.Advance(61 * time.Second)
	resolve(t, r, o.origin) // the stale copy, while it is revalidated
	<-refreshed
	a = <-answers
	again := resolve(t, r, o.origin)
	if inm.Load() != `"v1"` || a.HTTPStatus != http.StatusNotModified || a.Body != nil {
		t.Errorf("refresh sent If-None-Match %q, answer %d", inm.Load(), a.HTTPStatus)
	}
	if again == first || again.File != first.File || again.SHA256() != first.SHA256() || !again.FetchedAt().Equal(clock.Now()) {
		t.Errorf("after a 304: a new fresh Result with the same file and body expected")
	}
	changed.Store(true)
	clock.Advance(61 * time.Second)
	resolve(t, r, o.origin)
	<-refreshed
	<-answers
	if now := resolve(t, r, o.origin); now.Allowed("Bot", "/public") || now.SHA256() == first.SHA256() {
		t.Error("a changed file did not replace the revalidated one")
	}
}

func sha256hex(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}
