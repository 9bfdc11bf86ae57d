package resolver

import (
	"context"
	"log/slog"
	"time"

	"github.com/robotsgate/robotsgate/archive"

	"github.com/robotsgate/robotsgate/origin"
	"github.com/robotsgate/robotsgate/robots"
)

// Store shares fetched robots.txt files between robotsgate instances, so a
// fleet fetches each origin once per freshness period. It holds the raw
// bodies (each instance parses for itself) and only OK and Unavailable
// verdicts: each instance retries failures on its own schedule.
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
	Body       []byte // the first robots.MaxFileSize+1 bytes, for OK
	FetchedAt  time.Time
	Expires    time.Time
}

// storeTimeout bounds each store call: a slow store must not hold requests
// longer than a fetch would.
const storeTimeout = 2 * time.Second

// LoadRecord returns o's record from store when it holds one that is
// fresh at now and OK or Unavailable, asking for at most storeTimeout
// within ctx. A failing store counts as none (logged, naming what is
// stored): the caller then fetches for itself. For caches of other files
// kept as robots.txt is (tdmrep.json).
func LoadRecord(ctx context.Context, store Store, o origin.Origin, now time.Time, what string) (Record, bool) {
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	rec, ok, err := store.Load(ctx, o)
	if err != nil {
		slog.Warn(what+" store load failed", "origin", o.String(), "err", err)
		return Record{}, false
	}
	if !ok || !now.Before(rec.Expires) || (rec.Status != OK && rec.Status != Unavailable) {
		return Record{}, false
	}
	return rec, true
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
	rec, ok := LoadRecord(r.ctx, r.cfg.Store, o, r.cfg.Now(), "robots.txt")
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
	rec, found, unlock := FetchOnce(r.ctx, r.cfg.Store, o, r.cfg.Now, r.cfg.FetchTimeout+time.Second, "robots.txt")
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
		if r.cfg.OnAnswer != nil {
			res.setBody(archive.Sum(rec.Body), "", "")
		}
	}
	if r.cfg.OnAnswer != nil {
		r.cfg.OnAnswer(Answer{Result: res, Time: rec.FetchedAt, FinalURL: rec.URL, HTTPStatus: rec.HTTPStatus, Body: rec.Body, Shared: true})
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
