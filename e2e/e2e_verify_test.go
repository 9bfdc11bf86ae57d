//go:build unix

package e2e

// End-to-end test of the evidence: a crawl through the real binary while
// robots.txt changes, then robotsgate verify on its audit log and archive.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/robotsgate/robotsgate/archive"
	"github.com/robotsgate/robotsgate/audit"
)

// versionedOrigin is an origin whose robots.txt the test changes. It sends
// the file with an ETag (the file's SHA-256) and Cache-Control: max-age=1,
// answers If-None-Match with 304 when the file is unchanged, and every
// other path with 200.
type versionedOrigin struct {
	*httptest.Server
	mu          sync.Mutex
	robots      string
	conditional int // robots.txt requests with If-None-Match
	notModified int // 304s sent
}

func startVersionedOrigin(t *testing.T, useTLS bool, robots string) *versionedOrigin {
	t.Helper()
	o := &versionedOrigin{robots: robots}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/robots.txt" {
			io.WriteString(w, "page "+r.RequestURI)
			return
		}
		o.mu.Lock()
		body := o.robots
		etag := `"` + archive.Sum([]byte(body)) + `"`
		inm := r.Header.Get("If-None-Match")
		if inm != "" {
			o.conditional++
		}
		if inm == etag {
			o.notModified++
		}
		o.mu.Unlock()
		w.Header().Set("Cache-Control", "max-age=1")
		w.Header().Set("ETag", etag)
		if inm == etag {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, body)
	})
	if useTLS {
		o.Server = httptest.NewTLSServer(h)
	} else {
		o.Server = httptest.NewServer(h)
	}
	t.Cleanup(o.Server.Close)
	return o
}

func (o *versionedOrigin) setRobots(body string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.robots = body
}

func (o *versionedOrigin) counts() (conditional, notModified int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.conditional, o.notModified
}

// The robots.txt versions of the test. Origin A changes from v1 to v2: what
// v1 refuses v2 allows and the other way round; origin B keeps its file and
// is revalidated (304); origin C (HTTPS, reached by a blind tunnel) refuses
// everything, so its CONNECT is refused by host.
const (
	verifyRobotsV1 = "User-agent: *\nDisallow: /a\nAllow: /a/open\n\nUser-agent: FooBot\nDisallow: /\n"
	verifyRobotsV2 = "User-agent: *\nDisallow: /b\nAllow: /a\n\nUser-agent: FooBot\nDisallow: /\n"
	verifyRobotsB  = "User-agent: *\nDisallow: /private\n"
	verifyRobotsC  = "User-agent: *\nDisallow: /\n"
)

// evidenceCrawl is what crawlWhileRobotsTxtChanges leaves: the audit log
// and robots.txt archive of a finished crawl, and its origins.
type evidenceCrawl struct {
	dir, audit, archive string
	// a changed its robots.txt from verifyRobotsV1 to verifyRobotsV2; b
	// kept verifyRobotsB and was revalidated (304); c (HTTPS, reached by a
	// blind tunnel) refuses everything.
	a, b, c *versionedOrigin
}

