package compliance

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/robotsgate/robotsgate/archive"
	"github.com/robotsgate/robotsgate/audit"
	"github.com/robotsgate/robotsgate/robots"
)

func TestTarget(t *testing.T) {
	for url, want := range map[string]string{
		"https://example.com/a/b?q=1": "/a/b?q=1",
		"http://example.com:8080":     "/",
		"http://example.com?q":        "/?q",
		"http://[::1]:81/x":           "/x",
	} {
		if got := Target(url); got != want {
			t.Errorf("Target(%q) = %q, want %q", url, got, want)
		}
	}
}

func TestReplayFollowsStrictPaths(t *testing.T) {
	f := robots.Parse([]byte("User-agent: *\nDisallow: /private\n"))
	rec := &audit.Record{Agent: "Bot/1", URL: "https://example.com/%70rivate"}
	if d := Replay(f, rec); !d.Allowed {
		t.Error("without strict_paths /%70rivate is allowed (Google's matcher)")
	}
	rec.StrictPaths = true
	if d := Replay(f, rec); d.Allowed || d.Rule.Line != 2 {
		t.Errorf("with strict_paths: %+v, want Disallow: /private (line 2)", d)
	}
}

func TestReadAuditAndBodies(t *testing.T) {
	dir := t.TempDir()
	w, err := archive.Open(dir, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	body := []byte("User-agent: *\nDisallow: /\n")
	w.Record(archive.Fetch{SHA256: archive.Sum(body)}, body)
	w.Close()
	b := NewBodies(dir)
	if f, err := b.File(archive.Sum(body)); err != nil || f.Allowed("Bot", "/x") {
		t.Errorf("File: %v %v", f, err)
	}
	if _, err := b.File(archive.Sum([]byte("other"))); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing body: %v", err)
	}
	auditFile := filepath.Join(dir, "audit.log")
	long := `{"url":"http://a/` + strings.Repeat("l", 1<<20) + `"}`
	os.WriteFile(auditFile, []byte(`{"url":"http://a/x","decision":"allow"}`+"\n\n"+`{"url":"http://a/y","decision":"disallow"}`+
		"\nnot json\n"+long+"\n"+`{"url":"http://a/z"}`+"\n"+`{"url":"http://a/torn`), 0o644)
	var urls, skipped []string
	err = ReadAudit([]string{auditFile}, func(r *audit.Record, _ string, _ int) error {
		urls = append(urls, r.URL)
		return nil
	}, func(file string, line int, err error) {
		skipped = append(skipped, fmt.Sprintf("%s:%d", filepath.Base(file), line))
	})
	if err != nil || !slices.Equal(urls, []string{"http://a/x", "http://a/y", "http://a/z"}) ||
		!slices.Equal(skipped, []string{"audit.log:4", "audit.log:5", "audit.log:7"}) {
		t.Errorf("records %q, skipped %q, error %v; want three, and lines 4 (not JSON), 5 (too long) and 7 (torn) skipped", urls, skipped, err)
	}
}
