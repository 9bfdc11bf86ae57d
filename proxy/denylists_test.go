package proxy

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// lookupRecorder resolves names from a map and records every lookup, to
// show that a listed name is refused before any is made.
type lookupRecorder struct {
	names mapResolver
	mu    sync.Mutex
	asked []string
}

func (r *lookupRecorder) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	r.asked = append(r.asked, host)
	r.mu.Unlock()
	return r.names.LookupNetIP(ctx, network, host)
}

func (r *lookupRecorder) lookedUp(host string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, h := range r.asked {
		if h == host {
			return true
		}
	}
	return false
}

// writeDenyList writes a deny list, replacing any previous version as an
// editor or a deploy script would (a new file renamed over the old), so
// the proxy never reads it half written.
func writeDenyList(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path+".new", []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".new", path); err != nil {
		t.Fatal(err)
	}
}

// checkListed checks a 403 egress-denied that names the list file and line
// in the message and in Proxy-Status.
func checkListed(t *testing.T, resp *http.Response, body, file string, line int, entry string) {
	t.Helper()
	checkRefusal(t, resp, 403, "egress-denied", "destination_ip_prohibited")
	want := fmt.Sprintf("deny list of egress.deny_hosts_files: %s:%d (%s)", file, line, entry)
	if !strings.Contains(body, want) {
		t.Errorf("body %q does not name %s", body, want)
	}
	if ps := resp.Header.Get("Proxy-Status"); !strings.Contains(ps, fmt.Sprintf("%s:%d", file, line)) {
		t.Errorf("Proxy-Status %q does not name %s:%d", ps, file, line)
	}
}

// A listed host is refused with 403 naming the list's file and line, for a
// request and for a CONNECT, before its name is resolved; other hosts pass.
func TestDenyListRefusesRequestsAndTunnels(t *testing.T) {
	plain := startOrigin(t, "127.0.0.2", false, testRobots, 0)
	tlsOrigin := startOrigin(t, "127.0.0.3", true, testRobots, 0)
	list := filepath.Join(t.TempDir(), "deny.txt")
	writeDenyList(t, list, "# infringing sites\n127.0.0.2\n\n*.listed.test  # every name under it\n")
	names := &lookupRecorder{names: mapResolver{"www.listed.test": "127.0.0.3", "example.com": "127.0.0.3"}}
	cfg := testConfig(t, tlsOrigin.Certificate())
	cfg.Egress.DenyHostsFiles = []string{list}
	p := startProxyWith(t, cfg, Options{Resolver: names})

	resp, body := get(t, p.client(), plain.URL+"/page")
	checkListed(t, resp, body, list, 2, "127.0.0.2")

	port := tlsOrigin.URL[strings.LastIndex(tlsOrigin.URL, ":")+1:]
	target := "www.listed.test:" + port
	resp, body = dialProxy(t, p).roundTrip(t, fmt.Sprintf("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target))
	checkListed(t, resp, body, list, 4, "*.listed.test")
	resp, body = get(t, p.client(), "http://WWW.Listed.Test.:"+port+"/page")
	checkListed(t, resp, body, list, 4, "*.listed.test")
	if names.lookedUp("www.listed.test") {
		t.Error("a listed name was resolved")
	}
	if len(plain.seen())+len(tlsOrigin.seen()) != 0 {
		t.Errorf("the origins saw %v %v", plain.seen(), tlsOrigin.seen())
	}

	// An unlisted name reaches the same origin through a tunnel.
	tls := dialProxy(t, p).connect(t, p, "example.com:"+port, "example.com")
	if resp, _ := tls.roundTrip(t, "GET /page HTTP/1.1\r\nHost: example.com:"+port+"\r\n\r\n"); resp.StatusCode != 200 {
		t.Errorf("unlisted host through a tunnel: %d", resp.StatusCode)
	}
}

// A robots.txt fetch that redirects to a listed host does not follow the
// redirect: robots.txt cannot be had, and the request is refused (503).
func TestDenyListRefusesRobotsRedirect(t *testing.T) {
	listed := startOrigin(t, "127.0.0.3", false, "User-agent: *\nAllow: /\n", 0)
	port := listed.URL[strings.LastIndex(listed.URL, ":")+1:]
	o := startOrigin(t, "127.0.0.2", false, "", 0)
	o.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://robots.listed.test:"+port+"/robots.txt", http.StatusFound)
	})
	list := filepath.Join(t.TempDir(), "deny.txt")
	writeDenyList(t, list, "*.listed.test\n")
	names := &lookupRecorder{names: mapResolver{"robots.listed.test": "127.0.0.3"}}
	cfg := testConfig(t, nil)
	cfg.Egress.DenyHostsFiles = []string{list}
	p := startProxyWith(t, cfg, Options{Resolver: names})
	resp, _ := get(t, p.client(), o.URL+"/page")
	checkRefusal(t, resp, 503, "unreachable", "destination_ip_prohibited")
	if len(listed.seen()) != 0 || names.lookedUp("robots.listed.test") {
		t.Errorf("the redirect to a listed host was followed: %v", listed.seen())
	}
}

