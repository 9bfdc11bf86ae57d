package fleet

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/robotsgate/robotsgate/internal/redistest"
	"github.com/robotsgate/robotsgate/origin"
	"github.com/robotsgate/robotsgate/robots"
	"github.com/robotsgate/robotsgate/robots/resolver"
)

// TestMain silences go-redis' own log.
func TestMain(m *testing.M) {
	redistest.Quiet()
	os.Exit(m.Run())
}

// hostile is a record as another client of the same Redis may write it:
// any status, times and body.
type hostile struct {
	Status     int       `json:"status"`
	HTTPStatus int       `json:"http_status"`
	URL        string    `json:"url"`
	Body       []byte    `json:"body"`
	FetchedAt  time.Time `json:"fetched_at"`
	Expires    time.Time `json:"expires"`
}

// encode returns h as JSON.
func (h hostile) encode(t *testing.T) []byte {
	t.Helper()
	data, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestLoadRecordDistrustsWhatAnotherClientWrote: records another client
// wrote to the store are checked as a robotsgate would have written them.
// Corrupt ones (unknown status, impossible times, undecodable, too long,
// another type) are not loaded and are counted; a clock running ahead is
// clamped to robots.max_ttl from now; a body over the size limit is cut
// to it before anyone hashes or archives it (and counted).
func TestLoadRecordDistrustsWhatAnotherClientWrote(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	raw := redis.NewClient(&redis.Options{Addr: srv.Addr, Protocol: 2, DisableIdentity: true})
	t.Cleanup(func() { raw.Close() })
	o, _ := origin.Parse("http://hostile.example")
	key := DefaultKeyPrefix + "{" + o.String() + "}"
	const maxTTL = 24 * time.Hour
	now := time.Now()
	year9999 := time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)
	okBody := []byte("User-agent: *\nDisallow: /private\n")
	honest := hostile{Status: int(resolver.OK), HTTPStatus: 200, Body: okBody, FetchedAt: now, Expires: now.Add(time.Hour)}
	with := func(change func(*hostile)) hostile { h := honest; change(&h); return h }
	put := func(h hostile) func(*testing.T) {
		return func(t *testing.T) { raw.Set(context.Background(), key, h.encode(t), 0) }
	}
	putRaw := func(v string) func(*testing.T) { return func(*testing.T) { raw.Set(context.Background(), key, v, 0) } }
	// loaded is what an accepted record becomes; nil: not loaded.
	type loaded struct {
		expires   time.Time
		bodyLen   int
		truncated bool
	}
	kept := &loaded{honest.Expires, len(okBody), false}
	for _, tc := range []struct {
		name    string
		write   func(*testing.T)
		want    *loaded
		corrupt uint64
	}{
		{name: "an honest record", write: put(honest), want: kept},
		{name: "an honest 4xx record", write: put(with(func(h *hostile) { h.Status, h.HTTPStatus, h.Body = int(resolver.Unavailable), 404, nil })),
			want: &loaded{honest.Expires, 0, false}},
		{name: "no record", write: func(*testing.T) {}},
		{name: "an expired record", write: put(with(func(h *hostile) { h.FetchedAt, h.Expires = now.Add(-2*time.Hour), now.Add(-time.Hour) }))},
		{name: "status 0", write: put(with(func(h *hostile) { h.Status = 0 })), corrupt: 1},
		{name: "status unreachable, never stored", write: put(with(func(h *hostile) { h.Status = int(resolver.Unreachable) })), corrupt: 1},
		{name: "an unknown status", write: put(with(func(h *hostile) { h.Status = 7 })), corrupt: 1},
		{name: "unavailable until year 9999", write: put(with(func(h *hostile) { h.Status, h.Expires = int(resolver.Unavailable), year9999 })), corrupt: 1},
		{name: "fetched and expiring in year 9999", write: put(with(func(h *hostile) { h.FetchedAt, h.Expires = year9999.Add(-time.Hour), year9999 })), corrupt: 1},
		{name: "no fetch time", write: put(with(func(h *hostile) { h.FetchedAt = time.Time{} })), corrupt: 1},
		{name: "expiring before its fetch", write: put(with(func(h *hostile) { h.FetchedAt = now.Add(2 * time.Hour) })), corrupt: 1},
		{name: "fresh longer than robots.max_ttl", write: put(with(func(h *hostile) { h.FetchedAt, h.Expires = now.Add(-time.Minute), now.Add(maxTTL) })), corrupt: 1},
		{name: "an HTTP status beyond 599", write: put(with(func(h *hostile) { h.HTTPStatus = 1000 })), corrupt: 1},
		{name: "a URL longer than a header", write: put(with(func(h *hostile) { h.URL = "http://hostile.example/" + strings.Repeat("a", 70<<10) })), corrupt: 1},
		{name: "a writer whose clock runs two hours ahead", write: put(with(func(h *hostile) { h.FetchedAt, h.Expires = now.Add(2*time.Hour), now.Add(2*time.Hour+maxTTL) })),
			want: &loaded{now.Add(maxTTL), len(okBody), false}},
		{name: "a body of 1 MiB", write: put(with(func(h *hostile) { h.Body = bytes.Repeat([]byte("# padding\n"), 1<<20/10) })),
			want: &loaded{honest.Expires, robots.MaxFileSize, true}, corrupt: 1},
		{name: "a body of 20 MB", write: put(with(func(h *hostile) { h.Body = bytes.Repeat([]byte("# padding\n"), 2e6) })), corrupt: 1},
		{name: "not JSON", write: putRaw("robotsgate"), corrupt: 1},
		{name: "a status that is not a number", write: putRaw(`{"status":"ok"}`), corrupt: 1},
		{name: "a hash, not a string", write: func(*testing.T) { raw.HSet(context.Background(), key, "status", 1) }, corrupt: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw.Del(context.Background(), key)
			store, err := NewRobotsStore(RobotsOptions{Addr: srv.Addr})
			if err != nil {
				t.Fatal(err)
			}
			defer store.Close()
			tc.write(t)
			rec, ok := resolver.LoadRecord(context.Background(), store, o, now, maxTTL, "robots.txt")
			if ok != (tc.want != nil) || store.Corrupted() != tc.corrupt {
				t.Fatalf("loaded %v with %d corrupt; want loaded %v with %d corrupt", ok, store.Corrupted(), tc.want != nil, tc.corrupt)
			}
			if !ok {
				return
			}
			got := loaded{rec.Expires, len(rec.Body), rec.Truncated}
			if !got.expires.Equal(tc.want.expires) || got.bodyLen != tc.want.bodyLen || got.truncated != tc.want.truncated {
				t.Errorf("loaded %+v, want %+v", got, *tc.want)
			}
		})
	}
}

