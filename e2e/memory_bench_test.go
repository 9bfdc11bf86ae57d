package e2e

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// BenchmarkBinaryRobotsCacheMemory sends one request to each of
// ROBOTSGATE_MEMORY_ORIGINS origins (default 10,000) through the real
// binary, each origin answering a robots.txt of its own of 500 KiB, the
// most robotsgate reads: a hostile or merely large population of sites. It
// reports the binary's peak RSS (VmHWM), the CPU time it used (what the
// collector's extra work under a memory limit costs, whatever the machine's
// load does to the wall time) and the robots.txt cache's bytes
// as its gauge measures them, which must stay within robots.cache_bytes
// (256 MiB by default) whatever the number of origins, and the soft memory
// limit the binary ran with (memory_limit: auto unless
// ROBOTSGATE_MEMORY_LIMIT gives another value, e.g. off, as before there
// was one; GOMEMLIMIT in the environment wins). Run it once:
//
//	go test -run '^$' -bench BinaryRobotsCacheMemory -benchtime 1x ./e2e/
func BenchmarkBinaryRobotsCacheMemory(b *testing.B) {
	origins := 10_000
	if v, err := strconv.Atoi(os.Getenv("ROBOTSGATE_MEMORY_ORIGINS")); err == nil && v > 0 {
		origins = v
	}
	limit := "auto"
	if v := os.Getenv("ROBOTSGATE_MEMORY_LIMIT"); v != "" {
		limit = v
	}
	dir := b.TempDir()
	writeFile(b, filepath.Join(dir, "cfg.yaml"), `egress:
  allow_networks: [127.0.0.0/8]
log:
  audit: ""
archive:
  dir: ""
memory_limit: `+limit+`
`)
	urls := startBigRobotsOrigins(b, origins)
	p := startServe(b, dir, "-config", "cfg.yaml", "-listen", "127.0.0.1:0", "-admin-listen", "127.0.0.1:0")
	m := adminOnRE.FindStringSubmatch(p.out.String())
	if m == nil {
		b.Fatalf("no admin address in the start-up log:\n%s", p.out)
	}
	proxyURL, err := url.Parse("http://" + p.addr)
	if err != nil {
		b.Fatal(err)
	}
	client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(proxyURL), MaxIdleConnsPerHost: 16}}
	for b.Loop() {
		var next, failed atomic.Int64
		var wg sync.WaitGroup
		for range 8 { // below the cold-fetch gate of one client (16)
			wg.Go(func() {
				for i := next.Add(1) - 1; i < int64(len(urls)); i = next.Add(1) - 1 {
					resp, err := client.Get(urls[i])
					if err != nil {
						failed.Add(1)
						continue
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK {
						failed.Add(1)
					}
				}
			})
		}
		wg.Wait()
		if n := failed.Load(); n > 0 {
			b.Errorf("%d of %d requests failed or were refused", n, len(urls))
		}
	}
	cache := metricOf(b, "http://"+m[1]+"/metrics", "robotsgate_robots_cache_bytes")
	if cache > 256<<20 {
		b.Errorf("the robots.txt cache holds %.0f bytes, above robots.cache_bytes (256 MiB)", cache)
	}
	b.ReportMetric(cache/(1<<20), "cache-MiB")
	peak := float64(peakRSS(b, p.cmd.Process.Pid))
	if soft := metricOf(b, "http://"+m[1]+"/metrics", "go_gc_gomemlimit_bytes"); soft < 1<<62 {
		b.ReportMetric(soft/(1<<20), "limit-MiB")
		// docs/benchmarks.md: the peak stays within 10 % of the limit
		// (the limit counts the Go runtime's memory, RSS also the binary).
		if peak > soft*1.10 {
			b.Errorf("peak RSS %.1f MiB, more than 10 %% above the soft limit %.1f MiB", peak/(1<<20), soft/(1<<20))
		}
	}
	b.ReportMetric(peak/(1<<20), "peak-RSS-MiB")
	b.ReportMetric(cpuSeconds(b, p.cmd.Process.Pid), "binary-cpu-s")
	b.ReportMetric(float64(origins), "origins")
}

// startBigRobotsOrigins starts n origins on 127.0.0.1, each answering
// /robots.txt with 500 KiB of rules of its own and anything else with
// 200, and returns a page URL of each. Connections are not kept alive:
// the test process holds one descriptor per origin, not two.
func startBigRobotsOrigins(tb testing.TB, n int) []string {
	tb.Helper()
	urls := make([]string, 0, n)
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			tb.Fatalf("listen (origin %d of %d): %v", len(urls)+1, n, err)
		}
		port := ln.Addr().(*net.TCPAddr).Port
		body := bigRobots(port)
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/robots.txt" {
				w.Write(body)
			}
		})}
		srv.SetKeepAlivesEnabled(false)
		go srv.Serve(ln)
		tb.Cleanup(func() { srv.Close() })
		urls = append(urls, fmt.Sprintf("http://127.0.0.1:%d/page", port))
	}
	return urls
}

// bigRobots is a robots.txt of 500 KiB (512,000 bytes, the most robotsgate
// judges) whose rules name the origin's port: no two origins share one.
func bigRobots(port int) []byte {
	var b strings.Builder
	b.WriteString("User-agent: *\nAllow: /page\n")
	for i := 0; b.Len() < 512_000-64; i++ {
		fmt.Fprintf(&b, "Disallow: /p%d/section-%d/\n", port, i)
	}
	return []byte(b.String())
}

// metricOf reads one unlabelled metric from a Prometheus text page.
func metricOf(tb testing.TB, url, name string) float64 {
	tb.Helper()
	resp, err := http.Get(url)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				tb.Fatalf("%s: %v", name, err)
			}
			return f
		}
	}
	tb.Fatalf("no %s in %s", name, url)
	return 0
}

// peakRSS is a process's peak resident set (VmHWM), in bytes.
func peakRSS(tb testing.TB, pid int) int64 {
	tb.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		tb.Fatal(err)
	}
	m := regexp.MustCompile(`VmHWM:\s+(\d+) kB`).FindSubmatch(data)
	if m == nil {
		tb.Fatalf("no VmHWM in /proc/%d/status", pid)
	}
	kb, _ := strconv.ParseInt(string(m[1]), 10, 64)
	return kb << 10
}

// cpuSeconds is the CPU time (user and system) a process has used, from
// /proc/PID/stat in clock ticks of 1/100 s (Linux's USER_HZ).
func cpuSeconds(tb testing.TB, pid int) float64 {
	tb.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		tb.Fatal(err)
	}
	// The fields after the command name, which is in parentheses and may
	// hold spaces: utime and stime are the 14th and 15th fields of the line.
	i := strings.LastIndexByte(string(data), ')')
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 13 {
		tb.Fatalf("/proc/%d/stat: %q", pid, data)
	}
	utime, _ := strconv.ParseFloat(f[11], 64)
	stime, _ := strconv.ParseFloat(f[12], 64)
	return (utime + stime) / 100
}
