package pacing

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/robotsgate/robotsgate/redisconn"
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
	// DefaultRedisMaxAhead is the RedisOptions.MaxAhead of a store no
	// Pacer declared a bound to: the longest interval a store reserves
	// plus the longest maxWait it honours.
	DefaultRedisMaxAhead = 2 * MaxInterval
)

// corruptLogInterval is the least time between two log lines about corrupt
// keys: a writer that keeps corrupting a key must not flood the log.
const corruptLogInterval = 10 * time.Second

// RedisOptions configures NewRedis. Conn or Addr is required.
type RedisOptions struct {
	// Conn, when set, is the connection to the fleet's Redis (one server,
	// Sentinel or Cluster), shared with other stores and closed by its
	// owner; Addr, the login, TLS, timeouts and PoolSize are then unused.
	// Its WriteNode makes each reservation wait for the replicas that
	// could replace the primary (see Redis).
	Conn *redisconn.Conn
	// Addr is the Redis server's host:port, without Conn.
	Addr string
	// Username, Password and DB select the account and database: with a
	// Username, AUTH username password (an ACL user); with a Password only,
	// AUTH password (requirepass); DB other than 0 is selected on connect.
	Username string
	Password string
	DB       int
	// TLS, when set, makes every connection TLS with this configuration
	// (its RootCAs and ServerName verify the server); nil means plain TCP.
	TLS *tls.Config
	// MaxAhead is the furthest ahead of Redis' clock a key's next slot may
	// honestly lie: the longest interval any instance paces at plus the
	// longest maxWait. A key further ahead (or not a number) was written by
	// something else: it is corrupt, and is reset as if absent, counted
	// (Corrupted) and logged, instead of holding or refusing the key's
	// requests for that long. 0 means none declared yet: Pacers built on
	// the store raise it (Options.LongestInterval), and until one does it
	// is DefaultRedisMaxAhead.
	MaxAhead time.Duration
	// Logger receives the lines about corrupt keys; nil means
	// slog.Default().
	Logger *slog.Logger
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
// Redis (and KeyPrefix) paces on one schedule. Every key of one origin
// (schedules, pause, permits) carries the origin as a Redis Cluster hash
// tag (slotKey), so that each script's keys lie in one hash slot. A reservation is one round
// trip, a Lua script (EVALSHA, EVAL only when Redis lost its script cache)
// that reads Redis' own clock, so the proxies' clocks never need to agree;
// keys expire (PEXPIRE) once their next has passed. Every call is bounded by
// OpTimeout and short socket timeouts and is never retried (a reservation
// is not idempotent): a Redis that is down or frozen makes calls fail
// quickly with an *UnavailableError, and the client reconnects by itself
// when Redis is back. Wrap it in a Fallback to apply
// pacing.on_store_error and to stop paying a timeout per request while
// Redis is frozen.
//
// A reservation is used only once the replicas that could be promoted in
// the primary's place (Sentinel, Cluster) have acknowledged it (WAIT, in
// the same pipeline; see redisconn.Conn.WriteNode): Redis replicates
// asynchronously, and a reservation lost in a failover would let the next
// request start closer than its interval. One not acknowledged in time is
// an *UnavailableError (the reservation stays: a slot consumed delays, it
// never hastens).
//
// What it reads from Redis is not trusted: a key that is not a number, or
// lies further ahead than MaxAhead, is reset inside the same script (see
// RedisOptions.MaxAhead), so waits and RetryAfter never exceed MaxAhead.
type Redis struct {
	conn      *redisconn.Conn
	client    redis.UniversalClient
	ownConn   bool // NewRedis opened conn: Close closes it
	prefix    string
	opTimeout time.Duration
	log       *slog.Logger

	maxAhead atomic.Int64  // declared bound in ns; 0: DefaultRedisMaxAhead
	corrupt  atomic.Uint64 // keys reset as corrupt
	lastLog  atomic.Int64  // when a corrupt key was last logged (Unix ns)
	resynced func()        // tests: called when Follow has read the fleet's pauses
}

// readNext is the start of the scripts that read a key's next: it sets
// now (Redis' clock), next (0 when absent) and corrupt (1 when the key held
// something no robotsgate writes: not a number, NaN, or more than ARGV[1]
// microseconds ahead, infinity included; such a key is deleted and next is
// 0). GET runs in pcall so that a key of another type (WRONGTYPE) is
// corrupt too, not a script error that would fail the whole store; any
// other error (an ACL refusing GET) still fails the script.
const readNext = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local next, corrupt = 0, 0
local v = redis.pcall('GET', KEYS[1])
if type(v) == 'table' and v.err and not string.find(v.err, '^WRONGTYPE') then
  return redis.error_reply(v.err)
end
if v then
  next = tonumber(v)
  if type(v) ~= 'string' or next == nil or next ~= next or next - now > tonumber(ARGV[1]) then
    redis.call('DEL', KEYS[1])
    next, corrupt = 0, 1
  end
end
`

// reserveScript reserves a slot. KEYS[1] is the key; ARGV: the corrupt
// bound (see readNext), interval, maxWait and floor (a minimum wait), all in
// microseconds. It returns {granted, wait, slot, next, corrupt} with wait =
// slot - now and next the key's new value (slot and next 0 when refused),
// in microseconds on Redis' clock. Numbers go back into Redis through
// string.format('%d'): Lua would print 16-digit numbers in exponent
// notation.
var reserveScript = redis.NewScript(readNext + `
local slot = now + tonumber(ARGV[4])
if next > slot then slot = next end
local wait = slot - now
if wait > tonumber(ARGV[3]) then
  return {0, wait, 0, 0, corrupt}
end
next = slot + tonumber(ARGV[2])
redis.call('SET', KEYS[1], string.format('%d', next), 'PX', math.floor((next - now) / 1000) + 1)
return {1, wait, slot, next, corrupt}
`)

// cancelScript rolls KEYS[1] back to the slot ARGV[2] if it still holds the
// value ARGV[1] a reservation set. It returns 1 if it rolled back.
var cancelScript = redis.NewScript(`
if redis.pcall('GET', KEYS[1]) ~= ARGV[1] then
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

// pendingScript returns {how long until KEYS[1]'s next in microseconds (0
// when idle), corrupt}; ARGV[1] is the corrupt bound (see readNext).
var pendingScript = redis.NewScript(readNext + `
if next > now then return {next - now, corrupt} end
return {0, corrupt}
`)

// NewRedis returns a Redis store for opts. It does not connect: the first
// call does, so a Redis that is down at start does not stop the proxy from
// starting (Healthy tells).
func NewRedis(opts RedisOptions) (*Redis, error) {
	r := &Redis{
		conn:      opts.Conn,
		prefix:    orDefault(opts.KeyPrefix, DefaultRedisKeyPrefix),
		opTimeout: orDefault(opts.OpTimeout, DefaultRedisOpTimeout),
		log:       orDefault(opts.Logger, slog.Default()),
	}
	if r.conn == nil {
		if opts.Addr == "" {
			return nil, errors.New("pacing: redis: no address")
		}
		conn, err := redisconn.Open(redisconn.Options{Addr: opts.Addr, Username: opts.Username, Password: opts.Password,
			DB: opts.DB, TLS: opts.TLS, DialTimeout: opts.DialTimeout, ReadTimeout: opts.ReadTimeout,
			WriteTimeout: opts.WriteTimeout, PoolTimeout: r.opTimeout, PoolSize: opts.PoolSize})
		if err != nil {
			return nil, fmt.Errorf("pacing: %w", err)
		}
		r.conn, r.ownConn = conn, true
	}
	r.client = r.conn.Client()
	r.raiseMaxAhead(opts.MaxAhead)
	return r, nil
}

// key is the Redis key of a pacing key.
func (r *Redis) key(key string) string { return r.prefix + slotKey(key) }

// slotKey puts the origin of key, its part before the first space (a
// pacing key is "origin" or "origin group", a pause's or permit's key the
// origin), in braces: a Redis Cluster hash tag, so that every key of one
// origin hashes to one slot whatever comes before or after it.
func slotKey(key string) string {
	origin, rest, found := strings.Cut(key, " ")
	if found {
		return "{" + origin + "} " + rest
	}
	return "{" + origin + "}"
}

// originOf is the origin of a key slotKey made (after its prefix).
func originOf(tagged string) string {
	origin, _, _ := strings.Cut(strings.TrimPrefix(tagged, "{"), "}")
	return origin
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
	bound := r.MaxAhead()
	vals, err := r.runReserve(ctx, r.key(key), micros(bound),
		micros(clampInterval(interval)), micros(clampWait(maxWait)), micros(clampInterval(floor)))
	if err != nil {
		return Reservation{}, redisFailure("reserve", key, err)
	}
	if len(vals) != 5 {
		return Reservation{}, redisFailure("reserve", key, fmt.Errorf("unexpected reply %v", vals))
	}
	if vals[4] == 1 {
		r.corrupted(key, bound)
	}
	return fromReply(vals, clampWait(maxWait), bound), nil
}

// fromReply builds a Reservation from the reserve script's reply
// {granted, wait, slot, next, corrupt}; the wait is taken as at most bound
// (the script already resets keys further ahead), so that RetryAfter never
// exceeds it.
func fromReply(vals []int64, maxWait, bound time.Duration) Reservation {
	wait := min(max(time.Duration(vals[1])*time.Microsecond, 0), bound)
	if vals[0] != 1 {
		return Reservation{Wait: wait, RetryAfter: max(wait-maxWait, 0)}
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
	err := cancelScript.Run(ctx, r.client, []string{r.key(key)},
		strconv.FormatInt(res.token, 10), strconv.FormatInt(res.slot, 10)).Err()
	if err != nil {
		return redisFailure("cancel", key, err)
	}
	return nil
}

// Pending implements Store with one script run on Redis. A corrupt key is
// reset (see RedisOptions.MaxAhead) and reads as idle.
func (r *Redis) Pending(ctx context.Context, key string) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, r.opTimeout)
	defer cancel()
	bound := r.MaxAhead()
	vals, err := pendingScript.Run(ctx, r.client, []string{r.key(key)}, micros(bound)).Int64Slice()
	if err != nil {
		return 0, redisFailure("pending", key, err)
	}
	if len(vals) != 2 {
		return 0, redisFailure("pending", key, fmt.Errorf("unexpected reply %v", vals))
	}
	if vals[1] == 1 {
		r.corrupted(key, bound)
	}
	return min(max(time.Duration(vals[0])*time.Microsecond, 0), bound), nil
}

