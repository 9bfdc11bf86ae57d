package main

import (
	"strings"
	"testing"
	"time"
)

func testReport() *report {
	return &report{
		header: []string{"header"},
		columns: []column{
			{name: "privoxy", title: "Privoxy 3.0.34", rssKiB: 5 * 1024},
			{name: "goproxy", title: "goproxy 1.9.2 tuned"},
			{name: "nethttp", title: "net/http floor"},
			{name: "robotsgate", title: "robotsgate (defaults: audit on)"},
			{name: "robotsgate-noaudit", title: "robotsgate, `log.audit: \"\"`"},
		},
		modes:  modes[:3],
		rounds: []round{{1, "1.00 1.00 1.00", "2.00 1.00 1.00"}, {2, "2.00 1.00 1.00", "1.50 1.00 1.00"}},
		samples: []sample{
			// Two rounds: the median of the rates, the CPU of all requests.
			{round: 1, setup: "privoxy", mode: "http-keepalive", res: loadResult{ok: 200000, seconds: 8}, cpuTicks: 800},
			{round: 2, setup: "privoxy", mode: "http-keepalive", res: loadResult{ok: 180000, seconds: 8}, cpuTicks: 800},
			{round: 1, setup: "goproxy", mode: "http-keepalive", res: loadResult{ok: 160000, seconds: 8}, cpuTicks: 800},
			{round: 1, setup: "nethttp", mode: "http-keepalive", res: loadResult{ok: 216000, seconds: 8}, cpuTicks: 700},
			{round: 1, setup: "robotsgate", mode: "http-keepalive", res: loadResult{ok: 143664, seconds: 8, p50: 130 * time.Microsecond, p99: 900 * time.Microsecond}, cpuTicks: 800},
			{round: 1, setup: "robotsgate-noaudit", mode: "http-keepalive", res: loadResult{ok: 160000, seconds: 8}, cpuTicks: 700},
			{round: 1, setup: "privoxy", mode: "http-1conn", res: loadResult{ok: 1}, fail: "3 bad responses"},
			{round: 1, setup: "goproxy", mode: "https-keepalive", res: loadResult{ok: 80000, seconds: 8}, cpuTicks: 800},
			{round: 1, setup: "robotsgate", mode: "https-keepalive", res: loadResult{ok: 96000, seconds: 8}, cpuTicks: 800},
		},
	}
}

func TestCellsTakeTheMedianRateAndCPUOverAllRequests(t *testing.T) {
	c := testReport().cells()["privoxy"]["http-keepalive"]
	if c.rate != 23750 { // (25,000 + 22,500) / 2
		t.Errorf("rate = %v, want 23750", c.rate)
	}
	// 1,600 ticks of 10 ms over 380,000 requests.
	if want := 16 * time.Second / 380000; c.cpu != want {
		t.Errorf("cpu = %v, want %v", c.cpu, want)
	}
}

func TestWriteShowsTheIssueShape(t *testing.T) {
	var b strings.Builder
	testReport().write(&b)
	out := b.String()
	for _, want := range []string{
		"| plain HTTP keep-alive, req/s | 23,750 | 20,000 | **27,000** | 17,958 (0.76x Privoxy) | 20,000 (0.84x Privoxy) |",
		// The floor: what net/http allows against the same peer.
		"| plain HTTP keep-alive ≥ 1.2x Privoxy | 0.76x | no | 1.14x |",
		// A run that failed its checks is no number.
		"| plain HTTP, 1 connection (hop latency), req/s | FAILED | — |",
		// Privoxy does not intercept: no cell; robotsgate against goproxy there.
		"| intercepted HTTPS keep-alive, req/s | — | 10,000 | — | **12,000** (1.20x goproxy) | — |",
		"| peak RSS (VmHWM) at the end, MiB | 5.0 | ? | ? |",
		"| robotsgate (defaults: audit on) | plain HTTP keep-alive | 0.76x | 0.90x | 0.67x | — | 0.90x |",
		"| intercepted keep-alive ≥ 1.2x tuned goproxy | 1.20x | yes | — |",
		"| audit log on costs ≤ 5 % (plain HTTP keep-alive) | 0.90x | no | — |",
		"- round 2: load average 2.00 1.00 1.00 before, 1.50 1.00 1.00 after",
		"| 1 | plain HTTP, 1 connection (hop latency) | Privoxy 3.0.34 | 0 | 0.00 / 0.00 | 0 | 1 | FAILED: 3 bad responses |",
	} {
		if !strings.Contains(out, want+"\n") && !strings.Contains(out, want) {
			t.Errorf("report lacks %q\n%s", want, out)
		}
	}
}

func TestThousands(t *testing.T) {
	for x, want := range map[float64]string{0: "0", 999.4: "999", 999.5: "1,000", 23246.2: "23,246", 1234567: "1,234,567"} {
		if got := thousands(x); got != want {
			t.Errorf("thousands(%v) = %q, want %q", x, got, want)
		}
	}
}
