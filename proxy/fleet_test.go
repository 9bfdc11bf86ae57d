package proxy

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/robotsgate/robotsgate/archive"
	"github.com/robotsgate/robotsgate/config"
	"github.com/robotsgate/robotsgate/internal/redistest"
	"github.com/robotsgate/robotsgate/tdmrep"
)

// TestFleetFetchesRobotsTxtOnce: two instances sharing a Redis fetch an
// origin's robots.txt once between them.
func TestFleetFetchesRobotsTxtOnce(t *testing.T) {
	redis := redistest.Start(t)
	o := startOrigin(t, "127.0.0.2", false, testRobots, 0)
	cfg := testConfig(t, nil)
	cfg.Pacing.Store = config.StoreRedis
	cfg.Pacing.Redis.Addr = redis.Addr
	a, b := startProxy(t, cfg), startProxy(t, cfg)
	if resp, _ := get(t, a.client(), o.URL+"/private/x"); resp.StatusCode != 403 {
		t.Fatalf("first instance: %d", resp.StatusCode)
	}
	if resp, _ := get(t, b.client(), o.URL+"/private/x"); resp.StatusCode != 403 {
		t.Fatalf("second instance: %d", resp.StatusCode)
	}
	fetches := 0
	for _, target := range o.seen() {
		if target == "/robots.txt" {
			fetches++
		}
	}
	if fetches != 1 {
		t.Errorf("robots.txt fetched %d times by two instances sharing Redis, want 1", fetches)
	}
}

// TestFleetFetchesTDMRepOnce: two instances sharing a Redis fetch an
// origin's tdmrep.json once between them, and both refuse the reserved
// page by it; the second archives the file as received from the store.
func TestFleetFetchesTDMRepOnce(t *testing.T) {
	redis := redistest.Start(t)
	o := startTDMOrigin(t, "127.0.0.2", false, 200)
	cfg := testConfig(t, nil)
	cfg.Pacing.Store = config.StoreRedis
	cfg.Pacing.Redis.Addr = redis.Addr
	purposes(&cfg, "train-ai")
	a := startProxy(t, cfg)
	cfg.Archive.Dir = filepath.Join(t.TempDir(), "archive-b")
	b := startProxy(t, cfg)
	for i, p := range []*testProxy{a, b} {
		resp, body := get(t, p.client(), o.URL+"/private/page")
		checkRefusal(t, resp, 403, "usage-denied", "http_request_denied")
		if !strings.Contains(body, `tdmrep.json[1] (location "/private/")`) {
			t.Errorf("instance %d: %s", i, body)
		}
	}
	if n := o.saw(tdmrep.Path); n != 1 {
		t.Errorf("tdmrep.json fetched %d times by two instances sharing Redis, want 1", n)
	}
	b.srv.evidence.Archive().Close()
	var shared []archive.Fetch
	for _, f := range readFetchLog(t, cfg.Archive.Dir) {
		if strings.HasSuffix(f.RobotsURL, tdmrep.Path) {
			shared = append(shared, f)
		}
	}
	if len(shared) != 1 || shared[0].From != "shared-store" || shared[0].SHA256 != archive.Sum([]byte(proxyTDMRep)) {
		t.Errorf("the second instance's tdmrep.json fetch lines: %+v", shared)
	}
}
