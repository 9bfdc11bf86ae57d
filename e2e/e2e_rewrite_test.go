//go:build unix

package e2e

// Attacks on the audit log's tamper evidence, made on a copy of a log the
// real binary wrote: a forger without the evidence key edits a record and
// recomputes the hash chain, removing whatever would show it.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/robotsgate/robotsgate/auditlog"
)

// chainPrefix is how every chained line starts; the link (64 hex digits)
// follows.
const chainPrefix = `{"prev_sha256":"`

// logLines splits a log into its lines, without their newlines.
func logLines(t *testing.T, text string) []string {
	t.Helper()
	if !strings.HasSuffix(text, "\n") {
		t.Fatalf("the log does not end with a newline:\n%s", text)
	}
	return strings.Split(strings.TrimSuffix(text, "\n"), "\n")
}

// relink recomputes every line's prev_sha256 from the line before it, as a
// forger without the key would after editing, and returns the log and the
// hash of its last line (what audit.log.head must hold).
func relink(t *testing.T, lines []string) (string, string) {
	t.Helper()
	prev := ""
	var b strings.Builder
	for _, l := range lines {
		rest, ok := strings.CutPrefix(l, chainPrefix)
		if !ok || len(rest) < 65 {
			t.Fatalf("not a chained line: %s", l)
		}
		l = chainPrefix + prev + rest[64:]
		if prev == "" { // the chain's first line: an empty link
			l = chainPrefix + rest[64:]
		}
		b.WriteString(l + "\n")
		prev = auditlog.LineHash([]byte(l))
	}
	return b.String(), prev
}

// withoutCheckpoints drops the checkpoint lines.
func withoutCheckpoints(lines []string) []string {
	var out []string
	for _, l := range lines {
		if !strings.Contains(l, `"checkpoint":{`) {
			out = append(out, l)
		}
	}
	return out
}

// unlinked strips prev_sha256 from every line: a log that looks written
// before the chain.
func unlinked(t *testing.T, lines []string) string {
	t.Helper()
	var b strings.Builder
	for _, l := range lines {
		var m map[string]json.RawMessage
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatal(err)
		}
		delete(m, "prev_sha256")
		out, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(append(out, '\n'))
	}
	return b.String()
}

