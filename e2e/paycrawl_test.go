//go:build unix

package e2e

// End-to-end test of pay per crawl through the real binary: a loopback
// origin answers 402 with a crawler-price and serves the page to a retry
// that offers exactly that price in crawler-exact-price (and no
// crawler-max-price: one price header per request) under a Web Bot Auth
// signature that verifies and covers it.

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/robotsgate/robotsgate/botauth"
	"github.com/robotsgate/robotsgate/paycrawl"
)

// payOrigin charges USD 0.01 for /paid, /overcharge and /failed and USD
// 5.00 for /expensive. It serves a page only to a request whose signature
// verifies (with pub, the key robotsgate printed) and covers
// crawler-exact-price, equal to the price, without crawler-max-price;
// /overcharge then says it charged USD 0.05, /failed answers 403 with
// crawler-error: PaymentFailed. /blocked is always 403 with crawler-error:
// CrawlerForbidden. Everything else gets 402 with crawler-price.
// robots.txt asks a Crawl-delay of 1s.
type payOrigin struct {
	*captureOrigin
	pub      atomic.Pointer[ed25519.PublicKey]
	mu       sync.Mutex
	arrivals map[string][]time.Time
	refusals []string // why a request with an offer was not served
}

func startPayOrigin(t *testing.T) *payOrigin {
	o := &payOrigin{arrivals: map[string][]time.Time{}}
	prices := map[string]string{"/paid": "USD 0.01", "/overcharge": "USD 0.01", "/failed": "USD 0.01", "/expensive": "USD 5.00"}
	o.captureOrigin = startCaptureOrigin(t, "127.0.0.4", false, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			io.WriteString(w, "User-agent: *\nCrawl-delay: 1\nAllow: /\n")
			return
		}
		o.mu.Lock()
		o.arrivals[r.URL.Path] = append(o.arrivals[r.URL.Path], time.Now())
		o.mu.Unlock()
		if r.URL.Path == "/blocked" { // Cloudflare's answer to a crawler the site blocks
			w.Header().Set(paycrawl.HeaderError, "CrawlerForbidden")
			w.WriteHeader(http.StatusForbidden)
			io.WriteString(w, "forbidden")
			return
		}
		price := prices[r.URL.Path]
		exact, maxOffer := r.Header.Get(paycrawl.HeaderExactPrice), r.Header.Get(paycrawl.HeaderMaxPrice)
		if exact != "" || maxOffer != "" {
			why := ""
			pub := o.pub.Load()
			switch {
			case maxOffer != "":
				why = "crawler-max-price sent (ConflictingPriceHeaders, or not the quote)"
			case exact != price:
				why = "crawler-exact-price " + exact + " is not " + price
			case pub == nil:
				why = "no key to verify with"
			default:
				if err := botauth.Verify(r, *pub, time.Now(), "crawler-exact-price"); err != nil {
					why = err.Error()
				}
			}
			if why == "" && r.URL.Path == "/failed" {
				w.Header().Set(paycrawl.HeaderError, "PaymentFailed")
				w.WriteHeader(http.StatusForbidden)
				io.WriteString(w, "payment failed")
				return
			}
			if why == "" {
				charged := price
				if r.URL.Path == "/overcharge" {
					charged = "USD 0.05"
				}
				w.Header().Set(paycrawl.HeaderCharged, charged)
				io.WriteString(w, "paid content "+r.URL.Path)
				return
			}
			o.mu.Lock()
			o.refusals = append(o.refusals, why)
			o.mu.Unlock()
		}
		w.Header().Set(paycrawl.HeaderPrice, price)
		w.WriteHeader(http.StatusPaymentRequired)
		io.WriteString(w, "payment required")
	})
	return o
}

func (o *payOrigin) times(path string) []time.Time {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]time.Time(nil), o.arrivals[path]...)
}

// payAudit is what the test reads of an audit line.
type payAudit struct {
	URL                string `json:"url"`
	Status             int    `json:"status"`
	UpstreamStatus     int    `json:"upstream_status"`
	CrawlerPrice       string `json:"crawler_price"`
	CrawlerCharged     string `json:"crawler_charged"`
	CrawlerOvercharged bool   `json:"crawler_overcharged"`
	CrawlerError       string `json:"crawler_error"`
}

