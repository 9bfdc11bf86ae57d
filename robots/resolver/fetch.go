package resolver

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
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
func newClient(cfg *Config) *http.Client {
	tr := &http.Transport{
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
	return &http.Client{
		Transport:     tr,
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
}

// fetch performs one GET of o's robots.txt, bounded as a whole (body
// included) by the fetch timeout, and classifies the outcome by RFC 9309.
// With prev's validators the GET is conditional (RFC 9110 §13.1), and a 304
// keeps prev's file (RFC 9309 §2.4 lets a crawler revalidate).
func (r *Resolver) fetch(ctx context.Context, o origin.Origin, prev *Result) fetched {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.FetchTimeout)
	defer cancel()
	u := o.RobotsURL()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return fetched{status: Unreachable, url: u, err: fmt.Errorf("fetch %s: %w", u, err)}
	}
	req.Header.Set("User-Agent", r.cfg.UserAgent)
	req.Header.Set("Accept", "text/plain, */*;q=0.5")
	conditional := false
	if prev != nil && prev.Status == OK && !prev.Stale {
		etag, lastModified := prev.validators()
		if etag != "" {
			req.Header.Set("If-None-Match", etag)
		}
		if lastModified != "" {
			req.Header.Set("If-Modified-Since", lastModified)
		}
		conditional = etag != "" || lastModified != ""
	}
	resp, err := r.client.Do(req)
	if err != nil {
		if errors.Is(err, errTooManyRedirects) || errors.Is(err, errRedirectLoop) {
			return fetched{status: Unavailable, url: u, maxAge: -1, err: fmt.Errorf("fetch %s: %w", u, err)}
		}
		return fetched{status: Unreachable, url: u, err: fmt.Errorf("fetch %s: %w", u, err)}
	}
	defer resp.Body.Close()
	f := fetched{httpStatus: resp.StatusCode, url: resp.Request.URL.String(), maxAge: maxAge(resp.Header), header: resp.Header}
	switch code := resp.StatusCode; {
	case code == http.StatusNotModified && conditional:
		f.status, f.notModified = OK, true
	case code >= 200 && code < 300:
		// Read one byte past the limit so Parse can tell the file was cut.
		body, err := io.ReadAll(io.LimitReader(resp.Body, robots.MaxFileSize+1))
		if err != nil {
			return fetched{status: Unreachable, httpStatus: code, url: f.url, header: resp.Header, err: fmt.Errorf("fetch %s: reading body: %w", f.url, err)}
		}
		f.status, f.file, f.body = OK, robots.Parse(body), body
		if len(body) > robots.MaxFileSize {
			// Only the first MaxFileSize bytes are judged (RFC 9309 §2.5):
			// those are what is archived and hashed.
			f.body, f.truncated = body[:robots.MaxFileSize], true
		}
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
