package proxy

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/robotsgate/robotsgate/certs"
	"github.com/robotsgate/robotsgate/config"
	"github.com/robotsgate/robotsgate/htmlmeta"
)

// BenchmarkScanHTMLTTFB measures what usage.scan_html costs a client with
// purposes ([train-ai]) in time to first byte (the response head) of a
// 200 KiB HTML page without any signal: each iteration fetches the page
// through two robotsgate instances on loopback, one with scan_html off
// and one with it on (in alternating order), and the benchmark reports
// both medians and their difference (ttfb-added-ns), and the same for the
// time to the last byte. Pages:
//
//   - head=2KiB: a typical head (title, meta, link and a small script),
//     </head> after about 2 KiB: the scan reads that far;
//   - head=none: a head that does not end within 64 KiB (a large inline
//     <style>): the scan reads and tokenizes all of htmlmeta.Limit.
func BenchmarkScanHTMLTTFB(b *testing.B) {
	pages := map[string][]byte{
		"2KiB": benchPage(`<title>A page</title><meta charset="utf-8"><meta name="viewport" content="width=device-width">` +
			`<meta name="description" content="` + strings.Repeat("words ", 100) + `">` +
			strings.Repeat(`<link rel="stylesheet" href="/static/site.css">`, 20) +
			`<script>window.dataLayer = window.dataLayer || [];</script>`),
		"none": benchPage(`<title>A page</title><style>` + strings.Repeat(".c{color:#123456}\n", htmlmeta.Limit/18+100) + `</style>`),
	}
	origin := startBenchServer(b, benchOriginIP, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			io.WriteString(w, "User-agent: *\nAllow: /\n")
			return
		}
		page := pages[strings.TrimPrefix(r.URL.Path, "/")]
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Content-Length", strconv.Itoa(len(page)))
		w.Write(page)
	}), nil, nil)
	off := startBenchProxy(b, false)
	on := startBenchProxy(b, true)
	for _, head := range []string{"2KiB", "none"} {
		b.Run("head="+head, func(b *testing.B) {
			target := "http://" + origin + "/" + head
			clients := [2]*http.Transport{benchTransport(off), benchTransport(on)}
			var ttfb, total [2][]time.Duration
			for i := range clients { // connections and robots.txt, untimed
				if _, _, err := fetchTimed(clients[i], target, len(pages[head])); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				for k := range 2 {
					which := (i + k) % 2 // alternate which goes first
					first, last, err := fetchTimed(clients[which], target, len(pages[head]))
					if err != nil {
						b.Fatal(err)
					}
					ttfb[which] = append(ttfb[which], first)
					total[which] = append(total[which], last)
				}
			}
			b.StopTimer()
			report := func(name string, d [2][]time.Duration) {
				offMed, onMed := median(d[0]), median(d[1])
				b.ReportMetric(float64(offMed), name+"-scan-off-ns")
				b.ReportMetric(float64(onMed), name+"-scan-on-ns")
				b.ReportMetric(float64(onMed-offMed), name+"-added-ns")
			}
			report("ttfb", ttfb)
			report("last-byte", total)
		})
	}
}

// benchPage is a 200 KiB HTML page with head in its <head>.
func benchPage(head string) []byte {
	page := []byte("<!doctype html><html><head>" + head + "</head><body>\n")
	for len(page) < 200<<10-len("</body></html>\n") {
		page = append(page, "<p>Some text of the page, as a long article has it.</p>\n"...)
	}
	return append(page[:200<<10-len("</body></html>\n")], "</body></html>\n"...)
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// startBenchProxy starts robotsgate for a client with purposes [train-ai],
// logging at info to nowhere, as BenchmarkProxy's.
func startBenchProxy(b *testing.B, scanHTML bool) string {
	b.Helper()
	cfg := config.Default()
	cfg.Listen, cfg.AdminListen, cfg.Archive.Dir, cfg.Log.Audit = "127.0.0.1:0", "", "", ""
	cfg.Egress.AllowNetworks = []string{benchOriginIP + "/32"}
	cfg.Clients = []config.Client{{CIDR: "127.0.0.0/8", Mode: config.ModeEnforce, Purposes: []string{"train-ai"}}}
	cfg.Usage.ScanHTML = scanHTML
	ca, err := certs.GenerateCA(time.Now())
	if err != nil {
		b.Fatal(err)
	}
	_, addr := serveBenchRobotsgate(b, cfg, ca, Options{})
	return addr
}

func benchTransport(proxyAddr string) *http.Transport {
	return &http.Transport{Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: proxyAddr}), DisableCompression: true, MaxIdleConnsPerHost: 1}
}

// fetchTimed GETs target and returns the time to the first byte of the
// response and to the end of its body, which must be size bytes.
func fetchTimed(tr *http.Transport, target string, size int) (time.Duration, time.Duration, error) {
	var first time.Time
	req, _ := http.NewRequest(http.MethodGet, target, nil)
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
		GotFirstResponseByte: func() { first = time.Now() },
	}))
	start := time.Now()
	resp, err := tr.RoundTrip(req)
	if err != nil {
		return 0, 0, err
	}
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	end := time.Now()
	if err != nil || resp.StatusCode != 200 || n != int64(size) {
		return 0, 0, fmt.Errorf("GET %s: %d, %d bytes (%v), want 200 and %d", target, resp.StatusCode, n, err, size)
	}
	return first.Sub(start), end.Sub(start), nil
}
