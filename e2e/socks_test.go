//go:build unix

package e2e

// The SOCKS5 listener and TLS to the proxy port, end to end: the real
// binary driven by curl (--socks5-hostname, --proxy https://), Python
// requests through socks5h:// (PySocks) and headless Chromium with
// --proxy-server=socks5://, against the client tests' origins.

import (
	"fmt"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
)

// socksUser and socksPassword are the SOCKS5 tests' proxy user.
const socksUser, socksPassword = "alice", "s3cret"

var socksOnRE = regexp.MustCompile(`SOCKS5 on (\S+)`)

// startSOCKSEnv is startClientEnv with the SOCKS5 listener on, a clients
// entry for socksUser and one that lets loopback clients in without
// credentials; it returns the listener's address.
func startSOCKSEnv(t *testing.T) (*clientEnv, string) {
	t.Helper()
	dir := t.TempDir()
	e := &clientEnv{
		dir:   dir,
		plain: startClientOrigin(t, false, clientRobotsTxt, 0),
		tls:   startClientOrigin(t, true, clientRobotsTxt, 0),
	}
	upstream := filepath.Join(dir, "upstream.pem")
	e.tls.writeCertPEM(t, upstream)
	e.caFile = filepath.Join(dir, "certs", "ca.pem")
	hash, err := bcrypt.GenerateFromPassword([]byte(socksPassword), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "cfg.yaml")
	writeFile(t, cfgPath, clientConfig(dir, upstream)+fmt.Sprintf(`socks:
  listen: 127.0.0.1:0
clients:
  - {user: %s, password_bcrypt: %q}
  - {cidr: 127.0.0.1/32}
`, socksUser, hash))
	e.p = startServe(t, dir, "-config", cfgPath)
	var m []string
	e.p.out.waitFor(logTimeout, e.p.done, func(s string) bool { m = socksOnRE.FindStringSubmatch(s); return m != nil })
	if m == nil {
		t.Fatalf("robotsgate did not say where its SOCKS5 listener is; %s", e.log())
	}
	return e, m[1]
}

// wantVia checks that the audit line of rawURL says how it arrived.
func (e *clientEnv) wantVia(t *testing.T, rawURL, via string) {
	t.Helper()
	if _, ok := e.waitAuditLine(func(a auditEntry) bool { return a.URL == rawURL && a.Via == via }); !ok {
		t.Errorf("no audit line for %s via %s; %s", rawURL, via, e.log())
	}
}

// TestClientCurlSOCKS5: curl --socks5-hostname, anonymous and with the
// user's password, over http and intercepted https: judged as through the
// proxy port; a wrong password is refused.
func TestClientCurlSOCKS5(t *testing.T) {
	t.Parallel()
	needTool(t, "curl")
	e, addr := startSOCKSEnv(t)
	for _, c := range []struct {
		name, proxy string
		o           *clientOrigin
	}{
		{"http", addr, e.plain},
		{"https", addr, e.tls},
		{"https as the user", socksUser + ":" + socksPassword + "@" + addr, e.tls},
	} {
		t.Run(c.name, func(t *testing.T) {
			id := strings.ReplaceAll(c.name, " ", "-")
			for _, target := range []string{"/data/socks-" + id, "/private/socks-" + id} {
				r := curl(t, clientVars(), "--socks5-hostname", c.proxy, "--cacert", e.caFile, c.o.URL+target)
				if r.code != 0 {
					t.Fatalf("curl exit %d: %s\n%s", r.code, r.stderr, e.log())
				}
				if strings.HasPrefix(target, "/data/") {
					e.wantAllowed(t, "curl --socks5-hostname", c.o, target, r.status, []byte(r.body))
				} else {
					e.wantRefused(t, "curl --socks5-hostname", c.o, target, r.status, r.body)
				}
				e.wantVia(t, c.o.URL+target, "socks")
			}
		})
	}
	t.Run("wrong password refused", func(t *testing.T) {
		r := curl(t, clientVars(), "--socks5-hostname", socksUser+":wrong@"+addr, e.plain.URL+"/data/socks-wrong")
		if r.code == 0 || e.plain.saw("/data/socks-wrong") {
			t.Errorf("curl with a wrong SOCKS5 password: exit %d, the origin reached: %v; want refused", r.code, e.plain.saw("/data/socks-wrong"))
		}
		if _, ok := e.waitAuditLine(func(a auditEntry) bool { return a.Decision == "auth-required" && a.Via == "socks" }); !ok {
			t.Errorf("no auth-required audit line via socks; %s", e.log())
		}
	})
}

