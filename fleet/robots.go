// Package fleet shares what several robotsgate instances should not each do
// for themselves through Redis: the robots.txt and tdmrep.json files they
// fetch, so that a fleet fetches each origin once per freshness period.
// (The pacing schedule is shared by package pacing.)
//
// It stores and loads only; it must not decide, and a Redis that fails must
// never refuse or allow a request by itself: the resolver then fetches for
// itself.
package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/robotsgate/robotsgate/origin"
	"github.com/robotsgate/robotsgate/robots/resolver"
)

// DefaultKeyPrefix is put before every robots.txt key.
const DefaultKeyPrefix = "robotsgate:robots:"

// TDMRepKeyPrefix is the KeyPrefix of a store of tdmrep.json files, kept
// as robots.txt files are (the same record, another key).
const TDMRepKeyPrefix = "robotsgate:tdmrep:"

// RobotsOptions configures NewRobotsStore. Only Addr is required.
type RobotsOptions struct {
	// Addr is the Redis server's host:port.
	Addr string
	// KeyPrefix is put before each origin. Default DefaultKeyPrefix.
	KeyPrefix string
	// Timeout bounds each socket operation and dial. Default 500ms.
	Timeout time.Duration
}

// RobotsStore is a resolver.Store in Redis: one key per origin holding the
// fetched record, expiring with the record's freshness.
type RobotsStore struct {
	client *redis.Client
	prefix string
}

var _ resolver.Store = (*RobotsStore)(nil)

// NewRobotsStore returns a store on the Redis at opts.Addr. It does not
// connect until used; calls fail quickly while Redis is unreachable (the
// resolver then fetches for itself).
func NewRobotsStore(opts RobotsOptions) (*RobotsStore, error) {
	if opts.Addr == "" {
		return nil, errors.New("fleet: robots store: no Redis address")
	}
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = 500 * time.Millisecond
	}
	prefix := opts.KeyPrefix
	if prefix == "" {
		prefix = DefaultKeyPrefix
	}
	c := redis.NewClient(&redis.Options{
		Addr: opts.Addr, DialTimeout: timeout, ReadTimeout: timeout, WriteTimeout: timeout,
		MaxRetries: -1, Protocol: 2, DisableIdentity: true,
	})
	return &RobotsStore{client: c, prefix: prefix}, nil
}

// record is the stored form of a resolver.Record.
type record struct {
	Status     resolver.Status `json:"status"`
	HTTPStatus int             `json:"http_status"`
	URL        string          `json:"url"`
	Body       []byte          `json:"body"`
	FetchedAt  time.Time       `json:"fetched_at"`
	Expires    time.Time       `json:"expires"`
}

// Load implements resolver.Store.
func (s *RobotsStore) Load(ctx context.Context, o origin.Origin) (resolver.Record, bool, error) {
	data, err := s.client.Get(ctx, s.prefix+o.String()).Bytes()
	if errors.Is(err, redis.Nil) {
		return resolver.Record{}, false, nil
	}
	if err != nil {
		return resolver.Record{}, false, fmt.Errorf("fleet: load robots.txt of %s: %w", o, err)
	}
	var r record
	if err := json.Unmarshal(data, &r); err != nil {
		return resolver.Record{}, false, fmt.Errorf("fleet: decode robots.txt of %s: %w", o, err)
	}
	return resolver.Record(r), true, nil
}

// Save implements resolver.Store; the key expires with the record.
func (s *RobotsStore) Save(ctx context.Context, o origin.Origin, rec resolver.Record) error {
	ttl := time.Until(rec.Expires)
	if ttl <= 0 {
		return nil
	}
	data, err := json.Marshal(record(rec))
	if err != nil {
		return fmt.Errorf("fleet: encode robots.txt of %s: %w", o, err)
	}
	if err := s.client.Set(ctx, s.prefix+o.String(), data, ttl).Err(); err != nil {
		return fmt.Errorf("fleet: save robots.txt of %s: %w", o, err)
	}
	return nil
}

// Close closes the Redis connections.
func (s *RobotsStore) Close() error { return s.client.Close() }
