package resolver

import (
	"context"
	"github.com/robotsgate/robotsgate/archive"
	"log/slog"
	"time"

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

func (r *Resolver) fromStore(o origin.Origin) (*Result, bool) {
	if r.cfg.Store == nil {
		return nil, false
	}
	ctx, cancel := context.WithTimeout(r.ctx, storeTimeout)
	defer cancel()
	rec, ok, err := r.cfg.Store.Load(ctx, o)
	if err != nil {
		slog.Warn("robots.txt store load failed", "origin", o.String(), "err", err)
		return nil, false
	}
	if !ok || !r.cfg.Now().Before(rec.Expires) || (rec.Status != OK && rec.Status != Unavailable) {
		return nil, false
	}
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
	return res, true
}

func (r *Resolver) toStore(o origin.Origin, res *Result, f fetched) {
	if r.cfg.Store == nil {
		return
	}
	ctx, cancel := context.WithTimeout(r.ctx, storeTimeout)
	defer cancel()
	rec := Record{
		Status: res.Status, HTTPStatus: res.HTTPStatus, URL: res.URL(), Body: f.body,
		FetchedAt: res.FetchedAt(), Expires: res.Expires(),
	}
	if err := r.cfg.Store.Save(ctx, o, rec); err != nil {
		slog.Warn("robots.txt store save failed", "origin", o.String(), "err", err)
	}
}