// TestRobotsStoreRoundTrip: what a robotsgate saves it loads back whole,
// and the key expires with the record.
func TestRobotsStoreRoundTrip(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	store, err := NewRobotsStore(RobotsOptions{Addr: srv.Addr, KeyPrefix: "fleet-a:robots:"})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	o, _ := origin.Parse("https://example.com")
	now := time.Now()
	rec := resolver.Record{Status: resolver.OK, HTTPStatus: 200, URL: "https://www.example.com/robots.txt",
		Body: bytes.Repeat([]byte("a"), robots.MaxFileSize), FetchedAt: now, Expires: now.Add(time.Hour)}
	if err := store.Save(context.Background(), o, rec); err != nil {
		t.Fatal(err)
	}
	got, ok := resolver.LoadRecord(context.Background(), store, o, now, time.Hour, "robots.txt")
	if !ok || got.Status != rec.Status || got.URL != rec.URL || !bytes.Equal(got.Body, rec.Body) ||
		!got.FetchedAt.Equal(rec.FetchedAt) || !got.Expires.Equal(rec.Expires) || store.Corrupted() != 0 {
		t.Fatalf("loaded %v, %d corrupt: %+v", ok, store.Corrupted(), got.Status)
	}
	raw := redis.NewClient(&redis.Options{Addr: srv.Addr, Protocol: 2, DisableIdentity: true})
	defer raw.Close()
	if ttl := raw.PTTL(context.Background(), "fleet-a:robots:{"+o.String()+"}").Val(); ttl <= 0 || ttl > time.Hour {
		t.Errorf("key TTL %v, want the record's freshness", ttl)
	}
}
