package proxy

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/robotsgate/robotsgate/config"
	"github.com/robotsgate/robotsgate/internal/tmpfs"
)

// A full disk under the audit log is never silent: the failures are
// counted, /readyz answers 503 until a record is written again, and with
// log.audit_on_error: refuse requests get 503 audit-unavailable instead of
// going unrecorded; once space is freed, both recover by themselves and the
// log has no torn line.
func TestAuditLogOnAFullDisk(t *testing.T) {
	for _, policy := range []config.AuditOnError{config.AuditContinue, config.AuditRefuse} {
		t.Run(string(policy), func(t *testing.T) {
			dir := tmpfs.Mount(t, "64k")
			o := startOrigin(t, "127.0.0.2", false, testRobots, 0)
			cfg := testConfig(t, nil)
			cfg.Log.Audit = filepath.Join(dir, "audit.log")
			cfg.Log.AuditOnError = policy
			p := startProxy(t, cfg)
			admin := startAdmin(t, p)
			c := p.client()
			if resp, _ := get(t, c, o.URL+"/public"); resp.StatusCode != 200 {
				t.Fatalf("before the disk is full: %d", resp.StatusCode)
			}
			filler := tmpfs.Fill(t, dir)
			var last *http.Response
			for range 30 { // a few fit in the log's last page, then the disk is full
				last, _ = get(t, c, o.URL+"/public")
			}
			_, metrics := adminGet(t, admin, "/metrics")
			if v := metricValue(metrics, "robotsgate_audit_write_failures_total"); v == "" || v == "0" {
				t.Errorf("robotsgate_audit_write_failures_total = %q after 30 requests on a full disk", v)
			}
			if code, body := adminGet(t, admin, "/readyz"); code != 503 || !bytes.Contains([]byte(body), []byte("audit log")) {
				t.Errorf("/readyz on a full disk: %d %q", code, body)
			}
			switch policy {
			case config.AuditContinue:
				if last.StatusCode != 200 {
					t.Errorf("continue: a request on a full disk got %d", last.StatusCode)
				}
			case config.AuditRefuse:
				checkRefusal(t, last, 503, "audit-unavailable", "proxy_internal_error")
				before := countSeen(o, "/public")
				get(t, c, o.URL+"/public")
				if n := countSeen(o, "/public"); n != before {
					t.Errorf("refuse: a request reached the origin while the audit log could not be written")
				}
			}
			os.Remove(filler)
			get(t, c, o.URL+"/public") // its record is written in the next batch: the state recovers
			waitReady(t, admin)
			if resp, _ := get(t, c, o.URL+"/public"); resp.StatusCode != 200 {
				t.Errorf("after space was freed: %d", resp.StatusCode)
			}
			if code, _ := adminGet(t, admin, "/readyz"); code != 200 {
				t.Errorf("/readyz after space was freed: %d", code)
			}
			data, _ := os.ReadFile(cfg.Log.Audit)
			for i, line := range bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n")) {
				if !json.Valid(line) {
					t.Errorf("audit line %d is not a whole record: %.80q", i+1, line)
				}
			}
		})
	}
}

// waitReady waits (bounded) for /readyz to answer 200: the signal that
// the audit log's writer wrote a batch again.
func waitReady(t *testing.T, admin string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if code, _ := adminGet(t, admin, "/readyz"); code == 200 {
			return
		}
	}
}

// countSeen counts the origin's requests for target.
func countSeen(o *testOrigin, target string) int {
	n := 0
	for _, s := range o.seen() {
		if s == target {
			n++
		}
	}
	return n
}
