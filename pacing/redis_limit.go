package pacing

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// A fleet's pacing.max_concurrency: each origin's requests in flight are
// the members of a sorted set (prefix + "conc:" + origin), one per
// permit, scored with when its lease ends on Redis' clock (the origin in
// braces: slotKey). A permit is
// taken by one script that first drops the members whose lease has ended
// (an instance that died), renewed while its request lasts, and given
// back when it ends.

// concKeyPrefix comes between the key prefix and the origin.
const concKeyPrefix = "conc:"

// takeScript takes a permit of KEYS[1]: ARGV the limit, the lease in µs
// and the permit's token. It returns 1 when taken.
var takeScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[1]) then
  redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[3])
  redis.call('PEXPIRE', KEYS[1], math.floor(tonumber(ARGV[2]) / 1000) + 1)
  return 1
end
return 0
`)

// renewScript extends the lease of the permit ARGV[2] of KEYS[1] by
// ARGV[1] µs from now, if it is still held.
var renewScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
if redis.call('ZADD', KEYS[1], 'XX', 'CH', now + tonumber(ARGV[1]), ARGV[2]) == 1 then
  redis.call('PEXPIRE', KEYS[1], math.floor(tonumber(ARGV[1]) / 1000) + 1)
end
return 1
`)

// ConcurrencyStore holds a fleet's permits per origin
// (pacing.max_concurrency across instances). Redis is one.
type ConcurrencyStore interface {
	// TryTake takes one of key's limit permits for lease, at once or not
	// at all; token names it for Renew and Give.
	TryTake(ctx context.Context, key string, limit int, lease time.Duration) (token string, ok bool, err error)
	// Renew extends a held permit's lease.
	Renew(ctx context.Context, key, token string, lease time.Duration) error
	// Give gives a permit back.
	Give(ctx context.Context, key, token string) error
}

var _ ConcurrencyStore = (*Redis)(nil)

// TryTake implements ConcurrencyStore.
func (r *Redis) TryTake(ctx context.Context, key string, limit int, lease time.Duration) (string, bool, error) {
	var b [12]byte
	rand.Read(b[:])
	token := hex.EncodeToString(b[:])
	ctx, cancel := context.WithTimeout(ctx, r.opTimeout)
	defer cancel()
	n, err := takeScript.Run(ctx, r.client, []string{r.prefix + concKeyPrefix + slotKey(key)}, limit, micros(lease), token).Int()
	if err != nil {
		return "", false, redisFailure("take", key, err)
	}
	return token, n == 1, nil
}

// Renew implements ConcurrencyStore.
func (r *Redis) Renew(ctx context.Context, key, token string, lease time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, r.opTimeout)
	defer cancel()
	if err := renewScript.Run(ctx, r.client, []string{r.prefix + concKeyPrefix + slotKey(key)}, micros(lease), token).Err(); err != nil {
		return redisFailure("renew", key, err)
	}
	return nil
}

// Give implements ConcurrencyStore.
func (r *Redis) Give(ctx context.Context, key, token string) error {
	ctx, cancel := context.WithTimeout(ctx, r.opTimeout)
	defer cancel()
	if err := r.client.ZRem(ctx, r.prefix+concKeyPrefix+slotKey(key), token).Err(); err != nil {
		return fmt.Errorf("pacing: %w", redisFailure("give", key, err))
	}
	return nil
}