// crawlWhileRobotsTxtChanges crawls three local origins through the real
// binary while origin A's robots.txt changes (max-age=1 and robots.min_ttl
// 1s, so the file is refreshed during the crawl) and origin B's is
// revalidated unchanged, with an enforced client (two agents), a
// monitor-mode client (from 127.0.0.2) and a refused blind tunnel to C,
// then stops the binary (SIGTERM: the audit log and the archive are
// complete). The crawl waits for A's new version and B's 304 by polling,
// bounded.
func crawlWhileRobotsTxtChanges(t *testing.T) *evidenceCrawl {
	t.Helper()
	dir := t.TempDir()
	e := &evidenceCrawl{dir: dir, audit: filepath.Join(dir, "audit.log"), archive: filepath.Join(dir, "robots-archive")}
	a := startVersionedOrigin(t, false, verifyRobotsV1)
	b := startVersionedOrigin(t, false, verifyRobotsB)
	c := startVersionedOrigin(t, true, verifyRobotsC)
	e.a, e.b, e.c = a, b, c
	cHostPort := strings.TrimPrefix(c.URL, "https://")
	_, cPort, _ := net.SplitHostPort(cHostPort)
	(&origin{Server: c.Server}).writeCertPEM(t, filepath.Join(dir, "upstream.pem"))

	cfgPath := filepath.Join(dir, "evidence.yaml")
	writeFile(t, cfgPath, fmt.Sprintf(`# written by crawlWhileRobotsTxtChanges
listen: 127.0.0.1:0
admin_listen: ""
robots:
  fetch_user_agent: %q
  fetch_timeout: 5s
  min_ttl: 1s
  strict_paths: true
egress:
  allow_networks: [127.0.0.1/32]
  tunnel_ports: [%s]
mitm:
  ca_cert: %q
  ca_key: %q
  upstream_ca: %q
  skip_hosts: ["127.0.0.1"]
clients:
  - { cidr: 127.0.0.2/32, mode: monitor }
archive:
  dir: %q
log:
  audit: %q
`, e2eFetchUA, cPort, filepath.Join(dir, "certs", "ca.pem"), filepath.Join(dir, "certs", "ca-key.pem"),
		filepath.Join(dir, "upstream.pem"), e.archive, e.audit))
	p := startServe(t, dir, "-config", cfgPath)

	client := proxyClient(t, p.addr, "")
	fetch := func(rawURL, ua string) int {
		t.Helper()
		req, err := http.NewRequest("GET", rawURL, nil)
		if err != nil {
			t.Fatal(err)
		}
		if ua != "" {
			req.Header.Set("User-Agent", ua)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("GET %s through the proxy: %v", rawURL, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	// The monitor-mode client connects from 127.0.0.2.
	monitor := func(rawURL string) int {
		t.Helper()
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}, Timeout: requestTimeout}
		conn, err := d.Dial("tcp", p.addr)
		if err != nil {
			t.Fatalf("dial the proxy from 127.0.0.2: %v", err)
		}
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(requestTimeout))
		host, _, _ := strings.Cut(strings.TrimPrefix(rawURL, "http://"), "/")
		fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: monitored/1.0\r\nConnection: close\r\n\r\n", rawURL, host)
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("GET %s from 127.0.0.2: %v", rawURL, err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	expect := func(what string, got, want int) {
		t.Helper()
		if got != want {
			t.Errorf("%s: status %d, want %d", what, got, want)
		}
	}

	// Version 1 of A, and B.
	expect("v1: A /a/x", fetch(a.URL+"/a/x", ""), 403)
	expect("v1: A /a/open/1", fetch(a.URL+"/a/open/1", ""), 200)
	expect("v1: A /b/x", fetch(a.URL+"/b/x", ""), 200)
	expect("v1: A /b/x as FooBot", fetch(a.URL+"/b/x", "FooBot/1.0"), 403)
	expect("A /robots.txt (not judged by robots.txt)", fetch(a.URL+"/robots.txt", ""), 200)
	expect("B /private/1", fetch(b.URL+"/private/1", ""), 403)
	expect("B /public/1", fetch(b.URL+"/public/1", ""), 200)
	expect("v1: A /a/y, monitored (forwarded, logged as disallow)", monitor(a.URL+"/a/y"), 200)
	if r := dialProxy(t, p.addr).connect(cHostPort); r.status != 403 || r.header.Get("X-Robotsgate-Decision") != "disallow" {
		t.Errorf("CONNECT %s (a blind tunnel, robots.txt refuses everything): %d %q, want 403 disallow", cHostPort, r.status, r.header.Get("X-Robotsgate-Decision"))
	}

	// A changes. Once its copy is stale (max-age=1, min_ttl 1s), the next
	// request refreshes it in the background; B's refresh is a 304.
	a.setRobots(verifyRobotsV2)
	deadline := time.Now().Add(30 * time.Second)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		v2InForce := fetch(a.URL+"/b/poll", "") == 403
		fetch(b.URL+"/public/poll", "")
		if v2InForce && archiveHasFetch(t, e.archive, b.URL, http.StatusNotModified, archive.Sum([]byte(verifyRobotsB))) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("within 30s, origin A's new robots.txt was not in force (%v) or origin B's was not revalidated with a 304 in the fetch log; fetch logs:\n%s",
				v2InForce, dumpArchiveFetches(t, e.archive))
		}
		<-tick.C
	}

	// Version 2 of A.
	expect("v2: A /a/x", fetch(a.URL+"/a/x", ""), 200)
	expect("v2: A /b/y", fetch(a.URL+"/b/y", ""), 403)
	expect("v2: A /c as FooBot", fetch(a.URL+"/c", "FooBot/1.0"), 403)
	expect("v2: A /b/z, monitored", monitor(a.URL+"/b/z"), 200)
	p.stop(0) // SIGTERM drains: every audit line and archive record written
	return e
}

