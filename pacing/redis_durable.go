package pacing

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// runDurable runs script on key and returns its reply once the replicas
// that could be promoted in the primary's place have acknowledged what it
// wrote (redisconn.Conn.WriteNode): the script and WAIT go in one
// pipeline to the key's primary, since WAIT counts the acknowledgements
// of its own connection's writes. A reply acknowledged by fewer replicas
// within the Conn's AckTimeout is an error: its write may be lost in a
// failover, so it is not relied on (what it reserved stays reserved on
// the primary, which only delays later requests).
func (r *Redis) runDurable(ctx context.Context, script *redis.Script, key string, args ...any) ([]int64, error) {
	node, acks, err := r.conn.WriteNode(ctx, key)
	if err != nil {
		return nil, err
	}
	if acks == 0 {
		return script.Run(ctx, r.client, []string{key}, args...).Int64Slice()
	}
	timeout := r.conn.AckTimeout()
	vals, got, err := evalAcked(ctx, node, script, key, acks, timeout, args)
	if err != nil {
		return nil, err
	}
	if got < int64(acks) {
		r.conn.ShortOfAcks()
		return nil, fmt.Errorf("acknowledged by %d of the %d replicas that could replace the primary within %v: not relied on across a failover", got, acks, timeout)
	}
	return vals, nil
}

// evalAcked runs script (EVALSHA, then EVAL if the node lost its script
// cache) and WAIT acks timeout in one pipeline on node, and returns the
// script's reply and the number of replicas that acknowledged.
func evalAcked(ctx context.Context, node redis.Cmdable, script *redis.Script, key string, acks int, timeout time.Duration, args []any) ([]int64, int64, error) {
	keys := []string{key}
	for _, sha := range []bool{true, false} {
		var res *redis.Cmd
		var wait *redis.Cmd
		_, _ = node.Pipelined(ctx, func(p redis.Pipeliner) error {
			if sha {
				res = script.EvalSha(ctx, p, keys, args...)
			} else {
				res = script.Eval(ctx, p, keys, args...)
			}
			wait = p.Do(ctx, "wait", acks, timeout.Milliseconds())
			return nil
		})
		if err := res.Err(); sha && err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
			continue
		}
		vals, err := res.Int64Slice()
		if err != nil {
			return nil, 0, err
		}
		got, err := wait.Int64()
		if err != nil {
			return nil, 0, fmt.Errorf("wait for %d replicas: %w", acks, err)
		}
		return vals, got, nil
	}
	return nil, 0, errors.New("the script is not in the node's cache after EVAL")
}
