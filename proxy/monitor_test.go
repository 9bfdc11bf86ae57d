package proxy

import (
	"net/http"
	"strings"
	"testing"

	"github.com/robotsgate/robotsgate/admin"
	"github.com/robotsgate/robotsgate/config"
)

// A monitor-mode client's would-be refusal is its own kind everywhere the
// proxy counts: the status page's decisions (a row of kind monitored, not
// a disallow), its recent refusals (listed, marked as forwarded), the
// requests metric (decision "monitored") and the monitored metric (by the
// decision it would have been); with monitor_header the client's response
// says what would have been refused, and without it nothing is added.
func TestMonitorModeIsItsOwnKind(t *testing.T) {
	for _, header := range []bool{true, false} {
		o := startOrigin(t, "127.0.0.2", false, testRobots, 0)
		cfg := testConfig(t, nil)
		cfg.Clients = []config.Client{{CIDR: "127.0.0.0/8", Mode: config.ModeMonitor, MonitorHeader: header}}
		p := startProxy(t, cfg)
		adminURL := startAdmin(t, p)
		resp, body := get(t, p.client(), o.URL+"/private/x")
		would := resp.Header.Get("X-Robotsgate-Would-Refuse")
		const want = `disallow; status=403; details="disallow: Disallow: /private (line 2)"`
		if resp.StatusCode != 200 || body != "target=/private/x" || header && would != want || !header && would != "" {
			t.Errorf("monitor_header %v: %d %q, X-Robotsgate-Would-Refuse %q; want the page and %q", header, resp.StatusCode, body, would, map[bool]string{true: want}[header])
		}
		if resp, _ := get(t, p.client(), o.URL+"/public"); resp.Header.Get("X-Robotsgate-Would-Refuse") != "" {
			t.Errorf("an allowed request says it would be refused: %q", resp.Header.Get("X-Robotsgate-Would-Refuse"))
		}
		if !header {
			continue
		}

		_, page := adminGet(t, adminURL, "/")
		rows := tableText(t, page, "decisions")
		var disallow [][]string
		for _, r := range rows[1:] {
			if r[0] == "disallow" {
				disallow = append(disallow, r)
			}
		}
		if len(disallow) != 2 || strings.Join(disallow[0], "|") != "disallow|refused|403|0" ||
			strings.Join(disallow[1], "|") != "disallow|"+admin.KindMonitored+"|(403)|1" {
			t.Errorf("decisions rows of disallow: %q; want the refusals at 0 and a monitored row at 1", disallow)
		}
		recent := tableText(t, page, "recent")
		if len(recent) != 2 || !strings.Contains(strings.Join(recent[1], "|"), "disallow (monitor mode: would refuse; forwarded)|Disallow: /private (line 2)") {
			t.Errorf("recent refusals %q; want the monitored one, marked", recent)
		}
		_, m := adminGet(t, adminURL, "/metrics")
		for sample, want := range map[string]string{
			`robotsgate_requests_total{decision="monitored",method="GET"}`: "1",
			`robotsgate_requests_total{decision="disallow",method="GET"}`:  "0",
			`robotsgate_requests_total{decision="allow",method="GET"}`:     "1",
			`robotsgate_monitored_requests_total{decision="disallow"}`:     "1",
		} {
			if got := metricValue(m, sample); got != want {
				t.Errorf("%s = %q, want %s", sample, got, want)
			}
		}
	}
}

// A response a signal would withhold from a monitored client is
// delivered, saying so with monitor_header.
func TestMonitorHeaderOnAResponseSignal(t *testing.T) {
	o := startSignalOrigin(t, "127.0.0.2", false)
	cfg := testConfig(t, nil)
	cfg.Clients = []config.Client{{CIDR: "127.0.0.0/8", Mode: config.ModeMonitor, MonitorHeader: true, Purposes: []string{"train-ai"}}}
	cfg.Usage.ScanHTML = true
	p := startProxy(t, cfg)
	resp, _ := rawGet(t, p.client(), http.MethodGet, o.URL+"/meta", "Bot")
	would := resp.Header.Get("X-Robotsgate-Would-Refuse")
	if resp.StatusCode != 200 || !strings.HasPrefix(would, "usage-denied; status=403; details=") || !strings.Contains(would, "train-ai") {
		t.Errorf("%d, X-Robotsgate-Would-Refuse %q; want the page and usage-denied naming train-ai", resp.StatusCode, would)
	}
}
