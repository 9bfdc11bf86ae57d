package resolver

import (
	"context"
	"log/slog"
	"time"

	"github.com/robotsgate/robotsgate/origin"
)

// A fleet shares the files it fetches through its Store; a Store that is
// also a Locker makes sure that one instance fetches a cold file while the
// others wait for its record, instead of all of them fetching it at the
// same moment.

// Locker is a Store that can keep the other instances of a fleet from
// fetching a file one of them is fetching.
type Locker interface {
	// Lock takes o's fetch lock for ttl: ok is false while another
	// instance holds it. unlock releases it if it is still this one's.
	Lock(ctx context.Context, o origin.Origin, ttl time.Duration) (unlock func(), ok bool, err error)
}

// lockPoll is how often an instance that waits for another's fetch looks
// for its record: the store has no way to tell it.
const lockPoll = 25 * time.Millisecond

// FetchOnce arranges that one instance of a fleet fetches o's cold file.
// It returns the record another instance stored while this one waited
// (found), or else unlock, which this instance calls once it has fetched
// (and stored) the file itself. It waits at most wait for the other's
// record: after that, or when the store is no Locker or fails, this
// instance fetches too (an unreachable file, which is not stored, is so
// fetched by each instance in turn). A record found is checked as
// LoadRecord checks it, against maxTTL.
func FetchOnce(ctx context.Context, store Store, o origin.Origin, now func() time.Time, wait, maxTTL time.Duration, what string) (rec Record, found bool, unlock func()) {
	l, ok := store.(Locker)
	if !ok {
		return Record{}, false, func() {}
	}
	deadline := time.Now().Add(wait)
	for {
		unlock, ok, err := lock(ctx, l, o, wait)
		if err != nil {
			slog.Warn(what+" fetch lock failed: fetching without it", "origin", o.String(), "err", err)
			return Record{}, false, func() {}
		}
		// Look again once locked too: the instance that held the lock
		// may have stored its record and let go just before.
		if rec, ok := loadRecord(ctx, store, o, now(), maxTTL, what, func(Store, origin.Origin, string, error) {}); ok {
			if unlock != nil {
				unlock()
			}
			return rec, true, nil
		}
		if ok {
			return Record{}, false, unlock
		}
		if time.Now().After(deadline) || sleepCtx(ctx, lockPoll) != nil {
			return Record{}, false, func() {}
		}
	}
}

// lock takes o's lock within storeTimeout.
func lock(ctx context.Context, l Locker, o origin.Origin, ttl time.Duration) (func(), bool, error) {
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	return l.Lock(ctx, o, ttl)
}

// sleepCtx waits d or until ctx is done.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
