package resolver

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/robotsgate/robotsgate/origin"
	"github.com/robotsgate/robotsgate/robots"
)

// maxRedirects is how many redirects are followed (RFC 9309 §2.3.1.2: at
// least five).
const maxRedirects = 5

var (
	errTooManyRedirects = errors.New("more than 5 redirects")
	errRedirectLoop     = errors.New("redirect loop")
)

// newClient builds the dedicated client robots.txt is fetched with: never
// through a proxy from the environment (only cfg.Proxy), through the
// configured dialer (the egress guard), TLS verified, every phase bounded.
// A client without keepAlive keeps no connection after a fetch.
func newClient(cfg *Config, keepAlive bool) *http.Client {
	tr := &http.Transport{
		DisableKeepAlives:      !keepAlive,
		Proxy:                  cfg.Proxy,
		DialContext:            cfg.DialContext,
		TLSClientConfig:        &tls.Config{RootCAs: cfg.RootCAs, MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout:    cfg.FetchTimeout,
		ResponseHeaderTimeout:  cfg.FetchTimeout,
		IdleConnTimeout:        30 * time.Second,
		MaxIdleConns:           100,
		MaxIdleConnsPerHost:    2,
		MaxResponseHeaderBytes: 64 << 10,
		ForceAttemptHTTP2:      true,
	}
	var rt http.RoundTripper = tr
	if cfg.WrapTransport != nil {
		rt = cfg.WrapTransport(tr)
	}
	return &http.Client{
		Transport:     rt,
		CheckRedirect: checkRedirect,
	}
}

func checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) > maxRedirects {
		return errTooManyRedirects
	}
	next := req.URL.String()
	for _, v := range via {
		if v.URL.String() == next {
			return errRedirectLoop
		}
	}
	return nil
}

// StatusError is a robots.txt answer that makes the origin unreachable:
// 429, 5xx, 1xx, or a 407 from a parent proxy.
type StatusError struct {
	URL  string
	Code int
}

func (e *StatusError) Error() string { return fmt.Sprintf("fetch %s: HTTP %d", e.URL, e.Code) }

// fetched is the outcome of one fetch before caching decisions.
type fetched struct {
	status     Status
	file       *robots.File
	body       []byte // the bytes file was parsed from, for the shared store
	httpStatus int
	url        string
	maxAge     time.Duration // -1 when the response gave none
	retryAfter time.Duration // from a 429/503, 0 when none
	err        error
	header     http.Header // the final answer's, nil when there was none
	truncated  bool        // the body was longer than robots.MaxFileSize
	// notModified: a 304 to a conditional request; the cached file stands.
	notModified bool
	// failedAt is the URL whose request failed when it is not url: a
	// redirect's target (refused by the egress guard, unreachable).
	failedAt string
}

// finalURL is where the fetch ended: where the answer came from, or the
// redirect target that could not be reached.
func (f *fetched) finalURL() string { return cmp.Or(f.failedAt, f.url) }

// fetch performs one GET of o's robots.txt, bounded as a whole (body
// included) by the fetch timeout, and classifies the outcome by RFC 9309.
// With prev's validators the GET is conditional (RFC 9110 §13.1), and a 304
// keeps prev's file (RFC 9309 §2.4 lets a crawler revalidate).
func (r *Resolver) fetch(ctx context.Context, client *http.Client, o origin.Origin, prev *Result) fetched {
	var etag, lastModified string
	if prev != nil && prev.Status == OK && !prev.Stale {
		etag, lastModified = prev.validators()
	}
	f := r.getWith(ctx, client, o.RobotsURL(), "text/plain, */*;q=0.5", etag, lastModified)
	if f.status == OK && !f.notModified {
		// Parse sees one byte past the limit, to tell the file was cut;
		// only the first MaxFileSize bytes are judged (RFC 9309 §2.5):
		// those are what is archived and hashed.
		f.file = robots.Parse(f.body)
		if f.truncated {
			f.body = f.body[:robots.MaxFileSize]
		}
	}
	return f
}

// get performs one GET of u, bounded as a whole (body included) by the
// fetch timeout, conditional when etag or lastModified is set, and
// classifies the answer by RFC 9309's status classes. The body of a 2xx is
// read up to one byte past robots.MaxFileSize (truncated says it went
// past); the caller parses it.
func (r *Resolver) get(ctx context.Context, u, accept, etag, lastModified string) fetched {
	return r.getWith(ctx, r.client, u, accept, etag, lastModified)
}

