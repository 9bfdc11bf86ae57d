package pacing

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// Defaults of RedisOptions.
const (
	DefaultRedisKeyPrefix    = "robotsgate:pacing:"
	DefaultRedisDialTimeout  = 500 * time.Millisecond
	DefaultRedisReadTimeout  = 500 * time.Millisecond
	DefaultRedisWriteTimeout = 500 * time.Millisecond
	DefaultRedisOpTimeout    = time.Second
	// DefaultRedisRetryAfter is the RetryAfter of the *UnavailableError a
	// failed Redis call returns.
	DefaultRedisRetryAfter = time.Second
)

// RedisOptions configures NewRedis. Only Addr is required.
type RedisOptions struct {
	// Addr is the Redis server's host:port.
	Addr string
	// Username, Password and DB select the account and database.
	Username string
	Password string
	DB       int
	// KeyPrefix is put before every pacing key. Default
	// DefaultRedisKeyPrefix.
	KeyPrefix string
	// DialTimeout, ReadTimeout and WriteTimeout bound each connection
	// attempt and socket operation. Defaults 500ms each.
	DialTimeout  time.Duration
	ReadTimeout  time.Duration
	WriteTimeout time.Duration
	// OpTimeout bounds a whole call, waiting for a pooled connection
	// included. Default 1s.
	OpTimeout time.Duration
	// PoolSize is the number of connections kept; 0 means go-redis's
	// default (10 per CPU).
	PoolSize int
}

// Redis is the shared Store: every robotsgate instance that uses the same
// Redis (and KeyPrefix) paces on one schedule. A reservation is one round
// trip, a Lua script (EVALSHA, EVAL only when Redis lost its script cache)
// that reads Redis' own clock, so the proxies' clocks never need to agree;
// keys expire (PEXPIRE) once their next has passed. Every call is bounded by
// OpTimeout and short socket timeouts and is never retried (a reservation
// is not idempotent): a Redis that is down or frozen makes calls fail
// quickly with an *UnavailableError, and the client reconnects by itself
// when Redis is back. Wrap it in a Fallback to apply
// pacing.on_store_error and to stop paying a timeout per request while
// Redis is frozen.
type Redis struct {
	client    *redis.Client
	prefix    string
	opTimeout time.Duration
	resynced  func() // tests: called when Follow has read the fleet's pauses
}

// reserveScript reserves a slot. KEYS[1] is the key; ARGV: interval,
// maxWait and floor (a minimum wait) in microseconds. It returns
// {granted, wait, slot, next} with wait = slot - now and next the key's new
// value (slot and next 0 when refused), in microseconds on Redis' clock. Numbers go back into
// Redis through string.format('%d'): Lua would print 16-digit numbers in
// exponent notation.
var reserveScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local slot = now + tonumber(ARGV[3])
local next = tonumber(redis.call('GET', KEYS[1]) or '0') or 0
if next > slot then slot = next end
local wait = slot - now
if wait > tonumber(ARGV[2]) then
  return {0, wait, 0, 0}
end
next = slot + tonumber(ARGV[1])
redis.call('SET', KEYS[1], string.format('%d', next), 'PX', math.floor((next - now) / 1000) + 1)
return {1, wait, slot, next}
`)

// cancelScript rolls KEYS[1] back to the slot ARGV[2] if it still holds the
// value ARGV[1] a reservation set. It returns 1 if it rolled back.
var cancelScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local slot = tonumber(ARGV[2])
if slot > now then
  redis.call('SET', KEYS[1], ARGV[2], 'PX', math.floor((slot - now) / 1000) + 1)
else
  redis.call('DEL', KEYS[1])
end
return 1
`)

// pendingScript returns how long until KEYS[1]'s next, in microseconds (0
// when idle).
var pendingScript = redis.NewScript(`
local next = tonumber(redis.call('GET', KEYS[1]) or '0') or 0
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
if next > now then return next - now end
return 0
`)

// NewRedis returns a Redis store for opts. It does not connect: the first
// call does, so a Redis that is down at start does not stop the proxy from
// starting (Healthy tells).
func NewRedis(opts RedisOptions) (*Redis, error) {
	if opts.Addr == "" {
		return nil, errors.New("pacing: redis: no address")
	}
	r := &Redis{
		prefix:    orDefault(opts.KeyPrefix, DefaultRedisKeyPrefix),
		opTimeout: orDefault(opts.OpTimeout, DefaultRedisOpTimeout),
	}
	r.client = redis.NewClient(clientOptions(opts, r.opTimeout))
	return r, nil
}