// TestE2EVerifyCrawlWhileRobotsTxtChanges checks the evidence of a crawl
// while robots.txt changes (crawlWhileRobotsTxtChanges) with robotsgate
// verify:
//   - every record resting on robots.txt is verified (both versions of A's
//     file were in force, a monitor-mode refusal and a refused blind
//     tunnel among them), and the count is theirs;
//   - a record whose decision is changed is a disagreement (exit 1) named
//     by file and line;
//   - a deleted archived body makes its records unverifiable (exit 1; 0
//     with -allow-missing);
//   - the fetch log shows B's 304 revalidation with the SHA-256 of its
//     earlier 200, and A's two versions.
func TestE2EVerifyCrawlWhileRobotsTxtChanges(t *testing.T) {
	t.Parallel()
	e := crawlWhileRobotsTxtChanges(t)
	a, b, dir, auditPath, archiveDir := e.a, e.b, e.dir, e.audit, e.archive

	// The audit log: what rests on robots.txt, and on which version.
	lines := strings.SplitAfter(readText(t, auditPath), "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	sumV1, sumV2 := archive.Sum([]byte(verifyRobotsV1)), archive.Sum([]byte(verifyRobotsV2))
	judged, bySum := 0, map[string]int{}
	tamper := -1 // the line of the v2 refusal of A /b/y
	var connect, monitored bool
	for i, line := range lines {
		var rec audit.Record
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("audit.log:%d: %v", i+1, err)
		}
		if rec.RobotsSHA256 == "" {
			continue
		}
		judged++
		bySum[rec.RobotsSHA256]++
		switch {
		case rec.URL == a.URL+"/b/y" && rec.Decision == "disallow" && rec.RobotsSHA256 == sumV2:
			tamper = i
		case rec.Method == "CONNECT" && rec.Decision == "disallow":
			connect = true
		case rec.Mode == "monitor" && rec.Decision == "disallow" && !rec.Enforced:
			monitored = true
		}
	}
	if bySum[sumV1] == 0 || bySum[sumV2] == 0 || tamper < 0 || !connect || !monitored || judged == len(lines) {
		t.Fatalf("the audit log lacks what the test needs: records by robots.txt version %v (v1 %s, v2 %s), the v2 refusal of /b/y at line %d, "+
			"a refused CONNECT %v, a monitored refusal %v, %d of %d records resting on robots.txt (robots.txt itself does not):\n%s",
			bySum, sumV1[:12], sumV2[:12], tamper+1, connect, monitored, judged, len(lines), strings.Join(lines, ""))
	}

	verify := func(args ...string) (string, int) {
		t.Helper()
		stdout, stderr, code := runBin(t, dir, append([]string{"verify", "-audit", auditPath, "-archive", archiveDir}, args...)...)
		return stdout + stderr, code
	}

	// Every decision verified.
	out, code := verify()
	if want := fmt.Sprintf("%d verified, 0 disagree, 0 unverifiable\n", judged); code != 0 || !strings.HasSuffix(out, want) {
		t.Fatalf("verify: exit %d, output:\n%s\nwant exit 0 ending %q", code, out, want)
	}
	t.Logf("verify:\n%s", out)

	// One decision changed: a disagreement naming that record.
	original := readText(t, auditPath)
	tampered := append([]string(nil), lines...)
	tampered[tamper] = strings.Replace(tampered[tamper], `"decision":"disallow"`, `"decision":"allow"`, 1)
	writeFile(t, auditPath, strings.Join(tampered, ""))
	out, code = verify()
	named := fmt.Sprintf("%s:%d: DISAGREE GET %s/b/y", auditPath, tamper+1, a.URL)
	if want := fmt.Sprintf("%d verified, 1 disagree, 0 unverifiable\n", judged-1); code != 1 || !strings.Contains(out, named) ||
		!strings.Contains(out, "recorded allow (Disallow: /b, line 2), replayed disallow (Disallow: /b, line 2)") || !strings.HasSuffix(out, want) {
		t.Errorf("verify with line %d's decision changed: exit %d, output:\n%s\nwant exit 1, %q and %q", tamper+1, code, out, named, want)
	}
	writeFile(t, auditPath, original)

	// Version 1's body deleted: its records cannot be verified.
	if err := os.Remove(archive.BodyPath(archiveDir, sumV1)); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("%d verified, 0 disagree, %d unverifiable\n", judged-bySum[sumV1], bySum[sumV1])
	out, code = verify()
	if code != 1 || !strings.HasSuffix(out, want) || strings.Count(out, "UNVERIFIABLE") != bySum[sumV1] || !strings.Contains(out, sumV1+": not in the archive") {
		t.Errorf("verify without v1's body: exit %d, output:\n%s\nwant exit 1, %d records listed as unverifiable, ending %q", code, out, bySum[sumV1], want)
	}
	out, code = verify("-allow-missing")
	if code != 0 || !strings.HasSuffix(out, want) {
		t.Errorf("verify -allow-missing without v1's body: exit %d, output:\n%s\nwant exit 0 ending %q", code, out, want)
	}

	// The fetch log: B's 200, then a 304 naming the same body; A's two
	// versions, each a 200.
	sumB := archive.Sum([]byte(verifyRobotsB))
	fetches := archiveFetches(t, archiveDir)
	first200, first304 := -1, -1
	for i, f := range fetches {
		if f.Origin != b.URL {
			continue
		}
		if f.HTTPStatus == 200 && f.SHA256 == sumB && first200 < 0 {
			first200 = i
		}
		if f.HTTPStatus == 304 && f.SHA256 == sumB && first304 < 0 {
			first304 = i
		}
	}
	if first200 < 0 || first304 < first200 {
		t.Errorf("origin B's fetch log: no 200 then 304 with SHA-256 %s:\n%s", sumB, dumpArchiveFetches(t, archiveDir))
	}
	if conditional, notModified := b.counts(); conditional == 0 || notModified == 0 {
		t.Errorf("origin B saw %d requests with If-None-Match and sent %d 304s, want some of each", conditional, notModified)
	}
	if !archiveHasFetch(t, archiveDir, a.URL, 200, sumV1) || !archiveHasFetch(t, archiveDir, a.URL, 200, sumV2) {
		t.Errorf("origin A's fetch log lacks a 200 of v1 (%s) or of v2 (%s):\n%s", sumV1[:12], sumV2[:12], dumpArchiveFetches(t, archiveDir))
	}
}