// TestE2EAuditRewriteWithoutTheKeyFails: a forger who edits a record of a
// log the binary wrote, then drops every checkpoint, recomputes every
// prev_sha256 and writes a matching audit.log.head (or strips the chain
// altogether), is caught by verify and by report whenever the evidence key
// is known, from -key or from the configuration; report then says neither
// "whole" nor "verified", and both exit 1. -legacy accepts a log without
// a chain, as written before the chain existed. The same log untouched
// verifies.
func TestE2EAuditRewriteWithoutTheKeyFails(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	o := startOrigin(t, false)
	p := serveWithStateDir(t, dir)
	c := dialProxy(t, p.addr)
	for _, path := range []string{"/a", "/private/b", "/c", "/private/d", "/e"} {
		c.get(o.URL + path)
	}
	p.stop(0)
	keyOut, _, _ := runBin(t, dir, "evidence-key", "-config", "cfg.yaml")
	pub := regexp.MustCompile(`public key  (\S+)`).FindStringSubmatch(keyOut)
	if pub == nil {
		t.Fatalf("evidence-key: %q", keyOut)
	}
	logPath := filepath.Join(dir, "robotsgate-state", "audit.log")
	orig := readText(t, logPath)
	if out, errOut, code := runBin(t, dir, "verify", "-key", pub[1]); code != 0 {
		t.Fatalf("verify of the untouched log: exit %d\n%s%s", code, out, errOut)
	}
	// The edit: who asked for /private/b. Nothing the replay checks, so
	// only the chain can show it.
	lines := logLines(t, orig)
	for i, l := range lines {
		if strings.Contains(l, `/private/b"`) {
			lines[i] = regexp.MustCompile(`"client":"[^"]*"`).ReplaceAllString(l, `"client":"192.0.2.1:4444"`)
		}
	}
	edited := strings.Join(lines, "\n") + "\n"
	if edited == orig {
		t.Fatalf("no record of /private/b to edit:\n%s", orig)
	}
	noCheckpoints, head := relink(t, withoutCheckpoints(logLines(t, edited)))

	for _, tc := range []struct {
		name, log, head string
		args            []string
		code            int
		want            string
	}{
		{"checkpoints dropped, chain recomputed, -key", noCheckpoints, head, []string{"-key", pub[1]}, 1, "no checkpoint"},
		{"checkpoints dropped, chain recomputed, the configuration's key", noCheckpoints, head, nil, 1, "no checkpoint"},
		{"prev_sha256 stripped, -key", unlinked(t, logLines(t, edited)), "", []string{"-key", pub[1]}, 1, "no hash chain"},
		{"prev_sha256 stripped, the configuration's key", unlinked(t, logLines(t, edited)), "", nil, 1, "no hash chain"},
		{"prev_sha256 stripped, -legacy", unlinked(t, logLines(t, orig)), "", []string{"-legacy"}, 0, "hash chain: none"},
	} {
		writeFile(t, logPath, tc.log)
		os.Remove(logPath + ".head")
		if tc.head != "" {
			writeFile(t, logPath+".head", tc.head+"\n")
		}
		out, errOut, code := runBin(t, dir, append([]string{"verify"}, tc.args...)...)
		if code != tc.code || !strings.Contains(out, tc.want) || code != 0 && strings.Contains(out, "hash chain: whole") {
			t.Errorf("%s: verify exit %d, want %d saying %q; stdout:\n%s\nstderr:\n%s", tc.name, code, tc.code, tc.want, out, errOut)
		}
		html := filepath.Join(dir, "r.html")
		os.Remove(html)
		_, errOut, code = runBin(t, dir, append([]string{"report", "-o", html}, tc.args...)...)
		if code != tc.code {
			t.Errorf("%s: report exit %d, want %d; stderr:\n%s", tc.name, code, tc.code, errOut)
		}
		page := readText(t, html)
		chain := regexp.MustCompile(`(?s)<p id="chain">.*?</p>`).FindString(page)
		if chain == "" {
			t.Fatalf("%s: the report has no chain paragraph:\n%s", tc.name, page)
		}
		if strings.Contains(chain, "whole") || strings.Contains(chain, "verified with") {
			t.Errorf("%s: the report says the chain is whole or verified: %s", tc.name, chain)
		}
	}
}

// TestE2EACrashLeavesANamedTail: a serve killed (SIGKILL) after some
// requests leaves them after its last checkpoint, the one written when it
// opened the log: verify accepts them, as what a crash leaves within the
// interval, and says how many, from when, after which checkpoint; the
// next run's opening checkpoint covers them.
func TestE2EACrashLeavesANamedTail(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	o := startOrigin(t, false)
	p := serveWithStateDir(t, dir)
	c := dialProxy(t, p.addr)
	for _, path := range []string{"/a", "/b", "/c"} {
		c.get(o.URL + path)
	}
	// The opening checkpoint and the three records, written: what a kill
	// loses before then (the batch not yet written) is not this test's.
	auditRecords(t, filepath.Join(dir, "robotsgate-state", "audit.log"), 4)
	p.cmd.Process.Kill()
	<-p.done
	out, errOut, code := runBin(t, dir, "verify")
	tail := regexp.MustCompile(`the last at robotsgate-state/audit\.log:1 \(\S+\); 3 lines after it, from \S+ to \S+, which no checkpoint covers yet \(what a crash leaves: at most 10000 records, arrived within 1m0s of it\)`)
	if code != 0 || !tail.MatchString(out) {
		t.Errorf("verify after a crash: exit %d, want 0 naming the 3 lines after the checkpoint at line 1\n%s%s", code, out, errOut)
	}
	p = serveWithStateDir(t, dir)
	p.stop(0)
	if out, errOut, code := runBin(t, dir, "verify"); code != 0 || strings.Contains(out, "after it") {
		t.Errorf("verify after the next run: exit %d, want the crash's lines covered\n%s%s", code, out, errOut)
	}
}
