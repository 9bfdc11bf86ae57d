package resolver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/robotsgate/robotsgate/egress"
	"github.com/robotsgate/robotsgate/robots"
)

// TestFetchFile: another file of an origin is fetched with robots.txt's
// status classes, headers, size bound and client.
func TestFetchFile(t *testing.T) {
	const path = "/.well-known/tdmrep.json"
	tests := []struct {
		name   string
		h      http.HandlerFunc
		status Status
		cause  string
	}{
		{"200", serveRobots(`[{"location":"/","tdm-reservation":1}]`), OK, ""},
		{"404: no file", serveStatus(404), Unavailable, ""},
		{"410: no file", serveStatus(410), Unavailable, ""},
		{"403: no file", serveStatus(403), Unavailable, ""},
		{"429: unknown", serveStatus(429, "Retry-After", "120"), Unreachable, CauseHTTP429},
		{"500: unknown", serveStatus(500), Unreachable, CauseHTTP5xx},
		{"503: unknown", serveStatus(503), Unreachable, CauseHTTP5xx},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var seen atomic.Pointer[http.Request]
			o := startOrigin(t, "127.0.0.2", false, func(w http.ResponseWriter, r *http.Request) {
				seen.Store(r)
				w.Header().Set("Cache-Control", "max-age=600")
				tt.h(w, r)
			})
			r := newResolver(t, Config{UserAgent: "gate/2"})
			a := r.FetchFile(context.Background(), o.origin, path, "application/json")
			if a.Status != tt.status || a.Cause() != tt.cause {
				t.Errorf("status %v cause %q, want %v %q (err %v)", a.Status, a.Cause(), tt.status, tt.cause, a.Err)
			}
			got := seen.Load()
			if got == nil || got.URL.Path != path || got.UserAgent() != "gate/2" || got.Header.Get("Accept") != "application/json" {
				t.Fatalf("the origin got %+v", got)
			}
			if a.URL != o.URL+path || a.MaxAge != 10*time.Minute {
				t.Errorf("URL %q max-age %v", a.URL, a.MaxAge)
			}
			if tt.status == OK && string(a.Body) != `[{"location":"/","tdm-reservation":1}]` {
				t.Errorf("body %q", a.Body)
			}
			if tt.status == Unreachable && tt.cause == CauseHTTP429 && a.RetryAfter != 2*time.Minute {
				t.Errorf("Retry-After %v", a.RetryAfter)
			}
		})
	}
}

func TestFetchFileBounds(t *testing.T) {
	big := strings.Repeat("x", robots.MaxFileSize+100)
	o := startOrigin(t, "127.0.0.2", false, serveRobots(big))
	a := newResolver(t, Config{}).FetchFile(context.Background(), o.origin, "/big", "*/*")
	if a.Status != OK || len(a.Body) != robots.MaxFileSize || !a.Truncated {
		t.Errorf("status %v, %d bytes, truncated %v", a.Status, len(a.Body), a.Truncated)
	}
}

// TestFetchFileGoesThroughTheGuardAndTheProxy: the egress guard refuses a
// forbidden address (unknown, not "no file"), and a configured parent
// proxy carries the fetch.
func TestFetchFileGoesThroughTheGuardAndTheProxy(t *testing.T) {
	forbidden := mustOrigin(t, "http://127.0.0.1:1")
	a := newResolver(t, Config{}).FetchFile(context.Background(), forbidden, "/.well-known/tdmrep.json", "*/*")
	var denied *egress.DeniedError
	if a.Status != Unreachable || !errors.As(a.Err, &denied) {
		t.Errorf("a forbidden address: status %v err %v", a.Status, a.Err)
	}

	var atProxy atomic.Value
	atProxy.Store("")
	parent := startOrigin(t, "127.0.0.3", false, func(w http.ResponseWriter, r *http.Request) {
		atProxy.Store(r.RequestURI)
		fmt.Fprint(w, "[]")
	})
	parentURL, _ := url.Parse(parent.URL)
	r := newResolver(t, Config{Proxy: func(*http.Request) (*url.URL, error) { return parentURL, nil }})
	a = r.FetchFile(context.Background(), mustOrigin(t, "http://site.test"), "/.well-known/tdmrep.json", "*/*")
	if a.Status != OK || atProxy.Load() != "http://site.test/.well-known/tdmrep.json" {
		t.Errorf("through the proxy: status %v (err %v), the proxy got %q", a.Status, a.Err, atProxy.Load())
	}
}

func TestRetryDelayAndFreshness(t *testing.T) {
	r := newResolver(t, Config{MinTTL: time.Minute, MaxTTL: time.Hour, RetryMin: 10 * time.Second, RetryMax: 40 * time.Second})
	for _, c := range []struct {
		failures   int
		retryAfter time.Duration
		want       time.Duration
	}{{1, 0, 10 * time.Second}, {2, 0, 20 * time.Second}, {5, 0, 40 * time.Second}, {1, 30 * time.Second, 30 * time.Second}, {1, 2 * time.Hour, time.Hour}} {
		if got := r.RetryDelay(c.failures, c.retryAfter); got != c.want {
			t.Errorf("RetryDelay(%d, %v) = %v, want %v", c.failures, c.retryAfter, got, c.want)
		}
	}
	for _, c := range [][2]time.Duration{{-1, time.Hour}, {0, time.Minute}, {10 * time.Minute, 10 * time.Minute}, {48 * time.Hour, time.Hour}} {
		if got := r.Freshness(c[0]); got != c[1] {
			t.Errorf("Freshness(%v) = %v, want %v", c[0], got, c[1])
		}
	}
}