// getWith is get through client.
func (r *Resolver) getWith(ctx context.Context, client *http.Client, u, accept, etag, lastModified string) fetched {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.FetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return fetched{status: Unreachable, url: u, err: fmt.Errorf("fetch %s: %w", u, err)}
	}
	req.Header.Set("User-Agent", r.cfg.UserAgent)
	req.Header.Set("Accept", accept)
	if etag != "" {
		req.Header.Set("If-None-Match", etag)
	}
	if lastModified != "" {
		req.Header.Set("If-Modified-Since", lastModified)
	}
	conditional := etag != "" || lastModified != ""
	resp, err := client.Do(req)
	if err != nil {
		if errors.Is(err, errTooManyRedirects) || errors.Is(err, errRedirectLoop) {
			return fetched{status: Unavailable, url: u, maxAge: -1, err: fmt.Errorf("fetch %s: %w", u, err)}
		}
		f := fetched{status: Unreachable, url: u, err: fmt.Errorf("fetch %s: %w", u, err)}
		if ue, ok := errors.AsType[*url.Error](err); ok && ue.URL != u {
			f.failedAt = ue.URL // a redirect's target, which the egress guard may have refused
		}
		return f
	}
	defer resp.Body.Close()
	f := fetched{httpStatus: resp.StatusCode, url: resp.Request.URL.String(), maxAge: maxAge(resp.Header), header: resp.Header}
	switch code := resp.StatusCode; {
	case code == http.StatusNotModified && conditional:
		f.status, f.notModified = OK, true
	case code >= 200 && code < 300:
		body, err := io.ReadAll(io.LimitReader(resp.Body, robots.MaxFileSize+1))
		if err != nil {
			return fetched{status: Unreachable, httpStatus: code, url: f.url, header: resp.Header, err: fmt.Errorf("fetch %s: reading body: %w", f.url, err)}
		}
		f.status, f.body, f.truncated = OK, body, len(body) > robots.MaxFileSize
	// A 407 comes from a proxy on the way (the parent refused our
	// credentials), never from the origin: the file's status is unknown.
	case code == http.StatusTooManyRequests || code == http.StatusProxyAuthRequired || code >= 500 || code < 200:
		f.status = Unreachable
		f.retryAfter = retryAfter(resp.Header.Get("Retry-After"), r.cfg.Now())
		f.err = &StatusError{URL: f.url, Code: code}
	default: // 3xx that could not be followed, 4xx
		f.status = Unavailable
	}
	return f
}

// FileAnswer is the answer to FetchFile.
type FileAnswer struct {
	// Status classes the answer as a robots.txt's: OK (2xx), Unavailable
	// (other 4xx, or redirects that could not be followed), Unreachable
	// (429, 5xx, 407 from a parent proxy, 1xx, a network, DNS, TLS or
	// egress failure, the fetch timeout).
	Status Status
	// HTTPStatus is the final answer's status, 0 when there was none.
	HTTPStatus int
	// URL is where the answer came from, after redirects, or the
	// redirect's target that could not be reached (refused by the egress
	// guard).
	URL string
	// Header is the final answer's header, nil when there was none.
	Header http.Header
	// Body is the body of an OK answer, its first robots.MaxFileSize
	// bytes; Truncated says it was longer.
	Body      []byte
	Truncated bool
	// MaxAge is the answer's Cache-Control max-age (0 for no-store or
	// no-cache), -1 when it gave none; RetryAfter its Retry-After (429,
	// 503), 0 when none.
	MaxAge, RetryAfter time.Duration
	// Err says why the answer is Unreachable (and Unavailable after a
	// redirect loop or too many redirects); nil otherwise.
	Err error
}

// Cause names why the answer gave no file, as Result.Cause does.
func (a *FileAnswer) Cause() string { return CauseOf(a.Err) }

// FetchFile performs one GET of another file of o than its robots.txt
// (path, e.g. "/.well-known/tdmrep.json") exactly as robots.txt is fetched:
// the same client (egress guard, parent proxy, TLS roots, redirects),
// User-Agent, fetch timeout and size bound, with accept as the Accept
// header, and classes the answer by the same status rules. It neither
// caches nor archives: that is the caller's (with Freshness and
// RetryDelay for the same freshness rules).
func (r *Resolver) FetchFile(ctx context.Context, o origin.Origin, path, accept string) FileAnswer {
	f := r.get(ctx, o.URL(path), accept, "", "")
	if f.truncated {
		f.body = f.body[:robots.MaxFileSize]
	}
	return FileAnswer{
		Status: f.status, HTTPStatus: f.httpStatus, URL: f.finalURL(), Header: f.header,
		Body: f.body, Truncated: f.truncated, MaxAge: f.maxAge, RetryAfter: f.retryAfter, Err: f.err,
	}
}

// maxAge returns the Cache-Control max-age, 0 for no-store/no-cache, or -1
// when the response says nothing.
func maxAge(h http.Header) time.Duration {
	age := time.Duration(-1)
	for _, v := range h.Values("Cache-Control") {
		for d := range strings.SplitSeq(v, ",") {
			name, val, _ := strings.Cut(strings.TrimSpace(d), "=")
			switch strings.ToLower(name) {
			case "no-store", "no-cache":
				return 0
			case "max-age":
				if n, err := strconv.ParseInt(strings.Trim(val, `"`), 10, 64); err == nil && n >= 0 {
					age = time.Duration(min(n, int64(365*24*3600))) * time.Second
				}
			}
		}
	}
	return age
}

// retryAfter parses a Retry-After header: delay-seconds or an HTTP-date
// (RFC 9110 §10.2.3). It returns 0 when absent or invalid.
func retryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n <= 0 {
			return 0
		}
		return time.Duration(min(n, int64(365*24*3600))) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}
