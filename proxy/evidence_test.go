package proxy

import (
	"path/filepath"
	"testing"

	"github.com/robotsgate/robotsgate/archive"
)

// With archive.dir, every decision that rests on robots.txt names the body
// that judged it (robots_sha256) and the strict_paths setting, the body is
// in the archive under that name, and the fetch is in the fetch log.
func TestDecisionsNameTheArchivedBody(t *testing.T) {
	o := startOrigin(t, "127.0.0.2", false, testRobots, 0)
	cfg := testConfig(t, nil)
	cfg.Archive.Dir = filepath.Join(t.TempDir(), "archive")
	cfg.Log.Audit = filepath.Join(t.TempDir(), "audit.log")
	p := startProxy(t, cfg)
	get(t, p.client(), o.URL+"/public")
	get(t, p.client(), o.URL+"/private/x")
	sum := archive.Sum([]byte(testRobots))
	for _, r := range waitAudit(t, cfg.Log.Audit, 2) {
		if r["robots_sha256"] != sum || r["strict_paths"] != true {
			t.Errorf("audit record %v: robots_sha256 %v strict_paths %v, want %s true", r["url"], r["robots_sha256"], r["strict_paths"], sum)
		}
	}
	p.srv.evidence.Archive().Close() // flush (Shutdown would do it too)
	if body, err := archive.ReadBody(cfg.Archive.Dir, sum); err != nil || string(body) != testRobots {
		t.Errorf("archived body: %q %v", body, err)
	}
	if logs, _ := archive.FetchLogs(cfg.Archive.Dir); len(logs) != 1 {
		t.Fatalf("fetch logs %v", logs)
	}
	fetches := readFetchLog(t, cfg.Archive.Dir)
	if len(fetches) != 1 || fetches[0].SHA256 != sum || fetches[0].HTTPStatus != 200 || fetches[0].Outcome != "ok" || fetches[0].Origin != o.URL {
		t.Errorf("fetch log %+v", fetches)
	}
}
