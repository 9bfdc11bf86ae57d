package report

import (
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/robotsgate/robotsgate/archive"
)

// No audit file, whatever its lines, panics the report or stops it: it is
// built and written, as HTML and as JSON.
func FuzzBuild(f *testing.F) {
	for _, seed := range []string{
		`{"time":"2026-11-25T10:00:00Z","url":"http://a.example/x","method":"GET","decision":"allow","status":200,"upstream_status":200,"wait_ms":1000}` + "\n" +
			`{"time":"2262-04-12T00:00:00Z","url":"http://a.example/y","method":"GET","decision":"allow","status":200,"upstream_status":200,"wait_ms":5}` + "\n",
		`{"time":"0001-01-01T00:00:00Z","url":"http://a.example/","decision":"disallow","rule":"Disallow: /","line":1,"robots_sha256":"zz"}` + "\n",
		`{"time":"2026-11-25T10:00:00Z","url":"::","method":"CONNECT","decision":"allow","wait_ms":-1e308,"duration_ms":1e308}` + "\n",
		"not json\n{}\n\n",
	} {
		f.Add([]byte(seed))
	}
	body := []byte("User-agent: *\nCrawl-delay: 1\nDisallow: /private\n")
	sum := archive.Sum(body)
	paced := func(at string, waitMS string) string {
		return `{"time":"` + at + `","url":"http://a.example/x","method":"GET","agent":"Bot","group":"*","decision":"allow","status":200,` +
			`"upstream_status":200,"mode":"enforce","wait_ms":` + waitMS + `,"robots_status":"ok","robots_sha256":"` + sum + `"}` + "\n"
	}
	f.Add([]byte(paced("2026-11-25T10:00:00Z", "0") + paced("2262-04-12T00:00:00Z", "0")))
	f.Add([]byte(paced("2026-11-25T10:00:00Z", "0") + paced("2026-11-25T10:00:00.5Z", "1e308") + paced("1677-01-01T00:00:00Z", "-1e12")))
	dir := f.TempDir()
	if err := os.MkdirAll(filepath.Dir(archive.BodyPath(dir, sum)), 0o755); err != nil {
		f.Fatal(err)
	}
	if err := os.WriteFile(archive.BodyPath(dir, sum), body, 0o644); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "audit.log")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		r, err := Build(Options{Audit: []string{path}, Archive: dir, Now: time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)})
		if err != nil {
			t.Fatalf("Build: %v", err)
		}
		if err := WriteHTML(io.Discard, r); err != nil {
			t.Fatalf("WriteHTML: %v", err)
		}
		if err := WriteJSON(io.Discard, r); err != nil {
			t.Fatalf("WriteJSON: %v", err)
		}
	})
}