// archiveFetches reads every fetch log of the archive in dir.
func archiveFetches(t *testing.T, dir string) []archive.Fetch {
	t.Helper()
	logs, err := archive.FetchLogs(dir)
	if err != nil {
		t.Fatal(err)
	}
	var fetches []archive.Fetch
	for _, name := range logs {
		for _, line := range strings.Split(strings.TrimSpace(readText(t, name)), "\n") {
			if line == "" {
				continue
			}
			var f archive.Fetch
			if err := json.Unmarshal([]byte(line), &f); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			fetches = append(fetches, f)
		}
	}
	return fetches
}

// archiveHasFetch reports whether the archive's fetch log has an answer of
// origin with status and the body sum.
func archiveHasFetch(t *testing.T, dir, origin string, status int, sum string) bool {
	t.Helper()
	for _, f := range archiveFetches(t, dir) {
		if f.Origin == origin && f.HTTPStatus == status && f.SHA256 == sum {
			return true
		}
	}
	return false
}

func dumpArchiveFetches(t *testing.T, dir string) string {
	var b strings.Builder
	for _, f := range archiveFetches(t, dir) {
		fmt.Fprintf(&b, "%s %s %d %s %s\n", f.Time.Format(time.RFC3339Nano), f.Origin, f.HTTPStatus, f.Outcome, f.SHA256)
	}
	return b.String()
}
