package fleet

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/robotsgate/robotsgate/origin"
	"github.com/robotsgate/robotsgate/robots/resolver"
)

// lockKeyPrefix comes between the key prefix and the origin of a fetch
// lock (an origin never starts with it).
const lockKeyPrefix = "lock:"

var _ resolver.Locker = (*RobotsStore)(nil)

// unlockScript deletes KEYS[1] if it still holds ARGV[1], this instance's
// token: a lock that expired and was taken by another is left alone.
var unlockScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
`)

// Lock implements resolver.Locker with SET NX PX: one instance of the
// fleet fetches o's file while the others wait for its record.
func (s *RobotsStore) Lock(ctx context.Context, o origin.Origin, ttl time.Duration) (func(), bool, error) {
	var b [16]byte
	rand.Read(b[:])
	token := hex.EncodeToString(b[:])
	key := s.key(lockKeyPrefix, o)
	ok, err := s.client.SetNX(ctx, key, token, ttl).Result()
	if err != nil {
		return nil, false, fmt.Errorf("fleet: lock the fetch of %s: %w", o, err)
	}
	if !ok {
		return nil, false, nil
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = unlockScript.Run(ctx, s.client, []string{key}, token).Err()
	}, true, nil
}