// TestClientPythonRequestsSOCKS5: requests through socks5h:// (PySocks),
// authenticated, with the CA in REQUESTS_CA_BUNDLE.
func TestClientPythonRequestsSOCKS5(t *testing.T) {
	t.Parallel()
	needPython(t, "requests", "socks")
	e, addr := startSOCKSEnv(t)
	proxyURL := "socks5h://" + socksUser + ":" + socksPassword + "@" + addr
	env := clientVars(append(proxyVars(proxyURL), "REQUESTS_CA_BUNDLE="+e.caFile)...)
	var urls []string
	for _, o := range []*clientOrigin{e.plain, e.tls} {
		urls = append(urls, o.URL+"/data/py-socks", o.URL+"/private/py-socks")
	}
	res := runScript(t, e, env, systemPython, append([]string{clientScript(t, "py_requests.py")}, urls...)...)
	for _, o := range []*clientOrigin{e.plain, e.tls} {
		r := result(t, res, o.URL+"/data/py-socks")
		e.wantAllowed(t, "requests socks5h", o, "/data/py-socks", r.Status, r.body())
		e.wantVia(t, o.URL+"/data/py-socks", "socks")
		r = result(t, res, o.URL+"/private/py-socks")
		e.wantRefused(t, "requests socks5h", o, "/private/py-socks", r.Status, string(r.body()))
	}
}

// TestClientChromiumSOCKS5: headless Chromium with
// --proxy-server=socks5://: pages over http and https, and the proxy's
// 403 page for /private.
func TestClientChromiumSOCKS5(t *testing.T) {
	t.Parallel()
	needTool(t, "chromium")
	needTool(t, "certutil")
	e, addr := startSOCKSEnv(t)
	for _, o := range []*clientOrigin{e.plain, e.tls} {
		t.Run(strings.SplitN(o.URL, ":", 2)[0], func(t *testing.T) {
			dom := chromiumVia(t, e, "socks5://"+addr, o.URL+"/page/chromium-socks")
			text, _, _ := strings.Cut(after(dom, `<p id="text">`), "</p>")
			if text != clientPageText {
				t.Errorf("the page's text in Chromium differs from the origin's; DOM:\n%.2000s\n%s", dom, e.log())
			}
			e.waitAudit(t, o.URL+"/page/chromium-socks", "allow", http.StatusOK)
			e.wantVia(t, o.URL+"/page/chromium-socks", "socks")
			dom = chromiumVia(t, e, "socks5://"+addr, o.URL+"/private/chromium-socks")
			if !strings.Contains(dom, "403 Forbidden") || !strings.Contains(dom, "Disallow: /private (line 2)") {
				t.Errorf("Chromium's page for /private: want the proxy's 403; DOM:\n%.2000s", dom)
			}
			if o.saw("/private/chromium-socks") {
				t.Errorf("the origin received /private/chromium-socks")
			}
		})
	}
}

// TestClientCurlHTTPSProxy: curl --proxy https://... (TLS to the proxy
// port) with the CA works for http and https targets; without a CA
// (mitm.enabled false) curl is told at once, and the log says why.
func TestClientCurlHTTPSProxy(t *testing.T) {
	t.Parallel()
	needTool(t, "curl")
	e := startClientEnv(t)
	for _, host := range []string{"127.0.0.1", "localhost"} {
		proxy := "https://" + strings.Replace(e.p.addr, "127.0.0.1", host, 1)
		for _, o := range []*clientOrigin{e.plain, e.tls} {
			id := host + "-" + strings.SplitN(o.URL, ":", 2)[0]
			r := curl(t, clientVars(), "--proxy", proxy, "--proxy-cacert", e.caFile, "--cacert", e.caFile, o.URL+"/data/https-proxy-"+id)
			if r.code != 0 {
				t.Fatalf("curl --proxy %s: exit %d: %s\n%s", proxy, r.code, r.stderr, e.log())
			}
			e.wantAllowed(t, "curl --proxy https://", o, "/data/https-proxy-"+id, r.status, []byte(r.body))
			r = curl(t, clientVars(), "--proxy", proxy, "--proxy-cacert", e.caFile, "--cacert", e.caFile, o.URL+"/private/https-proxy-"+id)
			e.wantRefused(t, "curl --proxy https://", o, "/private/https-proxy-"+id, r.status, r.body)
		}
	}
	t.Run("without a CA", func(t *testing.T) {
		dir := t.TempDir()
		cfgPath := filepath.Join(dir, "cfg.yaml")
		writeFile(t, cfgPath, "listen: 127.0.0.1:0\nadmin_listen: \"\"\nmitm:\n  enabled: false\n")
		p := startServe(t, dir, "-config", cfgPath)
		start := time.Now()
		r := curl(t, clientVars(), "--proxy", "https://"+p.addr, "--proxy-insecure", e.plain.URL+"/data/no-ca")
		if r.code == 0 || time.Since(start) > 5*time.Second {
			t.Errorf("curl --proxy https:// to a proxy without a CA: exit %d after %v, want a failure at once", r.code, time.Since(start))
		}
		p.waitLog("use http:// in the proxy URL", 1)
	})
}
