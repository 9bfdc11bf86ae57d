package proxy

import (
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
)

// An unreachable robots.txt says why, the same way everywhere: the 503's
// body and its Proxy-Status error type, the audit record's robots_error,
// and one WARN line per origin per failure streak with what to do
// (regression: "no response" for a certificate failure and a refused
// connection alike, the cause only in /explain).
func TestUnreachableRobotsSaysWhy(t *testing.T) {
	untrusted := startOrigin(t, "127.0.0.1", true, testRobots, 0) // its CA is not in mitm.upstream_ca
	failing := startOrigin(t, "127.0.0.2", false, "", http.StatusBadGateway)
	closed, err := net.Listen("tcp", "127.0.0.3:0")
	if err != nil {
		t.Fatal(err)
	}
	refusedURL := "http://" + closed.Addr().String()
	closed.Close()

	cfg := testConfig(t, nil)
	cfg.Log.Audit = filepath.Join(t.TempDir(), "audit.log")
	p := startProxy(t, cfg)
	c := p.client()
	for _, tt := range []struct {
		url, cause, proxyError, says string
	}{
		{untrusted.URL, "tls_certificate_error", "tls_certificate_error", "mitm.upstream_ca"},
		{refusedURL, "connection_refused", "connection_refused", "the connection was refused"},
		{failing.URL, "http_5xx", "http_request_denied", "server error, HTTP 502"},
	} {
		for range 2 { // the second is answered from the cached failure
			resp, body := get(t, c, tt.url+"/page", "Accept", "text/plain")
			checkRefusal(t, resp, 503, "unreachable", tt.proxyError)
			if !strings.Contains(body, tt.says) || !strings.Contains(body, tt.cause) {
				t.Errorf("%s: the 503 body does not say %q (%s):\n%s", tt.url, tt.says, tt.cause, body)
			}
		}
		if n := strings.Count(p.logText(), `msg="robots.txt unreachable: requests to this origin are refused until it can be fetched" origin=`+tt.url+" cause="+tt.cause); n != 1 {
			t.Errorf("%s: %d WARN lines for one failure streak, want 1:\n%s", tt.url, n, p.logText())
		}
	}
	var got []any
	for _, r := range waitAudit(t, cfg.Log.Audit, 7) { // and the https origin's CONNECT
		if r["method"] != "CONNECT" {
			got = append(got, r["robots_error"])
		}
	}
	want := []any{"tls_certificate_error", "tls_certificate_error", "connection_refused", "connection_refused", "http_5xx", "http_5xx"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("audit robots_error %v, want %v", got, want)
	}
}