// MaxAhead returns the bound beyond which a key's next is corrupt (see
// RedisOptions.MaxAhead).
func (r *Redis) MaxAhead() time.Duration {
	if d := r.maxAhead.Load(); d > 0 {
		return time.Duration(d)
	}
	return DefaultRedisMaxAhead
}

// raiseMaxAhead raises the declared bound to d, capped at
// DefaultRedisMaxAhead; it never lowers it, so that slots reserved under a
// longer bound (before a reload shortened pacing.max_wait, say) are not
// taken for corrupt.
func (r *Redis) raiseMaxAhead(d time.Duration) {
	d = min(d, DefaultRedisMaxAhead)
	for {
		cur := r.maxAhead.Load()
		if int64(d) <= cur || r.maxAhead.CompareAndSwap(cur, int64(d)) {
			return
		}
	}
}

// Corrupted returns how many corrupt keys the store has reset (see
// RedisOptions.MaxAhead), for a metric.
func (r *Redis) Corrupted() uint64 { return r.corrupt.Load() }

// corrupted counts a corrupt key the script reset and logs it, at most once
// per corruptLogInterval.
func (r *Redis) corrupted(key string, bound time.Duration) {
	n := r.corrupt.Add(1)
	now, last := time.Now().UnixNano(), r.lastLog.Load()
	if last != 0 && now-last < int64(corruptLogInterval) || !r.lastLog.CompareAndSwap(last, now) {
		return
	}
	r.log.Warn("pacing: a corrupt slot in the shared store was reset: not a number, or further ahead than any interval",
		"key", r.key(key), "max_ahead", bound, "corrupt_total", n)
}

// Healthy pings Redis within OpTimeout (every primary of a Cluster); nil
// means it answers. For a readiness probe.
func (r *Redis) Healthy(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, r.opTimeout)
	defer cancel()
	var err error
	if cc, ok := r.client.(*redis.ClusterClient); ok {
		err = cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
			if err := c.Ping(ctx).Err(); err != nil {
				return fmt.Errorf("%s: %w", c.Options().Addr, err)
			}
			return nil
		})
	} else {
		err = r.client.Ping(ctx).Err()
	}
	if err != nil {
		return redisFailure("ping", "", err)
	}
	return nil
}

// Close closes the connections to Redis, unless RedisOptions.Conn gave
// them. The store must not be used afterwards.
func (r *Redis) Close() error {
	if !r.ownConn {
		return nil
	}
	if err := r.conn.Close(); err != nil {
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
