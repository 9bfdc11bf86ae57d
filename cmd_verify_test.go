package main

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/robotsgate/robotsgate/archive"
)

// TestVerifyCommand runs verify in-process on a small archive and audit
// logs: its exit statuses, the files it reads (-audit repeated or followed
// by more files) and what it prints. The end-to-end test
// (TestE2EVerifyCrawlWhileRobotsTxtChanges) verifies a real crawl.
func TestVerifyCommand(t *testing.T) {
	dir := t.TempDir()
	writeFile := func(path, data string) {
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	arch := filepath.Join(dir, "archive")
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pub := base64.StdEncoding.EncodeToString(key.Public().(ed25519.PublicKey))
	w, err := archive.Open(arch, key, nil)
	if err != nil {
		t.Fatal(err)
	}
	body := []byte("User-agent: *\nDisallow: /private\n\nUser-agent: Closed\nDisallow: /\n")
	sum := archive.Sum(body)
	w.Record(archive.Fetch{SHA256: sum}, body)
	w.Close()
	rec := func(method, url, agent, decision, rule string, line int, sha string) string {
		return fmt.Sprintf(`{"method":%q,"url":%q,"agent":%q,"decision":%q,"rule":%q,"line":%d,"robots_sha256":%q,"strict_paths":true}`+"\n",
			method, url, agent, decision, rule, line, sha)
	}
	good := filepath.Join(dir, "good.log")
	writeFile(good, rec("GET", "http://a/private/x", "Bot", "disallow", "Disallow: /private", 2, sum)+
		rec("GET", "http://a/public", "Bot", "allow", "", 0, sum)+
		rec("GET", "http://a/robots.txt", "Bot", "allow", "", 0, "")+
		rec("CONNECT", "https://a:443/", "Closed", "disallow", "Disallow: /", 5, sum)+
		rec("CONNECT", "https://a:443/", "Bot", "allow", "", 0, sum))
	bad := filepath.Join(dir, "bad.log")
	writeFile(bad, rec("GET", "http://a/public", "Bot", "allow", "", 0, sum)+
		rec("GET", "http://a/private/y", "Bot", "allow", "", 0, sum)+
		rec("GET", "http://a/x", "Bot", "allow", "", 0, archive.Sum([]byte("gone"))))
	notLog := filepath.Join(dir, "not.log")
	writeFile(notLog, rec("GET", "http://a/public", "Bot", "allow", "", 0, sum)+"<html>\n")

	for _, c := range []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"verified", []string{"-audit", good, "-archive", arch}, 0,
			[]string{"5 audit records in 1 file: 4 resting on robots.txt, replayed; 1 not judged", "4 verified, 0 disagree, 0 unverifiable\n"}},
		{"files after -audit", []string{"-archive", arch, "-audit", good, good}, 0, []string{"10 audit records in 2 files", "8 verified, 0 disagree, 0 unverifiable"}},
		{"-audit repeated", []string{"-audit", good, "-archive", arch, "-audit", good}, 0, []string{"8 verified"}},
		{"a disagreement and a missing body", []string{"-audit", good, "-audit", bad, "-archive", arch}, 1, []string{
			bad + `:2: DISAGREE GET http://a/private/y agent "Bot": recorded allow (no rule), replayed disallow (Disallow: /private, line 2) (robots.txt ` + sum[:12] + ")",
			bad + `:3: UNVERIFIABLE GET http://a/x agent "Bot": recorded allow (no rule); robots.txt body ` + archive.Sum([]byte("gone")) + ": not in the archive " + arch,
			"5 verified, 1 disagree, 1 unverifiable\n"}},
		{"-allow-missing does not excuse a disagreement", []string{"-audit", bad, "-archive", arch, "-allow-missing"}, 1, []string{"1 verified, 1 disagree, 1 unverifiable"}},
		{"no archive", []string{"-audit", good, "-archive", filepath.Join(dir, "none")}, 1, []string{"warning: the archive", "0 verified, 0 disagree, 4 unverifiable"}},
		{"no archive, -allow-missing", []string{"-audit", good, "-archive", filepath.Join(dir, "none"), "-allow-missing"}, 0, []string{"0 verified, 0 disagree, 4 unverifiable"}},
		{"a line that is not a record: named, counted, reading goes on", []string{"-audit", notLog, "-archive", arch}, 1,
			[]string{notLog + ":2: skipped: not an audit record", "1 line not an audit record, skipped", "1 verified, 0 disagree, 1 unverifiable"}},
		{"a missing audit file", []string{"-audit", good, "-audit", filepath.Join(dir, "nope.log"), "-archive", arch}, 2, []string{"nope.log"}},
		{"no -audit: serve's default audit log (none here)", []string{"-archive", arch}, 3, []string{"no audit log at robotsgate-state/audit.log"}},
		{"an unknown flag", []string{"-audit", good, "-since", "2026-01-01"}, 3, []string{"usage: robotsgate verify"}},
		{"help", []string{"-h"}, 0, []string{"Exit status: 0 every decision verified"}},
	} {
		var out, errOut bytes.Buffer
		// The logs are written by hand, without a chain: -legacy.
		args := append([]string{"verify", "-key", pub, "-legacy"}, c.args...)
		code, err := run(args, stdio{in: strings.NewReader(""), out: &out, errOut: &errOut})
		all := out.String() + errOut.String()
		if err != nil {
			all += "error: " + err.Error()
		}
		if code != c.code {
			t.Errorf("%s: exit %d, want %d; output:\n%s", c.name, code, c.code, all)
		}
		for _, w := range c.want {
			if !strings.Contains(all, w) {
				t.Errorf("%s: output lacks %q:\n%s", c.name, w, all)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "none")); err == nil {
		t.Error("verify created the archive directory it was given")
	}
}
