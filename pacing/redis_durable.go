package pacing

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// runReserve runs reserveScript on key and returns its reply
// {granted, wait, slot, next, corrupt} once the replicas that could be
// promoted in the primary's place have acknowledged what it wrote
// (redisconn.Conn.WriteNode): the script, WAIT and TIME go in one
// pipeline to the key's primary, since WAIT counts the acknowledgements of
// its own connection's writes. A reply acknowledged by fewer replicas
// within the Conn's AckTimeout is an error: its write may be lost in a
// failover, so it is not relied on (what it reserved stays reserved on
// the primary, which only delays later requests).
//
// The wait of a granted reply is counted from TIME, after WAIT, not from
// the script's own now (slot - wait): the time the replicas took to
// acknowledge has passed already, and holding the request for the whole
// wait after it would send it that much late, closer to the next slot.
func (r *Redis) runReserve(ctx context.Context, key string, args ...any) ([]int64, error) {
	node, acks, err := r.conn.WriteNode(ctx, key)
	if err != nil {
		return nil, err
	}
	if acks == 0 {
		return reserveScript.Run(ctx, r.client, []string{key}, args...).Int64Slice()
	}
	timeout := r.conn.AckTimeout()
	vals, got, now, err := evalAcked(ctx, node, reserveScript, key, acks, timeout, args)
	if err != nil {
		return nil, err
	}
	if got < int64(acks) {
		r.conn.ShortOfAcks()
		return nil, fmt.Errorf("acknowledged by %d of the %d replicas that could replace the primary within %v: not relied on across a failover", got, acks, timeout)
	}
	if len(vals) == 5 && vals[0] == 1 {
		vals[1] = max(vals[2]-now, 0)
	}
	return vals, nil
}

// evalAcked runs script (EVALSHA, then EVAL if the node lost its script
// cache), WAIT acks timeout and TIME in one pipeline on node, and returns
// the script's reply, the number of replicas that acknowledged and
// Redis' clock after WAIT, in microseconds.
func evalAcked(ctx context.Context, node redis.Cmdable, script *redis.Script, key string, acks int, timeout time.Duration, args []any) ([]int64, int64, int64, error) {
	keys := []string{key}
	for _, sha := range []bool{true, false} {
		var res, wait *redis.Cmd
		var clock *redis.TimeCmd
		_, _ = node.Pipelined(ctx, func(p redis.Pipeliner) error {
			if sha {
				res = script.EvalSha(ctx, p, keys, args...)
			} else {
				res = script.Eval(ctx, p, keys, args...)
			}
			wait = p.Do(ctx, "wait", acks, timeout.Milliseconds())
			clock = p.Time(ctx)
			return nil
		})
		if err := res.Err(); sha && err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
			continue
		}
		vals, err := res.Int64Slice()
		if err != nil {
			return nil, 0, 0, err
		}
		got, err := wait.Int64()
		if err != nil {
			return nil, 0, 0, fmt.Errorf("wait for %d replicas: %w", acks, err)
		}
		now, err := clock.Result()
		if err != nil {
			return nil, 0, 0, fmt.Errorf("time after wait: %w", err)
		}
		return vals, got, now.UnixMicro(), nil
	}
	return nil, 0, 0, errors.New("the script is not in the node's cache after EVAL")
}
