package resolver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/robotsgate/robotsgate/archive"

	"github.com/robotsgate/robotsgate/origin"
	"github.com/robotsgate/robotsgate/robots"
)

// Store shares fetched robots.txt files between robotsgate instances, so a
// fleet fetches each origin once per freshness period. It holds the raw
// bodies (each instance parses for itself) and only OK and Unavailable
// verdicts: each instance retries failures on its own schedule. What a
// Store returns is not trusted: LoadRecord checks every record.
type Store interface {
	// Load returns the record for o, ok=false when there is none.
	Load(ctx context.Context, o origin.Origin) (rec Record, ok bool, err error)
	// Save stores rec for o until rec.Expires.
	Save(ctx context.Context, o origin.Origin, rec Record) error
}

// Record is a fetched robots.txt as a Store keeps it.
type Record struct {
	Status     Status // OK or Unavailable
	HTTPStatus int
	URL        string
	Body       []byte // at most robots.MaxFileSize bytes, for OK
	FetchedAt  time.Time
	Expires    time.Time
	// Truncated is set by LoadRecord when the stored Body was longer than
	// robots.MaxFileSize and was cut to it; stores need not keep it.
	Truncated bool
}

// ErrCorruptRecord is matched (errors.Is) by the error a Store returns for
// a record it cannot decode; LoadRecord counts such a record as corrupt.
var ErrCorruptRecord = errors.New("corrupt record")

// CorruptCounter is implemented by a Store that counts the corrupt records
// LoadRecord finds in it (for a metric).
type CorruptCounter interface {
	// CountCorrupt counts one corrupt record.
	CountCorrupt()
}

// maxRecordURL bounds a record's URL: a redirect target longer than a
// response header may be was not written by a robotsgate.
const maxRecordURL = 64 << 10

// latestTime is the latest time a Result can hold (Unix nanoseconds).
var latestTime = time.Unix(0, math.MaxInt64)

// storeTimeout bounds each store call: a slow store must not hold requests
// longer than a fetch would.
const storeTimeout = 2 * time.Second

// LoadRecord returns o's record from store when it holds one that is
// fresh at now, asking for at most storeTimeout within ctx. A failing
// store counts as none (logged, naming what is stored): the caller then
// fetches for itself. For caches of other files kept as robots.txt is
// (tdmrep.json, whose size limit is robots.txt's).
//
// Records are written by other processes and are checked as a robotsgate
// with a robots.max_ttl of maxTTL would have written them (checkRecord): a
// corrupt one counts as none too, so the caller fetches as if the store
// held nothing (logged, and counted when store is a CorruptCounter); an
// accepted one expires at most maxTTL from now, and a body beyond
// robots.MaxFileSize is cut to it (Truncated; logged and counted as well).
func LoadRecord(ctx context.Context, store Store, o origin.Origin, now time.Time, maxTTL time.Duration, what string) (Record, bool) {
	return loadRecord(ctx, store, o, now, maxTTL, what, corruptRecord)
}

// loadRecord is LoadRecord telling corrupt of a corrupt record: a second
// look at the same key (FetchOnce) passes one that does nothing, so that
// a record is logged and counted once.
func loadRecord(ctx context.Context, store Store, o origin.Origin, now time.Time, maxTTL time.Duration, what string,
	corrupt func(Store, origin.Origin, string, error)) (Record, bool) {
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	rec, ok, err := store.Load(ctx, o)
	switch {
	case errors.Is(err, ErrCorruptRecord):
		corrupt(store, o, what, err)
		return Record{}, false
	case err != nil:
		slog.Warn(what+" store load failed", "origin", o.String(), "err", err)
		return Record{}, false
	case !ok:
		return Record{}, false
	}
	rec, err = checkRecord(rec, now, maxTTL)
	if err != nil {
		corrupt(store, o, what, err)
		return Record{}, false
	}
	if !now.Before(rec.Expires) {
		return Record{}, false
	}
	if rec.Truncated {
		corrupt(store, o, what, fmt.Errorf("body longer than %d bytes: cut to them", robots.MaxFileSize))
	}
	return rec, true
}

