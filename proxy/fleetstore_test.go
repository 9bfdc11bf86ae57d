package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/robotsgate/robotsgate/archive"
	"github.com/robotsgate/robotsgate/internal/redistest"
	"github.com/robotsgate/robotsgate/robots"
	"github.com/robotsgate/robotsgate/robots/resolver"
)

// hostileWriter is another client of the fleet's Redis, writing what it
// likes where robotsgate keeps its records.
type hostileWriter struct {
	t *testing.T
	c *redis.Client
}

func newHostileWriter(t *testing.T, srv *redistest.Server) hostileWriter {
	c := redis.NewClient(&redis.Options{Addr: srv.Addr, Protocol: 2, DisableIdentity: true})
	t.Cleanup(func() { c.Close() })
	return hostileWriter{t, c}
}

// record writes a robots.txt record of originURL with these fields.
func (h hostileWriter) record(originURL string, fields map[string]any) {
	h.t.Helper()
	data, err := json.Marshal(fields)
	if err != nil {
		h.t.Fatal(err)
	}
	if err := h.c.Set(context.Background(), "robotsgate:robots:{"+originURL+"}", data, time.Hour).Err(); err != nil {
		h.t.Fatal(err)
	}
}

// metric returns the value of sample in p's metrics.
func metric(t *testing.T, p *testProxy, sample string) string {
	t.Helper()
	rec := httptest.NewRecorder()
	p.srv.metrics.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	return metricValue(rec.Body.String(), sample)
}

// TestFleetFetchesOverCorruptSharedRobotsTxt: a robots.txt record another
// client wrote that no robotsgate could have written (an unknown status,
// an expiry in year 9999, a body of 20 MB) is not trusted: the instance
// fetches the origin's robots.txt as if the store were empty, once, obeys
// it, archives what it fetched, counts the record, and replaces it.
func TestFleetFetchesOverCorruptSharedRobotsTxt(t *testing.T) {
	srv := redistest.Start(t)
	hostile := newHostileWriter(t, srv)
	now := time.Now().UTC()
	year9999 := time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)
	allowAll := []byte("User-agent: *\nAllow: /\n")
	for _, tc := range []struct {
		name   string
		fields map[string]any
	}{
		{"an unknown status", map[string]any{"status": 7, "http_status": 200, "body": allowAll, "fetched_at": now, "expires": now.Add(time.Hour)}},
		{"unavailable (allow all) until year 9999", map[string]any{"status": int(resolver.Unavailable), "http_status": 404, "fetched_at": now, "expires": year9999}},
		{"a file until year 9999", map[string]any{"status": int(resolver.OK), "http_status": 200, "body": allowAll, "fetched_at": now, "expires": year9999}},
		{"a body of 20 MB", map[string]any{"status": int(resolver.OK), "http_status": 200, "fetched_at": now, "expires": now.Add(time.Hour),
			"body": append(append([]byte{}, allowAll...), bytes.Repeat([]byte("# padding\n"), 2e6)...)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := startOrigin(t, "127.0.0.2", false, testRobots, 0)
			cfg := fleetConfig(t, srv.Addr)
			hostile.record(o.URL, tc.fields)
			p := startProxy(t, cfg)
			for i := range 3 {
				if resp, _ := get(t, p.client(), o.URL+"/private/x"); resp.StatusCode != 403 {
					t.Fatalf("request %d: %d %s, want 403 by the origin's robots.txt", i, resp.StatusCode, resp.Header.Get("X-Robotsgate-Decision"))
				}
			}
			if n := strings.Count(strings.Join(o.seen(), " "), "/robots.txt"); n != 1 {
				t.Errorf("robots.txt fetched %d times, want 1", n)
			}
			if got := metric(t, p, `robotsgate_store_corrupt_records_total{store="robots"}`); got != "1" {
				t.Errorf("corrupt robots.txt records counted: %q, want 1", got)
			}
			p.srv.evidence.Archive().Close()
			fetches := readFetchLog(t, cfg.Archive.Dir)
			if len(fetches) != 1 || fetches[0].From != "" || fetches[0].SHA256 != archive.Sum([]byte(testRobots)) {
				t.Errorf("fetch log %+v, want one fetch of the origin's file", fetches)
			}
			var stored struct{ Status int }
			data, _ := hostile.c.Get(context.Background(), "robotsgate:robots:{"+o.URL+"}").Bytes()
			if json.Unmarshal(data, &stored); stored.Status != int(resolver.OK) {
				t.Errorf("the store holds %.80q after the fetch, want the fetched record", data)
			}
		})
	}
}

