package pacing

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// A fleet shares the governor's state through the Redis of the pacing
// store: each origin's pause and failures in a row in a hash (prefix +
// "pause:{" + origin + "}") that expires a quiet pacing.backoff.max after
// it ends, computed by one script on Redis' clock (so the instances'
// clocks need not agree), and every
// change published on one channel (prefix + "governor"), which each
// instance applies to its own copy: a request's check stays in memory.
// Times cross the channel as durations from Redis' now, and become local
// times on arrival. An instance that (re)subscribes reads every pause
// there is. Response times travel on the channel only: an instance that
// starts learns them from the next answers.

// governorChannel is the channel's name after the key prefix.
const governorChannel = "governor"

// pauseKeyPrefix is what comes between the key prefix and the origin.
const pauseKeyPrefix = "pause:"

// pauseScript records a pausing answer. KEYS[1] is the origin's hash;
// ARGV: the Retry-After in µs (-1: none), initial and max in µs, factor,
// jitter, status, Retry-After as sent, the channel, the origin, the bound
// of a Retry-After in µs, the failures in a row that made it a pausing
// answer (0: none). It applies step's arithmetic and returns {left,
// streak}: µs until the pause ends, and the answers in a row.
var pauseScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local h = redis.call('HMGET', KEYS[1], 'until', 'at', 'streak')
local prevUntil = tonumber(h[1]) or 0
local prevAt = tonumber(h[2]) or 0
local streak = tonumber(h[3]) or 0
local maxp = tonumber(ARGV[3])
local s = 1
if streak > 0 and now - prevAt < maxp then s = streak + 1 end
local pause = tonumber(ARGV[1])
if pause < 0 then
  pause = tonumber(ARGV[2]) * math.pow(tonumber(ARGV[4]), s - 1) * (1 + tonumber(ARGV[5]))
  if pause > maxp then pause = maxp end
elseif pause > tonumber(ARGV[10]) then
  pause = tonumber(ARGV[10])
end
local untilT = math.floor(now + pause)
if prevUntil > untilT then untilT = prevUntil end
redis.call('HSET', KEYS[1], 'until', string.format('%d', untilT), 'at', string.format('%d', now), 'streak', s,
  'status', ARGV[6], 'ra', ARGV[7], 'pfails', ARGV[11])
redis.call('PEXPIRE', KEYS[1], math.floor((untilT - now + maxp) / 1000) + 1)
redis.call('PUBLISH', ARGV[8], cjson.encode({op = 'pause', origin = ARGV[9], left = untilT - now, ago = 0,
  streak = s, status = tonumber(ARGV[6]), ra = ARGV[7], fails = tonumber(ARGV[11])}))
return {untilT - now, s}
`)

// failScript counts a failure in KEYS[1]: a new count when the last came
// max or more ago (on Redis' clock), kept at least max; ARGV: max in µs,
// the channel, the origin. It tells the fleet and returns the failures in
// a row.
var failScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local h = redis.call('HMGET', KEYS[1], 'fails', 'failat')
local n = tonumber(h[1]) or 0
local at = tonumber(h[2]) or 0
local maxp = tonumber(ARGV[1])
if n == 0 or now - at >= maxp then n = 0 end
n = n + 1
redis.call('HSET', KEYS[1], 'fails', n, 'failat', string.format('%d', now))
local keep = math.floor(maxp / 1000) + 1
if redis.call('PTTL', KEYS[1]) < keep then redis.call('PEXPIRE', KEYS[1], keep) end
redis.call('PUBLISH', ARGV[2], cjson.encode({op = 'fail', origin = ARGV[3], fails = n}))
return n
`)

// readPauseScript returns {left, ago, streak, status, ra, failures} of
// KEYS[1]: µs until its pause ends and since its answer, on Redis' clock;
// {} when there is none.
var readPauseScript = redis.NewScript(`
local h = redis.call('HMGET', KEYS[1], 'until', 'at', 'streak', 'status', 'ra', 'pfails')
if not h[1] then return {} end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
return {tonumber(h[1]) - now, now - tonumber(h[2]), tonumber(h[3]), tonumber(h[4]), h[5], tonumber(h[6]) or 0}
`)