// TestPayPerCrawlPaysWithinMaxPrice: a client with max_price USD 0.05
// gets /paid (USD 0.01) after one signed retry with crawler-exact-price
// USD 0.01, held for the origin's Crawl-delay after the 402; the audit
// line records the price and crawler-charged. /overcharge, which charges
// USD 0.05 for a quote of USD 0.01, is flagged (crawler_overcharged, the
// robotsgate_crawler_overcharges_total metric); /failed records the
// origin's crawler-error, as does /blocked, answered 403 with a
// crawler-error at once. /expensive (USD 5.00) is not retried: the client
// gets the 402.
func TestPayPerCrawlPaysWithinMaxPrice(t *testing.T) {
	dir := t.TempDir()
	o := startPayOrigin(t)
	unused := httptest.NewTLSServer(http.NotFoundHandler()) // the configuration trusts its certificate; no request goes there
	t.Cleanup(unused.Close)
	(&origin{Server: unused}).writeCertPEM(t, filepath.Join(dir, "upstream.pem"))
	cfgPath := filepath.Join(dir, "robotsgate.yaml")
	writeFile(t, cfgPath, wbaConfig(dir, "-", `clients:
  - cidr: 127.0.0.0/8
    max_price: "USD 0.05"
`))
	p := startServe(t, dir, "-config", cfgPath, "-admin-listen", "127.0.0.1:0")
	stdout, stderr, code := runBin(t, dir, "bot-auth", "-config", cfgPath)
	if code != 0 {
		t.Fatalf("robotsgate bot-auth: exit %d: %s", code, stderr)
	}
	var set struct{ Keys []struct{ X string } }
	if err := json.Unmarshal([]byte(stdout), &set); err != nil || len(set.Keys) != 1 {
		t.Fatalf("bot-auth printed %q: %v", stdout, err)
	}
	raw, _ := base64.RawURLEncoding.DecodeString(set.Keys[0].X)
	pub := ed25519.PublicKey(raw)
	o.pub.Store(&pub)

	c := proxyClient(t, p.addr, filepath.Join(dir, "certs", "ca.pem"))
	for _, tc := range []struct {
		path         string
		status       int
		body         string
		arrivals     int
		price        string
		charged      string
		overcharged  bool
		crawlerError string
	}{
		{"/paid", http.StatusOK, "paid content /paid", 2, "USD 0.01", "USD 0.01", false, ""},
		{"/overcharge", http.StatusOK, "paid content /overcharge", 2, "USD 0.01", "USD 0.05", true, ""},
		{"/failed", http.StatusForbidden, "payment failed", 2, "USD 0.01", "", false, "PaymentFailed"},
		{"/expensive", http.StatusPaymentRequired, "payment required", 1, "USD 5.00", "", false, ""},
		{"/blocked", http.StatusForbidden, "forbidden", 1, "", "", false, "CrawlerForbidden"},
	} {
		t.Run(strings.TrimPrefix(tc.path, "/"), func(t *testing.T) {
			r := get(t, c, o.URL+tc.path)
			if r.status != tc.status || r.body != tc.body {
				t.Fatalf("GET %s: %d %q, want %d %q (origin refusals: %q)", tc.path, r.status, r.body, tc.status, tc.body, o.refusals)
			}
			times := o.times(tc.path)
			if len(times) != tc.arrivals {
				t.Fatalf("the origin got %d requests for %s, want %d", len(times), tc.path, tc.arrivals)
			}
			if len(times) == 2 {
				// The retry is one more request: Crawl-delay 1s applies,
				// less a tolerance for the clocks of two processes.
				if gap := times[1].Sub(times[0]); gap < 900*time.Millisecond {
					t.Errorf("the paid retry came %v after the 402, want at least the Crawl-delay of 1s", gap)
				}
			}
			var rec payAudit
			ok := p.out.waitFor(logTimeout, p.done, func(s string) bool {
				for line := range strings.Lines(s) {
					rec = payAudit{}
					if strings.HasPrefix(line, "{") && json.Unmarshal([]byte(line), &rec) == nil && rec.URL == o.URL+tc.path {
						return true
					}
				}
				return false
			})
			if !ok {
				t.Fatalf("no audit line for %s", tc.path)
			}
			if rec.Status != tc.status || rec.CrawlerPrice != tc.price || rec.CrawlerCharged != tc.charged ||
				rec.CrawlerOvercharged != tc.overcharged || rec.CrawlerError != tc.crawlerError {
				t.Errorf("audit line of %s: %+v; want status %d, crawler_price %q, crawler_charged %q, crawler_overcharged %v, crawler_error %q",
					tc.path, rec, tc.status, tc.price, tc.charged, tc.overcharged, tc.crawlerError)
			}
		})
	}
	_, metrics := adminStatus(t, adminOf(t, p)+"/metrics")
	if !strings.Contains(metrics, "robotsgate_crawler_overcharges_total 1\n") {
		t.Errorf("/metrics does not count the one overcharge:\n%s", grepLines(metrics, "crawler"))
	}
}

// TestPayPerCrawlWithoutSigningRelaysAndCounts: with no signing
// configured, an origin's 402 with a crawler-price reaches the client as
// it is, is not retried, and is counted as unsigned in /metrics.
func TestPayPerCrawlWithoutSigningRelaysAndCounts(t *testing.T) {
	dir := t.TempDir()
	o := startPayOrigin(t)
	unused := httptest.NewTLSServer(http.NotFoundHandler())
	t.Cleanup(unused.Close)
	(&origin{Server: unused}).writeCertPEM(t, filepath.Join(dir, "upstream.pem"))
	cfgPath := filepath.Join(dir, "robotsgate.yaml")
	writeFile(t, cfgPath, e2eConfig{dir: dir, upstreamCA: true, allowNetworks: "127.0.0.0/8"}.yaml())
	p := startServe(t, dir, "-config", cfgPath, "-admin-listen", "127.0.0.1:0")
	c := proxyClient(t, p.addr, filepath.Join(dir, "certs", "ca.pem"))
	r := get(t, c, o.URL+"/paid")
	if r.status != http.StatusPaymentRequired || r.header.Get("Crawler-Price") != "USD 0.01" {
		t.Fatalf("GET /paid: %d, crawler-price %q; want the origin's 402 with its price", r.status, r.header.Get("Crawler-Price"))
	}
	if n := len(o.times("/paid")); n != 1 {
		t.Fatalf("the origin got %d requests for /paid, want 1 (no retry)", n)
	}
	_, metrics := adminStatus(t, adminOf(t, p)+"/metrics")
	if !strings.Contains(metrics, `robotsgate_crawler_price_answers_total{outcome="unsigned"} 1`) {
		t.Errorf("/metrics does not count the 402 as unsigned:\n%s", grepLines(metrics, "crawler"))
	}
}

// grepLines returns the lines of s that contain sub.
func grepLines(s, sub string) string {
	var out []string
	for line := range strings.Lines(s) {
		if strings.Contains(line, sub) {
			out = append(out, strings.TrimSpace(line))
		}
	}
	return strings.Join(out, "\n")
}
