package proxy

import (
	"crypto/tls"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A client that does not trust robotsgate's CA leaves a trace (regression:
// a debug line, and the audit said "CONNECT allow 200"): one WARN line per
// client and host per minute however often it retries, a metric by
// reason, the status page, and the CONNECT audited as client-tls-failed.
func TestClientThatDistrustsTheCAIsReported(t *testing.T) {
	o := startOrigin(t, "127.0.0.1", true, testRobots, 0)
	cfg := testConfig(t, o.Certificate())
	cfg.Log.Audit = filepath.Join(t.TempDir(), "audit.log")
	p := startProxy(t, cfg)
	host := strings.TrimPrefix(o.URL, "https://")
	for range 3 {
		c := dialProxy(t, p)
		fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", host, host)
		if resp, err := http.ReadResponse(c.r, nil); err != nil || resp.StatusCode != 200 {
			t.Fatalf("CONNECT: %v %v", resp, err)
		}
		tc := tls.Client(c.Conn, &tls.Config{ServerName: "127.0.0.1"}) // system roots only
		if err := tc.Handshake(); err == nil {
			t.Fatal("the handshake succeeded without trusting the CA")
		}
	}
	// Every message names the CA the client should trust where it is
	// (mitm.ca_cert, absolute), not where it was before the state
	// directory.
	install := "install " + absPath(t, cfg.MITM.CACert) + " in its trust store"
	recs := waitAudit(t, cfg.Log.Audit, 3)
	for _, r := range recs {
		if r["method"] != "CONNECT" || r["decision"] != "client-tls-failed" || !strings.Contains(r["note"].(string), install) {
			t.Errorf("audit record %v, want a note saying %q", r, install)
		}
	}
	admin := startAdmin(t, p)
	_, m := adminGet(t, admin, "/metrics")
	if v := metricValue(m, `robotsgate_client_tls_failures_total{reason="bad_certificate"}`); v != "3" {
		t.Errorf("client TLS failures metric = %q, want 3", v)
	}
	_, page := adminGet(t, admin, "/")
	if !strings.Contains(page, "bad_certificate") || !strings.Contains(page, "robotsgate&#39;s CA") || !strings.Contains(page, install) {
		t.Errorf("the status page does not show the failures, or not %q:\n%s", install, page)
	}
	deadline := time.Now().Add(10 * time.Second)
	for strings.Count(p.logText(), "client TLS handshake failed") == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if n := strings.Count(p.logText(), "level=WARN msg=\"client TLS handshake failed\""); n != 1 {
		t.Errorf("%d WARN lines for 3 failures of one client and host, want 1:\n%s", n, p.logText())
	}
	if log := p.logText(); !strings.Contains(log, install) || strings.Contains(log, "certs/ca.pem") {
		t.Errorf("the WARN line does not name %q:\n%s", install, log)
	}
}

func absPath(t *testing.T, path string) string {
	t.Helper()
	abs, err := filepath.Abs(path)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}