// TestFleetCutsAnOversizedSharedBody: a shared robots.txt body over the
// 500 KiB limit (but within a record's size) is cut to it before it is
// judged, hashed and archived; the record is counted as corrupt.
func TestFleetCutsAnOversizedSharedBody(t *testing.T) {
	srv := redistest.Start(t)
	hostile := newHostileWriter(t, srv)
	o := startOrigin(t, "127.0.0.2", false, testRobots, 0)
	cfg := fleetConfig(t, srv.Addr)
	body := append([]byte("User-agent: *\nDisallow: /private\n"), bytes.Repeat([]byte("# padding\n"), 1<<20/10)...)
	now := time.Now().UTC()
	hostile.record(o.URL, map[string]any{"status": int(resolver.OK), "http_status": 200, "body": body, "fetched_at": now, "expires": now.Add(time.Hour)})
	p := startProxy(t, cfg)
	if resp, _ := get(t, p.client(), o.URL+"/private/x"); resp.StatusCode != 403 {
		t.Fatalf("%d, want 403 by the shared file", resp.StatusCode)
	}
	if o.saw("/robots.txt") {
		t.Error("robots.txt fetched although the store held it")
	}
	p.srv.evidence.Archive().Close()
	fetches := readFetchLog(t, cfg.Archive.Dir)
	cut := body[:robots.MaxFileSize]
	if len(fetches) != 1 || fetches[0].From != "shared-store" || fetches[0].SHA256 != archive.Sum(cut) ||
		fetches[0].Size != robots.MaxFileSize || !fetches[0].Truncated {
		t.Errorf("fetch log %+v, want the first %d bytes from the shared store, truncated", fetches, robots.MaxFileSize)
	}
	if got := metric(t, p, `robotsgate_store_corrupt_records_total{store="robots"}`); got != "1" {
		t.Errorf("corrupt robots.txt records counted: %q, want 1", got)
	}
}

// TestFleetResetsCorruptPacingSlots: a pacing key another client set to a
// slot no instance could have reserved (228 years ahead, infinity, an
// exponent beyond float64) no longer refuses the origin's requests with
// 429 and a Retry-After of centuries: the next instance resets it, serves
// the request and counts the key.
func TestFleetResetsCorruptPacingSlots(t *testing.T) {
	srv := redistest.Start(t)
	hostile := newHostileWriter(t, srv)
	for _, value := range []string{"9000000000000000", "inf", "1e400"} {
		t.Run(value, func(t *testing.T) {
			o := startOrigin(t, "127.0.0.2", false, "User-agent: *\nCrawl-delay: 1\n", 0)
			cfg := fleetConfig(t, srv.Addr)
			if resp, _ := get(t, startProxy(t, cfg).client(), o.URL+"/page"); resp.StatusCode != 200 {
				t.Fatalf("first instance: %d", resp.StatusCode)
			}
			keys, err := hostile.c.Keys(context.Background(), "robotsgate:pacing:{"+o.URL+"}*").Result()
			if err != nil || len(keys) != 1 {
				t.Fatalf("pacing keys %q (%v), want one", keys, err)
			}
			hostile.c.Set(context.Background(), keys[0], value, time.Hour)
			b := startProxy(t, cfg)
			resp, _ := get(t, b.client(), o.URL+"/page")
			if resp.StatusCode != 200 {
				t.Errorf("second instance: %d with Retry-After %q, want 200", resp.StatusCode, resp.Header.Get("Retry-After"))
			}
			if got := metric(t, b, `robotsgate_store_corrupt_records_total{store="pacing"}`); got != "1" {
				t.Errorf("corrupt pacing keys counted: %q, want 1", got)
			}
			if !strings.Contains(b.logText(), "corrupt slot") {
				t.Errorf("the reset is not logged:\n%s", b.logText())
			}
		})
	}
}