// pollStatus requests url through the proxy until the status is want,
// for at most a few poll intervals of the lists; it returns the last
// response.
func pollStatus(t *testing.T, c *http.Client, url string, want int) (*http.Response, string) {
	t.Helper()
	deadline := time.Now().Add(5 * denyListPoll)
	for {
		resp, body := get(t, c, url)
		if resp.StatusCode == want {
			return resp, body
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET %s: still %d after %v, want %d (%s)", url, resp.StatusCode, 5*denyListPoll, want, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// An edited list applies without a reload; a bad edit keeps the previous
// entries and is logged with its file and line; Reload applies other files
// at once and refuses a list that does not load.
func TestDenyListFollowsItsFile(t *testing.T) {
	a := startOrigin(t, "127.0.0.2", false, testRobots, 0)
	b := startOrigin(t, "127.0.0.3", false, testRobots, 0)
	dir := t.TempDir()
	list := filepath.Join(dir, "deny.txt")
	writeDenyList(t, list, "127.0.0.2\n")
	cfg := testConfig(t, nil)
	cfg.Egress.DenyHostsFiles = []string{list}
	p := startProxy(t, cfg)
	c := p.client()
	resp, body := get(t, c, a.URL+"/x")
	checkListed(t, resp, body, list, 1, "127.0.0.2")

	writeDenyList(t, list, "# edited\n127.0.0.3\n")
	pollStatus(t, c, a.URL+"/x", 200)
	resp, body = get(t, c, b.URL+"/x")
	checkListed(t, resp, body, list, 2, "127.0.0.3")

	writeDenyList(t, list, "127.0.0.2\nhttps://127.0.0.3/\n")
	deadline := time.Now().Add(5 * denyListPoll)
	for !strings.Contains(p.logText(), "deny list not reloaded") {
		if time.Now().After(deadline) {
			t.Fatalf("a bad edit was not logged:\n%s", p.logText())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if log := p.logText(); !strings.Contains(log, list+":2: ") {
		t.Errorf("the log does not name %s:2:\n%s", list, log)
	}
	resp, body = get(t, c, b.URL+"/x")
	checkListed(t, resp, body, list, 2, "127.0.0.3") // the previous entries
	if resp, _ := get(t, c, a.URL+"/x"); resp.StatusCode != 200 {
		t.Errorf("the bad edit applied in part: %d", resp.StatusCode)
	}

	// A reload with the list still bad is refused and changes nothing.
	err := p.srv.Reload(cfg)
	if err == nil || !strings.Contains(err.Error(), "egress.deny_hosts_files") || !strings.Contains(err.Error(), list+":2: ") {
		t.Errorf("Reload with a bad list: %v", err)
	}
	// A reload naming another file applies it at once.
	other := filepath.Join(dir, "other.txt")
	writeDenyList(t, other, "*.example\n127.0.0.2\n")
	cfg.Egress.DenyHostsFiles = []string{other}
	if err := p.srv.Reload(cfg); err != nil {
		t.Fatal(err)
	}
	resp, body = get(t, c, a.URL+"/x")
	checkListed(t, resp, body, other, 2, "127.0.0.2")
	if resp, _ := get(t, c, b.URL+"/x"); resp.StatusCode != 200 {
		t.Errorf("a host of the list no longer used: %d", resp.StatusCode)
	}
	// And without lists, nothing is refused.
	cfg.Egress.DenyHostsFiles = nil
	if err := p.srv.Reload(cfg); err != nil {
		t.Fatal(err)
	}
	if resp, _ := get(t, c, a.URL+"/x"); resp.StatusCode != 200 {
		t.Errorf("no lists: %d", resp.StatusCode)
	}
}

// A list that cannot be read stops New (and CheckFiles, before anything
// is created), naming the key.
func TestDenyListMissingAtStart(t *testing.T) {
	cfg := testConfig(t, nil)
	cfg.MITM.Enabled = false // New needs no CA
	cfg.Egress.DenyHostsFiles = []string{filepath.Join(t.TempDir(), "missing.txt")}
	for name, err := range map[string]error{
		"CheckFiles": CheckFiles(cfg),
		"New":        func() error { _, err := New(cfg, Options{}); return err }(),
	} {
		if !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "egress.deny_hosts_files") {
			t.Errorf("%s: err = %v, want a missing file naming egress.deny_hosts_files", name, err)
		}
	}
	bad := filepath.Join(t.TempDir(), "bad.txt")
	os.WriteFile(bad, []byte("fine.example\nnot a host\n"), 0o644)
	cfg.Egress.DenyHostsFiles = []string{bad}
	if err := CheckFiles(cfg); err == nil || !strings.Contains(err.Error(), bad+":2: ") {
		t.Errorf("CheckFiles with a bad line: %v", err)
	}
}

// FetchClient (robotsgate lint URL -config) follows the lists too.
func TestFetchClientFollowsDenyLists(t *testing.T) {
	o := startOrigin(t, "127.0.0.2", false, testRobots, 0)
	list := filepath.Join(t.TempDir(), "deny.txt")
	writeDenyList(t, list, "127.0.0.2\n")
	cfg := testConfig(t, nil)
	cfg.Egress.DenyHostsFiles = []string{list}
	c, err := FetchClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Get(o.URL + "/robots.txt")
	if err == nil || !strings.Contains(err.Error(), list+":1") {
		t.Errorf("err = %v, want the deny list's refusal", err)
	}
}

// Host lists written in the configuration match as the deny-list files
// do: an IDN in Unicode or punycode, any case, a trailing dot. Before,
// "bücher.example" and "evil.example." validated and matched nothing.
func TestConfiguredHostListsMatchIDNsAndTrailingDots(t *testing.T) {
	o := startOrigin(t, "127.0.0.2", false, testRobots, 0)
	port := o.URL[strings.LastIndex(o.URL, ":")+1:]
	names := &lookupRecorder{names: mapResolver{
		"xn--bcher-kva.example": "127.0.0.2", "www.xn--bcher-kva.example": "127.0.0.2", "evil.example": "127.0.0.2",
		"fine.example": "127.0.0.2",
	}}
	cfg := testConfig(t, nil)
	cfg.Egress.DenyHosts = []string{"Bücher.example", "*.bücher.example", "evil.example."}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	p := startProxyWith(t, cfg, Options{Resolver: names})
	for _, host := range []string{"bücher.example", "xn--bcher-kva.example", "www.bücher.example", "EVIL.example", "evil.example."} {
		resp, _ := get(t, p.client(), "http://"+host+":"+port+"/page")
		checkRefusal(t, resp, 403, "egress-denied", "destination_ip_prohibited")
	}
	if resp, _ := get(t, p.client(), "http://fine.example:"+port+"/page"); resp.StatusCode != 200 {
		t.Errorf("a host on no list: %d", resp.StatusCode)
	}
	if names.lookedUp("xn--bcher-kva.example") || names.lookedUp("evil.example") {
		t.Errorf("a listed host was looked up: %q", names.asked)
	}
}
