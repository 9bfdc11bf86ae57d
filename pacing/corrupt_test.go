package pacing

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisNow returns Redis' clock in microseconds, the unit of its keys.
func redisNow(t *testing.T, raw *redis.Client) int64 {
	t.Helper()
	now, err := raw.Time(context.Background()).Result()
	if err != nil {
		t.Fatal(err)
	}
	return now.UnixMicro()
}

// TestRedisResetsCorruptSlots: a key another client wrote with a slot no
// pacer can reserve (further ahead than any interval, infinite, not a
// number, not even a string) is reset as if absent, counted and logged,
// instead of refusing the key's requests for centuries or failing the
// store; a slot far ahead but within the bound is kept.
func TestRedisResetsCorruptSlots(t *testing.T) {
	t.Parallel()
	srv := startRedis(t)
	raw := rawClient(t, srv)
	const bound = time.Hour
	const key = DefaultRedisKeyPrefix + "{k}"
	set := func(v string) func(now int64) error {
		return func(int64) error { return raw.Set(context.Background(), key, v, 0).Err() }
	}
	ahead := func(d time.Duration) func(now int64) error {
		return func(now int64) error {
			return raw.Set(context.Background(), key, strconv.FormatInt(now+d.Microseconds(), 10), 0).Err()
		}
	}
	for _, tc := range []struct {
		name    string
		write   func(now int64) error
		corrupt bool
	}{
		{"228 years ahead", set("9000000000000000"), true},
		{"infinity", set("inf"), true},
		{"an exponent beyond float64", set("1e400"), true},
		{"not a number", set("nan"), true},
		{"text", set("robotsgate"), true},
		{"a hash, not a string", func(int64) error {
			raw.Del(context.Background(), key)
			return raw.HSet(context.Background(), key, "next", "1").Err()
		}, true},
		{"just beyond the bound", ahead(bound + time.Minute), true},
		{"far ahead but within the bound", ahead(bound - time.Minute), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := raw.FlushAll(context.Background()).Err(); err != nil {
				t.Fatal(err)
			}
			var log strings.Builder
			r, err := NewRedis(RedisOptions{Addr: srv.Addr, MaxAhead: bound, Logger: slog.New(slog.NewTextHandler(&log, nil))})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if err := tc.write(redisNow(t, raw)); err != nil {
				t.Fatal(err)
			}
			res, err := r.Reserve(context.Background(), "k", time.Second, time.Minute)
			if err != nil {
				t.Fatalf("Reserve: %v", err)
			}
			if !tc.corrupt {
				between(t, "RetryAfter of a kept slot", res.RetryAfter, bound-2*time.Minute-elapsedSlack, bound-2*time.Minute)
				if res.Granted || r.Corrupted() != 0 {
					t.Errorf("a slot within the bound: %+v, %d corrupt; want refused, none corrupt", res, r.Corrupted())
				}
				return
			}
			if !res.Granted || res.Wait != 0 || r.Corrupted() != 1 {
				t.Fatalf("after a corrupt slot: %+v, %d corrupt; want granted at once, 1 corrupt", res, r.Corrupted())
			}
			next, err := raw.Get(context.Background(), key).Int64()
			if ahead := time.Duration(next-redisNow(t, raw)) * time.Microsecond; err != nil || ahead > time.Second {
				t.Errorf("the key after the reset: %d (%v), %v ahead; want this reservation's next", next, err, ahead)
			}
			if err := tc.write(redisNow(t, raw)); err != nil {
				t.Fatal(err)
			}
			if d, err := r.Pending(context.Background(), "k"); err != nil || d != 0 || r.Corrupted() != 2 {
				t.Errorf("Pending of a corrupt slot: %v, %v, %d corrupt; want 0, reset, 2 corrupt", d, err, r.Corrupted())
			}
			if n, _ := raw.Exists(context.Background(), key).Result(); n != 0 {
				t.Errorf("Pending left the corrupt key in place")
			}
			if lines := strings.Count(log.String(), "corrupt slot"); lines != 1 || !strings.Contains(log.String(), "key="+key) {
				t.Errorf("two corrupt keys in a row logged %d lines, want 1 naming %s:\n%s", lines, key, log.String())
			}
		})
	}
}

// TestPacersRaiseTheCorruptBoundOnly: each pacer built on a store declares
// its longest interval plus padding and maxWait; a pacer with shorter
// limits (a reload) does not lower the bound, so slots reserved under the
// earlier limits are not taken for corrupt.
func TestPacersRaiseTheCorruptBoundOnly(t *testing.T) {
	srv := startRedis(t)
	r := newRedisStore(t, srv)
	f, err := NewFallback(r, FallbackOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := r.MaxAhead(); got != DefaultRedisMaxAhead {
		t.Fatalf("bound before any pacer: %v, want %v", got, DefaultRedisMaxAhead)
	}
	steps := []struct {
		longest, maxWait, want time.Duration
	}{
		{time.Hour, time.Minute, time.Hour + DefaultPadding + time.Minute + boundSlack},
		{30 * time.Second, 0, time.Hour + DefaultPadding + time.Minute + boundSlack},
		{2 * time.Hour, 0, 2*time.Hour + DefaultPadding + boundSlack},
		{100 * MaxInterval, 100 * MaxInterval, DefaultRedisMaxAhead},
	}
	for _, s := range steps {
		New(Options{Store: f, LongestInterval: s.longest, MaxWait: s.maxWait})
		if got := r.MaxAhead(); got != s.want {
			t.Errorf("after a pacer with longest interval %v and max wait %v: bound %v, want %v", s.longest, s.maxWait, got, s.want)
		}
	}
}
