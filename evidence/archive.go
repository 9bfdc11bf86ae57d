package evidence

import (
	"net/http"

	"github.com/robotsgate/robotsgate/archive"
	"github.com/robotsgate/robotsgate/config"
	"github.com/robotsgate/robotsgate/doccache"
	"github.com/robotsgate/robotsgate/robots/resolver"
)

// openArchive starts the robots.txt archive (archive.dir), nil when off.
// Its writes never hold a request: the resolver hands each answer over
// (archiveAnswer; archiveTDMRep for tdmrep.json, archiveRSL for RSL
// documents) and a goroutine of the archive writes it.
func (e *Evidence) openArchive(cfg config.Archive) error {
	if cfg.Dir == "" {
		return nil
	}
	w, err := archive.Open(cfg.Dir, e.key, func(err error) {
		e.log.Warn("robots.txt archive: a record was not written", "err", err)
	})
	if err != nil {
		return err
	}
	e.archive = w
	return nil
}

// archiveAnswer records one robots.txt answer: the fetch line, and the
// body when the resolver judged one.
func (e *Evidence) archiveAnswer(a resolver.Answer) {
	res := a.Result
	f := archive.Fetch{
		Time: a.Time.UTC(), Origin: res.Origin().String(), RobotsURL: res.Origin().RobotsURL(), FinalURL: a.FinalURL,
		HTTPStatus: a.HTTPStatus, Outcome: res.Status.String(), Cause: res.Cause(),
		SHA256: res.SHA256(), Size: len(a.Body), Truncated: a.Truncated,
	}
	if res.Stale {
		f.Outcome, f.SHA256 = resolver.Unreachable.String(), "" // the copy kept is not this fetch's body
	}
	if a.Shared {
		f.From = "shared-store"
	}
	e.recordFetch(&f, a.Header, a.Body)
}

// recordFetch archives a fetch line with the answer's header fields, and
// the body when the line names one.
func (e *Evidence) recordFetch(f *archive.Fetch, h http.Header, body []byte) {
	if h != nil {
		f.CacheControl, f.Expires, f.ETag = h.Get("Cache-Control"), h.Get("Expires"), h.Get("ETag")
		f.LastModified, f.Date, f.ContentType = h.Get("Last-Modified"), h.Get("Date"), h.Get("Content-Type")
	}
	if f.SHA256 == "" {
		body = nil
	}
	e.archive.Record(*f, body)
}

// archiveTDMRep records one tdmrep.json answer as robots.txt's are: a
// fetch line (robots_url is the tdmrep.json URL, which tells them apart)
// and the body by its SHA-256.
func (e *Evidence) archiveTDMRep(a doccache.TDMRepAnswer) {
	res := a.Result
	e.archiveDocument(archive.Fetch{
		Time: a.Time.UTC(), Origin: res.Origin.String(), RobotsURL: a.FetchedURL, FinalURL: a.FinalURL,
		HTTPStatus: a.HTTPStatus, Outcome: res.Status.String(), Cause: res.Cause(),
		SHA256: res.SHA256, Size: len(a.Body), Truncated: a.Truncated,
	}, res.Stale, a.Shared, a.Header, a.Body)
}

// archiveRSL records one RSL document answer as tdmrep.json's are: a
// fetch line (robots_url is the document's URL) and the body by its
// SHA-256.
func (e *Evidence) archiveRSL(a doccache.RSLAnswer) {
	res := a.Result
	e.archiveDocument(archive.Fetch{
		Time: a.Time.UTC(), Origin: a.Origin.String(), RobotsURL: a.FetchedURL, FinalURL: a.FinalURL,
		HTTPStatus: a.HTTPStatus, Outcome: res.Status.String(), Cause: res.Cause(),
		SHA256: res.SHA256, Size: len(a.Body), Truncated: a.Truncated,
	}, res.Stale, a.Shared, a.Header, a.Body)
}

// archiveDocument records the fetch f of a file fetched beside robots.txt
// (tdmrep.json, an RSL document) and its body: a stale answer (the copy
// kept after a failed fetch) as unreachable without a body, one read from
// the fleet's shared store as such.
func (e *Evidence) archiveDocument(f archive.Fetch, stale, shared bool, h http.Header, body []byte) {
	if stale {
		f.Outcome, f.SHA256 = resolver.Unreachable.String(), "" // the copy kept is not this fetch's body
	}
	if shared {
		f.From = "shared-store"
	}
	e.recordFetch(&f, h, body)
}

// OnRSL is the RSL cache's OnAnswer: nil without an archive.
func (e *Evidence) OnRSL() func(doccache.RSLAnswer) {
	if e.archive == nil {
		return nil
	}
	return e.archiveRSL
}

// OnTDMRep is the tdmrep.json cache's OnAnswer: nil without an archive.
func (e *Evidence) OnTDMRep() func(doccache.TDMRepAnswer) {
	if e.archive == nil {
		return nil
	}
	return e.archiveTDMRep
}

// OnRobots is the resolver's OnAnswer: nil without an archive, so that
// files keep no SHA-256 then.
func (e *Evidence) OnRobots() func(resolver.Answer) {
	if e.archive == nil {
		return nil
	}
	return e.archiveAnswer
}
