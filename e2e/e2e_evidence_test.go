package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
)

// TestE2EAuditChainNeedsNoFlags runs the binary as the quick start does,
// with no configuration (loopback origins are then refused), then again
// with nothing but an egress rule that lets it reach them: the audit log,
// the archive and the evidence key land in robotsgate-state/, the chain
// runs on across a reload and a restart, and verify and report, run
// afterwards with no flag, find the log whole and signed by the key
// evidence-key prints.
func TestE2EAuditChainNeedsNoFlags(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	o := startOrigin(t, false)

	p := startServe(t, dir, "-listen", "127.0.0.1:0", "-admin-listen", "off")
	if r := dialProxy(t, p.addr).get(o.URL + "/public"); r.status != 403 {
		t.Fatalf("no configuration: /public: status %d, want 403 egress-denied", r.status)
	}
	p.stop(0)
	for run := 0; run < 2; run++ {
		p := serveWithStateDir(t, dir)
		c := dialProxy(t, p.addr)
		if r := c.get(o.URL + "/public"); r.status != 200 {
			t.Fatalf("run %d: /public: status %d, want 200", run, r.status)
		}
		if run == 0 {
			p.signal(syscall.SIGHUP) // reloads the configuration and reopens the audit log
			p.waitLog("config reloaded", 1)
		}
		if r := c.get(o.URL + "/private/x"); r.status != 403 {
			t.Fatalf("run %d: /private/x: status %d, want 403", run, r.status)
		}
		p.stop(0)
	}
	for _, f := range []string{"audit.log", "evidence-key.pem", "ca.pem", "archive"} {
		if _, err := os.Stat(filepath.Join(dir, "robotsgate-state", f)); err != nil {
			t.Errorf("robotsgate-state/%s: %v", f, err)
		}
	}

	keyOut, errOut, code := runBin(t, dir, "evidence-key", "-config", "cfg.yaml")
	m := regexp.MustCompile(`fingerprint (\S+)\npublic key  (\S+)\n`).FindStringSubmatch(keyOut)
	if code != 0 || m == nil {
		t.Fatalf("evidence-key: exit %d, stdout %q, stderr %q", code, keyOut, errOut)
	}
	for _, args := range [][]string{{"verify"}, {"verify", "-key", m[2]}} {
		out, errOut, code := runBin(t, dir, args...)
		if code != 0 || !strings.Contains(out, "hash chain: whole across") || !strings.Contains(out, "signed by "+m[1]) ||
			!regexp.MustCompile(`fetch logs: whole across \d+ lines?, [2-9]\d* signed checkpoints`).MatchString(out) {
			t.Errorf("%q: exit %d; stdout:\n%s\nstderr:\n%s", args, code, out, errOut)
		}
		// Three runs, each closed by a checkpoint.
		if !regexp.MustCompile(`checkpoints: [3-9]\d* signed`).MatchString(out) {
			t.Errorf("%q: want at least 3 checkpoints (one per run); stdout:\n%s", args, out)
		}
	}
	_, errOut, code = runBin(t, dir, "report", "-o", "report.html")
	if code != 0 {
		t.Fatalf("report with no flag: exit %d; stderr:\n%s", code, errOut)
	}
	if html := readText(t, filepath.Join(dir, "report.html")); !strings.Contains(html, m[1]) {
		t.Errorf("the report does not name the evidence key's fingerprint %s", m[1])
	}
}

