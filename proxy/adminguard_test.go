package proxy

import (
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"
)

// adminDo sends a request to the admin listener at base with the given
// Host and headers, and returns the status.
func adminDo(t *testing.T, method, base, path, host string, form url.Values, header ...string) int {
	t.Helper()
	var body *strings.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	} else {
		body = strings.NewReader("")
	}
	req, err := http.NewRequest(method, base+path, body)
	if err != nil {
		t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if host != "" {
		req.Host = host
	}
	if u := req.URL.User; u != nil {
		pw, _ := u.Password()
		req.SetBasicAuth(u.Username(), pw)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.Header.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("%s %s: no X-Content-Type-Options: nosniff", method, path)
	}
	return resp.StatusCode
}

// The admin listener answers only to the names it is reached by: a page
// of attacker.example resolving to 127.0.0.1 (DNS rebinding), or a client
// that took the admin port for the proxy, gets 421, never the status page.
func TestAdminAnswersOnlyToItsOwnNames(t *testing.T) {
	cfg := testConfig(t, nil)
	cfg.AdminHosts = []string{"robotsgate.internal"}
	p := startProxy(t, cfg)
	adminURL := startAdmin(t, p)
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(adminURL, "http://"))
	for _, c := range []struct {
		host string
		want int
	}{
		{"", 200}, // 127.0.0.1:port, as dialled
		{"localhost:" + port, 200},
		{"[::1]:" + port, 200},
		{"robotsgate.internal", 200},
		{"attacker.example:" + port, 421},
		{"attacker.example", 421},
		{"localhost:1", 421},
		{"example.com", 421}, // a proxy request sent to the admin port
	} {
		for _, path := range []string{"/", "/metrics", "/healthz", "/readyz"} {
			if got := adminDo(t, http.MethodGet, adminURL, path, c.host, nil); got != c.want && !(got == 503 && path == "/readyz") {
				t.Errorf("GET %s with Host %q: %d, want %d", path, c.host, got, c.want)
			}
		}
	}
}

// /explain contacts an origin only on a POST from the status page's own
// origin: a GET with fetch=1 (a link) or a cross-site form is refused, and
// the origin is not asked for the page.
func TestAdminExplainFetchesOnlyOnASameOriginPost(t *testing.T) {
	o := startOrigin(t, "127.0.0.2", false, testRobots, 0)
	p := startProxy(t, testConfig(t, nil))
	adminURL := startAdmin(t, p)
	form := url.Values{"url": {o.URL + "/page"}, "fetch": {"1"}}
	if got := adminDo(t, http.MethodGet, adminURL, "/explain?"+form.Encode(), "", nil); got != 400 {
		t.Errorf("GET with fetch=1: %d, want 400", got)
	}
	if got := adminDo(t, http.MethodPost, adminURL, "/explain", "", form, "Origin", "https://attacker.example", "Sec-Fetch-Site", "cross-site"); got != 403 {
		t.Errorf("cross-site POST: %d, want 403", got)
	}
	if got := adminDo(t, http.MethodPost, adminURL, "/explain", "", form, "Origin", "https://attacker.example"); got != 403 {
		t.Errorf("POST from another origin: %d, want 403", got)
	}
	if o.saw("/page") {
		t.Fatalf("a refused explain request fetched the page: %v", o.seen())
	}
	if got := adminDo(t, http.MethodPost, adminURL, "/explain", "", form, "Origin", adminURL, "Sec-Fetch-Site", "same-origin"); got != 200 {
		t.Errorf("same-origin POST: %d, want 200", got)
	}
	if !o.saw("/page") {
		t.Errorf("the same-origin POST did not fetch the page: %v", o.seen())
	}
}

// With admin_auth every admin request needs an auth.htpasswd user's
// credentials.
func TestAdminAuthRequiresAnHtpasswdUser(t *testing.T) {
	hash, _ := bcrypt.GenerateFromPassword([]byte("pw"), bcrypt.MinCost)
	htpasswd := filepath.Join(t.TempDir(), "htpasswd")
	os.WriteFile(htpasswd, []byte("ops:"+string(hash)+"\n"), 0o600)
	cfg := testConfig(t, nil)
	cfg.Auth.Htpasswd, cfg.AdminAuth = htpasswd, true
	p := startProxy(t, cfg)
	adminURL := startAdmin(t, p)
	for _, c := range []struct {
		auth string
		want int
	}{{"", 401}, {"ops:wrong", 401}, {"nobody:pw", 401}, {"ops:pw", 200}} {
		u := adminURL
		if c.auth != "" {
			u = strings.Replace(adminURL, "http://", "http://"+c.auth+"@", 1)
		}
		for _, path := range []string{"/", "/metrics"} {
			if got := adminDo(t, http.MethodGet, u, path, strings.TrimPrefix(adminURL, "http://"), nil); got != c.want {
				t.Errorf("%s with %q: %d, want %d", path, c.auth, got, c.want)
			}
		}
	}
}

// The admin listener is never reachable through the proxy: its address is
// refused like the proxy's own.
func TestAdminIsNotReachableThroughTheProxy(t *testing.T) {
	cfg := testConfig(t, nil)
	p := startProxy(t, cfg)
	adminURL := startAdmin(t, p)
	ln := strings.TrimPrefix(adminURL, "http://")
	addr, err := net.ResolveTCPAddr("tcp", ln)
	if err != nil {
		t.Fatal(err)
	}
	p.srv.AddSelf(addr)
	resp, _ := get(t, p.client(), adminURL+"/")
	checkRefusal(t, resp, 403, "egress-denied", "destination_ip_prohibited")
}
