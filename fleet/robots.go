// Package fleet shares what several robotsgate instances should not each do
// for themselves through Redis: the robots.txt and tdmrep.json files they
// fetch, so that a fleet fetches each origin once per freshness period.
// (The pacing schedule is shared by package pacing.)
//
// It stores and loads only; it must not decide, and a Redis that fails must
// never refuse or allow a request by itself: the resolver then fetches for
// itself. Nor is what it loads trusted: resolver.LoadRecord checks each
// record, and a record that does not decode, or is longer than any
// robotsgate writes, is reported corrupt without being read whole.
package fleet

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/robotsgate/robotsgate/origin"
	"github.com/robotsgate/robotsgate/redisconn"
	"github.com/robotsgate/robotsgate/robots/resolver"
)

// DefaultKeyPrefix is put before every robots.txt key.
const DefaultKeyPrefix = "robotsgate:robots:"

// TDMRepKeyPrefix is the KeyPrefix of a store of tdmrep.json files, kept
// as robots.txt files are (the same record, another key).
const TDMRepKeyPrefix = "robotsgate:tdmrep:"

// MaxRecordBytes is the longest stored record Load reads: a body of
// robots.MaxFileSize in base64 and a URL of 64 KiB, JSON-escaped, fit with
// room to spare. A longer record was not written by a robotsgate: Load
// reads no more of it and reports it corrupt.
const MaxRecordBytes = 2 << 20

// RobotsOptions configures NewRobotsStore. Conn or Addr is required.
type RobotsOptions struct {
	// Conn, when set, is the connection to the fleet's Redis (one server,
	// Sentinel or Cluster), shared with other stores and closed by its
	// owner; Addr, the login, TLS and Timeout are then unused.
	Conn *redisconn.Conn
	// Addr is the Redis server's host:port, without Conn.
	Addr string
	// Username, Password and DB select the account and database: with a
	// Username, AUTH username password (an ACL user); with a Password only,
	// AUTH password (requirepass); DB other than 0 is selected on connect.
	Username string
	Password string
	DB       int
	// TLS, when set, makes every connection TLS with this configuration;
	// nil means plain TCP.
	TLS *tls.Config
	// KeyPrefix is put before each origin. Default DefaultKeyPrefix.
	KeyPrefix string
	// Timeout bounds each socket operation and dial. Default 500ms.
	Timeout time.Duration
}

// RobotsStore is a resolver.Store in Redis: one key per origin holding the
// fetched record, expiring with the record's freshness, named KeyPrefix +
// "{" + origin + "}" (a Redis Cluster hash tag: an origin's record and its
// fetch lock lie in one slot, with the origin's pacing keys). It is a
// resolver.CorruptCounter: Corrupted tells how many corrupt records were
// found in it.
type RobotsStore struct {
	conn    *redisconn.Conn
	client  redis.UniversalClient
	ownConn bool // NewRobotsStore opened conn: Close closes it
	prefix  string
	corrupt atomic.Uint64
}

var (
	_ resolver.Store          = (*RobotsStore)(nil)
	_ resolver.CorruptCounter = (*RobotsStore)(nil)
)

// NewRobotsStore returns a store on the Redis at opts.Addr. It does not
// connect until used; calls fail quickly while Redis is unreachable (the
// resolver then fetches for itself).
func NewRobotsStore(opts RobotsOptions) (*RobotsStore, error) {
	prefix := opts.KeyPrefix
	if prefix == "" {
		prefix = DefaultKeyPrefix
	}
	s := &RobotsStore{conn: opts.Conn, prefix: prefix}
	if s.conn == nil {
		if opts.Addr == "" {
			return nil, errors.New("fleet: robots store: no Redis address")
		}
		timeout := opts.Timeout
		if timeout <= 0 {
			timeout = 500 * time.Millisecond
		}
		conn, err := redisconn.Open(redisconn.Options{Addr: opts.Addr, Username: opts.Username, Password: opts.Password,
			DB: opts.DB, TLS: opts.TLS, DialTimeout: timeout, ReadTimeout: timeout, WriteTimeout: timeout})
		if err != nil {
			return nil, fmt.Errorf("fleet: %w", err)
		}
		s.conn, s.ownConn = conn, true
	}
	s.client = s.conn.Client()
	return s, nil
}

// key is the Redis key of o's record, or with what "lock:" before it.
func (s *RobotsStore) key(what string, o origin.Origin) string {
	return s.prefix + what + "{" + o.String() + "}"
}

// record is the stored form of a resolver.Record.
type record struct {
	Status     resolver.Status `json:"status"`
	HTTPStatus int             `json:"http_status"`
	URL        string          `json:"url"`
	Body       []byte          `json:"body"`
	FetchedAt  time.Time       `json:"fetched_at"`
	Expires    time.Time       `json:"expires"`
	Truncated  bool            `json:"-"` // set by resolver.LoadRecord only
}

// Load implements resolver.Store. It reads at most MaxRecordBytes+1 bytes
// of the key (GETRANGE); a longer record, one that does not decode and a
// key of another type are errors matching resolver.ErrCorruptRecord.
func (s *RobotsStore) Load(ctx context.Context, o origin.Origin) (resolver.Record, bool, error) {
	data, err := s.client.GetRange(ctx, s.key("", o), 0, MaxRecordBytes).Bytes()
	switch {
	case err != nil && strings.HasPrefix(err.Error(), "WRONGTYPE"):
		return resolver.Record{}, false, fmt.Errorf("fleet: robots.txt of %s: %w: %w", o, resolver.ErrCorruptRecord, err)
	case err != nil:
		return resolver.Record{}, false, fmt.Errorf("fleet: load robots.txt of %s: %w", o, err)
	case len(data) == 0: // no key (GETRANGE answers "")
		return resolver.Record{}, false, nil
	case len(data) > MaxRecordBytes:
		return resolver.Record{}, false, fmt.Errorf("fleet: robots.txt of %s: %w: longer than %d bytes", o, resolver.ErrCorruptRecord, MaxRecordBytes)
	}
	var r record
	if err := json.Unmarshal(data, &r); err != nil {
		return resolver.Record{}, false, fmt.Errorf("fleet: decode robots.txt of %s: %w: %w", o, resolver.ErrCorruptRecord, err)
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
	if err := s.client.Set(ctx, s.key("", o), data, ttl).Err(); err != nil {
		return fmt.Errorf("fleet: save robots.txt of %s: %w", o, err)
	}
	return nil
}

// CountCorrupt implements resolver.CorruptCounter.
func (s *RobotsStore) CountCorrupt() { s.corrupt.Add(1) }

// Corrupted returns how many corrupt records were found in the store, for
// a metric.
func (s *RobotsStore) Corrupted() uint64 { return s.corrupt.Load() }

// Close closes the Redis connections, unless RobotsOptions.Conn gave
// them.
func (s *RobotsStore) Close() error {
	if !s.ownConn {
		return nil
	}
	return s.conn.Close()
}
