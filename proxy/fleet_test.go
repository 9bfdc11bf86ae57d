package proxy

import (
	"testing"

	"github.com/robotsgate/robotsgate/config"
	"github.com/robotsgate/robotsgate/internal/redistest"
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