// clientOptions translates opts for go-redis: short timeouts, no retries
// (neither of commands nor within a dial), and no extra commands on connect.
func clientOptions(opts RedisOptions, opTimeout time.Duration) *redis.Options {
	return &redis.Options{
		Addr:                  opts.Addr,
		Username:              opts.Username,
		Password:              opts.Password,
		DB:                    opts.DB,
		Protocol:              2,
		DialTimeout:           orDefault(opts.DialTimeout, DefaultRedisDialTimeout),
		DialerRetries:         1,
		ReadTimeout:           orDefault(opts.ReadTimeout, DefaultRedisReadTimeout),
		WriteTimeout:          orDefault(opts.WriteTimeout, DefaultRedisWriteTimeout),
		PoolTimeout:           opTimeout,
		PoolSize:              opts.PoolSize,
		ContextTimeoutEnabled: true,
		MaxRetries:            -1,
		DisableIdentity:       true,
		MaintNotificationsConfig: &maintnotifications.Config{
			Mode: maintnotifications.ModeDisabled,
		},
	}
}

// orDefault returns v, or def when v is the zero value.
func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// Reserve implements Store with one script run on Redis.
func (r *Redis) Reserve(ctx context.Context, key string, interval, maxWait time.Duration) (Reservation, error) {
	return r.reserve(ctx, key, interval, maxWait, 0)
}

// reserve is Reserve with a floor: the slot is at least floor from now.
// Fallback uses it to carry local reservations over to Redis.
func (r *Redis) reserve(ctx context.Context, key string, interval, maxWait, floor time.Duration) (Reservation, error) {
	ctx, cancel := context.WithTimeout(ctx, r.opTimeout)
	defer cancel()
	vals, err := reserveScript.Run(ctx, r.client, []string{r.prefix + key},
		micros(clampInterval(interval)), micros(clampWait(maxWait)), micros(clampInterval(floor))).Int64Slice()
	if err != nil {
		return Reservation{}, redisFailure("reserve", key, err)
	}
	if len(vals) != 4 {
		return Reservation{}, redisFailure("reserve", key, fmt.Errorf("unexpected reply %v", vals))
	}
	return fromReply(vals, clampWait(maxWait)), nil
}

// fromReply builds a Reservation from the reserve script's reply
// {granted, wait, slot, next}.
func fromReply(vals []int64, maxWait time.Duration) Reservation {
	wait := time.Duration(vals[1]) * time.Microsecond
	if vals[0] != 1 {
		return Reservation{Wait: wait, RetryAfter: wait - maxWait}
	}
	return Reservation{Granted: true, Wait: wait, slot: vals[2], token: vals[3]}
}

// Cancel implements Store with one script run on Redis.
func (r *Redis) Cancel(ctx context.Context, key string, res Reservation) error {
	if !res.Granted || res.token == res.slot {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, r.opTimeout)
	defer cancel()
	err := cancelScript.Run(ctx, r.client, []string{r.prefix + key},
		strconv.FormatInt(res.token, 10), strconv.FormatInt(res.slot, 10)).Err()
	if err != nil {
		return redisFailure("cancel", key, err)
	}
	return nil
}

// Pending implements Store with one script run on Redis.
func (r *Redis) Pending(ctx context.Context, key string) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, r.opTimeout)
	defer cancel()
	us, err := pendingScript.Run(ctx, r.client, []string{r.prefix + key}).Int64()
	if err != nil {
		return 0, redisFailure("pending", key, err)
	}
	return time.Duration(us) * time.Microsecond, nil
}

// Healthy pings Redis within OpTimeout; nil means it answers. For a
// readiness probe.
func (r *Redis) Healthy(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, r.opTimeout)
	defer cancel()
	if err := r.client.Ping(ctx).Err(); err != nil {
		return redisFailure("ping", "", err)
	}
	return nil
}

// Close closes the connections to Redis. The store must not be used
// afterwards.
func (r *Redis) Close() error {
	if err := r.client.Close(); err != nil {
		return fmt.Errorf("pacing: redis: close: %w", err)
	}
	return nil
}

// redisFailure wraps a failed call in an *UnavailableError that names the
// operation and key.
func redisFailure(op, key string, err error) error {
	return &UnavailableError{
		Op:         op,
		RetryAfter: DefaultRedisRetryAfter,
		Err:        fmt.Errorf("redis %s %q: %w", op, key, err),
	}
}

// micros converts d to whole microseconds, rounding up so that a wait is
// never shortened.
func micros(d time.Duration) int64 {
	return int64((d + time.Microsecond - 1) / time.Microsecond)
}