// checkRecord returns rec as a robotsgate with this maxTTL may use it at
// now, or why no robotsgate wrote it: a status other than OK and
// Unavailable, a freshness (Expires - FetchedAt) not within (0, maxTTL], a
// fetch further in the future than maxTTL, a time a Result cannot hold, an
// HTTP status beyond 599, a URL longer than a header. It clamps Expires to
// now + maxTTL (a writer whose clock runs ahead) and cuts a body longer
// than robots.MaxFileSize, setting Truncated.
func checkRecord(rec Record, now time.Time, maxTTL time.Duration) (Record, error) {
	fresh := rec.Expires.Sub(rec.FetchedAt)
	switch {
	case rec.Status != OK && rec.Status != Unavailable:
		return rec, fmt.Errorf("status %d is not one a robotsgate stores", rec.Status)
	case fresh <= 0 || fresh > maxTTL:
		return rec, fmt.Errorf("fresh from %s to %s: not within robots.max_ttl (%s)",
			rec.FetchedAt.Format(time.RFC3339), rec.Expires.Format(time.RFC3339), maxTTL)
	case rec.FetchedAt.After(now.Add(maxTTL)) || rec.FetchedAt.Before(time.Unix(0, 0)) || rec.Expires.After(latestTime):
		return rec, fmt.Errorf("fetched at %s: not a time a robotsgate wrote", rec.FetchedAt.Format(time.RFC3339))
	case rec.HTTPStatus < 0 || rec.HTTPStatus > 599:
		return rec, fmt.Errorf("HTTP status %d", rec.HTTPStatus)
	case len(rec.URL) > maxRecordURL:
		return rec, fmt.Errorf("URL of %d bytes", len(rec.URL))
	}
	if latest := now.Add(maxTTL); rec.Expires.After(latest) {
		rec.Expires = latest
	}
	if len(rec.Body) > robots.MaxFileSize {
		// A copy: the rest of the stored body is not kept alive with it.
		rec.Body, rec.Truncated = bytes.Clone(rec.Body[:robots.MaxFileSize]), true
	}
	return rec, nil
}

// corruptRecord logs a corrupt record of o and counts it in store.
func corruptRecord(store Store, o origin.Origin, what string, err error) {
	slog.Warn(what+" store: corrupt record, not trusted", "origin", o.String(), "err", err)
	if c, ok := store.(CorruptCounter); ok {
		c.CountCorrupt()
	}
}

// SaveRecord stores rec for o, asking for at most storeTimeout within
// ctx; a failure is only logged.
func SaveRecord(ctx context.Context, store Store, o origin.Origin, rec Record, what string) {
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	if err := store.Save(ctx, o, rec); err != nil {
		slog.Warn(what+" store save failed", "origin", o.String(), "err", err)
	}
}

func (r *Resolver) fromStore(o origin.Origin) (*Result, bool) {
	if r.cfg.Store == nil {
		return nil, false
	}
	rec, ok := LoadRecord(r.ctx, r.cfg.Store, o, r.cfg.Now(), r.cfg.MaxTTL, "robots.txt")
	if !ok {
		return nil, false
	}
	return r.fromRecord(o, rec), true
}

// fleetFetch makes this instance the fleet's one to fetch o's cold
// robots.txt, or returns the result another instance fetched meanwhile
// (see FetchOnce). Call unlock once fetched.
func (r *Resolver) fleetFetch(o origin.Origin) (res *Result, unlock func()) {
	if r.cfg.Store == nil {
		return nil, func() {}
	}
	rec, found, unlock := FetchOnce(r.ctx, r.cfg.Store, o, r.cfg.Now, r.cfg.FetchTimeout+time.Second, r.cfg.MaxTTL, "robots.txt")
	if found {
		return r.fromRecord(o, rec), nil
	}
	return nil, unlock
}

// fromRecord turns a record another instance stored into a Result.
func (r *Resolver) fromRecord(o origin.Origin, rec Record) *Result {
	res := newResult(o, rec.Status, rec.HTTPStatus)
	res.fetchedAt, res.expires = rec.FetchedAt.UnixNano(), rec.Expires.UnixNano()
	res.setDetail(nil, rec.URL)
	if rec.Status == OK {
		res.File = robots.Parse(rec.Body)
		res.File.Truncated = res.File.Truncated || rec.Truncated
		if r.cfg.OnAnswer != nil {
			res.setBody(archive.Sum(rec.Body), "", "")
		}
	}
	if r.cfg.OnAnswer != nil {
		r.cfg.OnAnswer(Answer{Result: res, Time: rec.FetchedAt, FinalURL: rec.URL, HTTPStatus: rec.HTTPStatus,
			Body: rec.Body, Truncated: rec.Truncated, Shared: true})
	}
	return res
}

func (r *Resolver) toStore(o origin.Origin, res *Result, f fetched) {
	if r.cfg.Store == nil {
		return
	}
	SaveRecord(r.ctx, r.cfg.Store, o, Record{
		Status: res.Status, HTTPStatus: res.HTTPStatus, URL: res.URL(), Body: f.body,
		FetchedAt: res.FetchedAt(), Expires: res.Expires(),
	}, "robots.txt")
}
