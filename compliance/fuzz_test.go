package compliance

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/robotsgate/robotsgate/archive"
	"github.com/robotsgate/robotsgate/audit"
)

// No audit file, whatever its lines, panics the verifier or stops it
// before its end: every line is a record or skipped, and a record names
// at most an archive path made of a SHA-256.
func FuzzReadAudit(f *testing.F) {
	sum := archive.Sum([]byte("User-agent: *\nDisallow: /private\n"))
	for _, seed := range []string{
		`{"url":"http://a/private","decision":"disallow","rule":"Disallow: /private","line":2,"robots_sha256":"` + sum + `"}` + "\n",
		`{"url":"http://a/x","robots_sha256":"../../../../etc/passwd"}` + "\n",
		`{"method":"CONNECT","url":"https://a","robots_sha256":"` + sum + `","truncated":["agent"]}` + "\n",
		"not json\n{\"url\":\n\n{}\n",
		`{"time":"2262-04-12T00:00:00Z","wait_ms":1e308,"duration_ms":-1}` + "\n",
	} {
		f.Add([]byte(seed))
	}
	dir := f.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "bodies", sum[:2]), 0o755); err != nil {
		f.Fatal(err)
	}
	os.WriteFile(archive.BodyPath(dir, sum), []byte("User-agent: *\nDisallow: /private\n"), 0o644)
	b := NewBodies(dir)
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "audit.log")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		lines := 0
		for _, workers := range []int{1, 2} {
			seen := 0
			err := VerifyAudit([]string{path}, b, workers, func(rec *audit.Record, _ string, line int, v Verification) error {
				seen = line
				return nil
			}, func(_ string, line int, _ error) { seen = line })
			if err != nil {
				t.Fatalf("%d workers: %v", workers, err)
			}
			if workers == 1 {
				lines = seen
			} else if seen != lines {
				t.Errorf("the last line seen: %d with 2 workers, %d with 1", seen, lines)
			}
		}
	})
}