// succeedScript ends KEYS[1]'s series and failures in a row, if it has
// them, and tells the fleet; ARGV: the channel, the origin.
var succeedScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 1 then
  redis.call('HSET', KEYS[1], 'streak', 0, 'fails', 0)
end
redis.call('PUBLISH', ARGV[1], cjson.encode({op = 'succeed', origin = ARGV[2]}))
return 1
`)

// governorMessage is what travels on the channel.
type governorMessage struct {
	Op     string  `json:"op"` // pause, fail, succeed, sample, clear
	Origin string  `json:"origin"`
	Left   float64 `json:"left,omitempty"` // µs until the pause ends
	Ago    float64 `json:"ago,omitempty"`  // µs since its answer
	Streak int     `json:"streak,omitempty"`
	Status int     `json:"status,omitempty"`
	RA     string  `json:"ra,omitempty"`
	Fails  int     `json:"fails,omitempty"`  // failures in a row (fail), or that paused (pause)
	Sample int64   `json:"sample,omitempty"` // a response time, µs
}

// GovernorShared returns the Shared store of a governor on this Redis.
func (r *Redis) GovernorShared() Shared { return redisGovernor{r} }

type redisGovernor struct{ r *Redis }

func (g redisGovernor) channel() string { return g.r.prefix + governorChannel }
func (g redisGovernor) key(origin string) string {
	return g.r.prefix + pauseKeyPrefix + slotKey(origin)
}

// Pause implements Shared.
func (g redisGovernor) Pause(ctx context.Context, origin string, a Answer, ra time.Duration, hasRA bool, params *BackoffParams, jitter float64, failures int) (Pause, error) {
	raUS := int64(-1)
	if hasRA {
		raUS = micros(ra)
	}
	vals, err := pauseScript.Run(ctx, g.r.client, []string{g.key(origin)}, raUS, micros(params.Initial), micros(params.Max),
		params.Factor, jitter, a.Status, clipHeader(a.RetryAfter), g.channel(), origin, micros(params.retryAfterCap()), failures).Int64Slice()
	if err == nil && len(vals) != 2 {
		err = fmt.Errorf("unexpected reply %v", vals)
	}
	if err != nil {
		return Pause{}, fmt.Errorf("pacing: redis pause %q: %w", origin, err)
	}
	return Pause{Until: a.At.Add(time.Duration(vals[0]) * time.Microsecond), Status: a.Status,
		RetryAfter: clipHeader(a.RetryAfter), At: a.At, Streak: int(vals[1]), Failures: failures}, nil
}

// Fail implements Shared.
func (g redisGovernor) Fail(ctx context.Context, origin string, params *BackoffParams) (int, error) {
	n, err := failScript.Run(ctx, g.r.client, []string{g.key(origin)}, micros(params.Max), g.channel(), origin).Int64()
	if err != nil {
		return 0, fmt.Errorf("pacing: redis fail %q: %w", origin, err)
	}
	return int(n), nil
}

// Succeed implements Shared.
func (g redisGovernor) Succeed(ctx context.Context, origin string) error {
	if err := succeedScript.Run(ctx, g.r.client, []string{g.key(origin)}, g.channel(), origin).Err(); err != nil {
		return fmt.Errorf("pacing: redis succeed %q: %w", origin, err)
	}
	return nil
}

// Sample implements Shared.
func (g redisGovernor) Sample(ctx context.Context, origin string, d time.Duration) error {
	return g.publish(ctx, governorMessage{Op: "sample", Origin: origin, Sample: micros(d)})
}

// Clear implements Shared.
func (g redisGovernor) Clear(ctx context.Context, origin string) error {
	if err := g.r.client.Del(ctx, g.key(origin)).Err(); err != nil {
		return fmt.Errorf("pacing: redis clear %q: %w", origin, err)
	}
	return g.publish(ctx, governorMessage{Op: "clear", Origin: origin})
}

func (g redisGovernor) publish(ctx context.Context, m governorMessage) error {
	data, _ := json.Marshal(m)
	if err := g.r.client.Publish(ctx, g.channel(), data).Err(); err != nil {
		return fmt.Errorf("pacing: redis publish %s %q: %w", m.Op, m.Origin, err)
	}
	return nil
}

// Follow applies to gov what every instance of the fleet publishes, until
// ctx is done: it subscribes to the channel and, on every (re)subscription,
// first reads every pause in Redis. It returns when ctx is done; a Redis
// that fails is retried every second. ready, if not nil, is called once,
// when the pauses have first been read or the first attempt failed.
func (r *Redis) Follow(ctx context.Context, gov *Governor, ready func()) {
	g := redisGovernor{r}
	var once sync.Once
	first := func() {
		if ready != nil {
			once.Do(ready)
		}
	}
	defer first()
	ps := r.client.Subscribe(ctx, g.channel())
	// A blocked Receive does not watch ctx: closing the subscription ends it.
	stop := context.AfterFunc(ctx, func() { ps.Close() })
	defer stop()
	defer ps.Close()
	for ctx.Err() == nil {
		msg, err := ps.Receive(ctx)
		if err != nil {
			first()
			if ctx.Err() == nil {
				slog.Debug("pacing: governor channel", "err", err)
				_ = sleep(ctx, time.Second)
			}
			continue
		}
		switch m := msg.(type) {
		case *redis.Subscription:
			if m.Kind == "subscribe" {
				g.resync(ctx, gov)
				first()
				if r.resynced != nil {
					r.resynced()
				}
			}
		case *redis.Message:
			g.apply(gov, m.Payload)
		}
	}
}

// apply makes one message of the channel part of gov's state.
func (g redisGovernor) apply(gov *Governor, payload string) {
	var m governorMessage
	if err := json.Unmarshal([]byte(payload), &m); err != nil || m.Origin == "" {
		return
	}
	now := gov.now()
	switch m.Op {
	case "pause":
		gov.Apply(m.Origin, Pause{Until: now.Add(usec(m.Left)), At: now.Add(-usec(m.Ago)), Streak: m.Streak,
			Status: m.Status, RetryAfter: clipHeader(m.RA), Failures: m.Fails})
	case "fail":
		if m.Fails > 0 {
			gov.Failed(m.Origin, m.Fails, now)
		}
	case "succeed":
		gov.Succeeded(m.Origin)
	case "sample":
		if m.Sample > 0 {
			gov.Sampled(m.Origin, time.Duration(m.Sample)*time.Microsecond)
		}
	case "clear":
		gov.Cleared(m.Origin)
	}
}

// resync reads every pause in Redis into gov (after a (re)subscription,
// messages may have been missed): on each primary of a Cluster, since
// SCAN walks one node's keys.
func (g redisGovernor) resync(ctx context.Context, gov *Governor) {
	var err error
	if cc, ok := g.r.client.(*redis.ClusterClient); ok {
		err = cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
			return g.resyncNode(ctx, c, gov)
		})
	} else {
		err = g.resyncNode(ctx, g.r.client, gov)
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		slog.Warn("pacing: could not read the fleet's pauses", "err", err)
	}
}

// resyncNode reads the pauses that node holds into gov.
func (g redisGovernor) resyncNode(ctx context.Context, node redis.Cmdable, gov *Governor) error {
	prefix := g.r.prefix + pauseKeyPrefix
	iter := node.Scan(ctx, 0, prefix+"*", 256).Iterator()
	for iter.Next(ctx) {
		key := iter.Val()
		vals, err := readPauseScript.Run(ctx, node, []string{key}).Slice()
		if err != nil || len(vals) != 6 {
			continue
		}
		p, ok := pauseFromReply(vals, gov.now())
		if ok {
			gov.Apply(originOf(strings.TrimPrefix(key, prefix)), p)
		}
	}
	return iter.Err()
}

// pauseFromReply reads readPauseScript's reply.
func pauseFromReply(vals []any, now time.Time) (Pause, bool) {
	var n [4]int64
	for i := range n {
		v, ok := vals[i].(int64)
		if !ok {
			return Pause{}, false
		}
		n[i] = v
	}
	ra, _ := vals[4].(string)
	fails, _ := vals[5].(int64)
	return Pause{Until: now.Add(usec(float64(n[0]))), At: now.Add(-usec(float64(n[1]))), Streak: int(n[2]),
		Status: int(n[3]), RetryAfter: clipHeader(ra), Failures: int(fails)}, true
}

// usec converts microseconds to a duration.
func usec(us float64) time.Duration { return time.Duration(us) * time.Microsecond }