// TestE2EAuditChainTamperingFails edits a log the binary wrote in each way
// a forger would — a line removed, changed, moved, added, the log cut at
// either end, a checkpoint signed with another key — and each is reported
// with exit 1 by verify and by report.
func TestE2EAuditChainTamperingFails(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	o := startOrigin(t, false)
	p := serveWithStateDir(t, dir)
	c := dialProxy(t, p.addr)
	for _, path := range []string{"/a", "/private/b", "/c", "/private/d", "/e"} {
		c.get(o.URL + path)
	}
	p.stop(0)
	logPath := filepath.Join(dir, "robotsgate-state", "audit.log")
	orig := readText(t, logPath)
	lines := strings.SplitAfter(orig, "\n")
	lines = lines[:len(lines)-1] // the empty string after the last newline
	if len(lines) < 6 {
		t.Fatalf("the audit log has %d lines, want 5 records and a checkpoint:\n%s", len(lines), orig)
	}
	if out, errOut, code := runBin(t, dir, "verify"); code != 0 {
		t.Fatalf("verify of the untouched log: exit %d\n%s%s", code, out, errOut)
	}
	join := func(ls ...[]string) string {
		var b strings.Builder
		for _, l := range ls {
			b.WriteString(strings.Join(l, ""))
		}
		return b.String()
	}
	other := t.TempDir()
	writeFile(t, filepath.Join(other, "cfg.yaml"), "log:\n  evidence_key: "+filepath.Join(other, "k.pem")+"\n  audit: "+filepath.Join(other, "a.log")+"\n")
	otherP := startServe(t, other, "-config", "cfg.yaml", "-listen", "127.0.0.1:0", "-admin-listen", "off")
	otherP.stop(0)
	otherKey, _, _ := runBin(t, other, "evidence-key", "-config", "cfg.yaml")
	otherPub := regexp.MustCompile(`public key  (\S+)`).FindStringSubmatch(otherKey)
	if otherPub == nil {
		t.Fatalf("evidence-key of the second proxy: %q", otherKey)
	}

	for _, tc := range []struct {
		name, log string
		args      []string
		want      string
	}{
		{"a line removed", join(lines[:2], lines[3:]), nil, "chain broken"},
		{"a line changed", strings.Replace(orig, `/c"`, `/C"`, 1), nil, "chain broken"},
		{"two lines swapped", join(lines[:1], lines[2:3], lines[1:2], lines[3:]), nil, "chain broken"},
		{"a line added", join(lines[:3], lines[2:3], lines[3:]), nil, "chain broken"},
		{"the first lines removed", join(lines[2:]), nil, "-partial accepts that"},
		{"the last line removed", join(lines[:len(lines)-1]), nil, "lines were cut from its end"},
		{"checked against another proxy's key", orig, []string{"-key", otherPub[1]}, "does not verify"},
	} {
		if tc.log == orig && tc.args == nil {
			t.Fatalf("%s: the log was not changed", tc.name)
		}
		writeFile(t, logPath, tc.log)
		out, errOut, code := runBin(t, dir, append([]string{"verify"}, tc.args...)...)
		if code != 1 || !strings.Contains(out+errOut, tc.want) {
			t.Errorf("%s: verify exit %d, want 1 naming %q; stdout:\n%s\nstderr:\n%s", tc.name, code, tc.want, out, errOut)
		}
		_, errOut, code = runBin(t, dir, append([]string{"report", "-o", "r.html"}, tc.args...)...)
		if code != 1 {
			t.Errorf("%s: report exit %d, want 1; stderr:\n%s", tc.name, code, errOut)
		}
	}

	// The archive's fetch log, changed afterwards: its robots.txt fetch
	// made to look like a 404 (every path allowed).
	writeFile(t, logPath, orig)
	fetchLogs, _ := filepath.Glob(filepath.Join(dir, "robotsgate-state", "archive", "fetches", "*.jsonl"))
	if len(fetchLogs) != 1 {
		t.Fatalf("fetch logs %q, want one", fetchLogs)
	}
	fetchLog := readText(t, fetchLogs[0])
	forged := strings.Replace(fetchLog, `"http_status":200`, `"http_status":404`, 1)
	if forged == fetchLog {
		t.Fatalf("the fetch log has no 200 to change:\n%s", fetchLog)
	}
	writeFile(t, fetchLogs[0], forged)
	if out, errOut, code := runBin(t, dir, "verify"); code != 1 || !regexp.MustCompile(regexp.QuoteMeta(filepath.Base(fetchLogs[0]))+`:\d+: chain broken`).MatchString(out) {
		t.Errorf("a fetch log changed: verify exit %d, want 1 naming where; stdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if _, errOut, code := runBin(t, dir, "report", "-o", "r.html"); code != 1 {
		t.Errorf("a fetch log changed: report exit %d, want 1; stderr:\n%s", code, errOut)
	}
}

// TestE2EAuditChainGoesOnAcrossRotation rotates the audit log as logrotate
// does (rename, then SIGHUP): the new file's first line links to the
// rotated file's last, so both files verify whole together; the new file
// alone fails (its first lines could have been cut) unless -partial says
// the older file is gone on purpose.
func TestE2EAuditChainGoesOnAcrossRotation(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	o := startOrigin(t, false)
	p := serveWithStateDir(t, dir)
	c := dialProxy(t, p.addr)
	c.get(o.URL + "/a")
	logPath := filepath.Join(dir, "robotsgate-state", "audit.log")
	if err := os.Rename(logPath, logPath+".1"); err != nil {
		t.Fatal(err)
	}
	p.signal(syscall.SIGHUP)
	p.waitLog("config reloaded", 1)
	c.get(o.URL + "/b")
	p.stop(0)
	if n := strings.Count(readText(t, logPath), "\n"); n < 2 {
		t.Fatalf("the reopened audit log has %d lines, want the record after the rotation and a checkpoint", n)
	}

	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"verify", "-audit", logPath + ".1", "-audit", logPath}, 0, "hash chain: whole"},
		{[]string{"verify"}, 1, "-partial accepts that"},
		{[]string{"verify", "-partial"}, 0, "chain start: "},
	} {
		out, errOut, code := runBin(t, dir, tc.args...)
		if code != tc.code || !strings.Contains(out, tc.want) {
			t.Errorf("%q: exit %d, want %d and %q; stdout:\n%s\nstderr:\n%s", tc.args, code, tc.code, tc.want, out, errOut)
		}
	}
}

// loopbackOnlyConfig is a configuration that sets nothing but what the
// tests need: reaching loopback origins. Everything else, the state
// directory included, is the built-in default.
const loopbackOnlyConfig = "egress:\n  allow_networks: [127.0.0.0/8]\n"

// serveWithStateDir starts the binary in dir with loopbackOnlyConfig (in
// dir/cfg.yaml) and no admin listener.
func serveWithStateDir(t *testing.T, dir string) *proc {
	t.Helper()
	writeFile(t, filepath.Join(dir, "cfg.yaml"), loopbackOnlyConfig)
	return startServe(t, dir, "-config", "cfg.yaml", "-listen", "127.0.0.1:0", "-admin-listen", "off")
}
