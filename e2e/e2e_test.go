//go:build unix

package e2e

// End-to-end tests: the real robotsgate binary (built once by TestMain),
// started as its own process, driven by real clients — curl, wget, Go's
// http.Client and hand-written HTTP/1.1 — against HTTP and HTTPS origins on
// loopback served by this test process. Helpers are in e2e_helpers_test.go.
//
// The egress guard refuses loopback destinations by default, so the test
// configurations allow 127.0.0.1/32 (egress.allow_networks) and trust the
// HTTPS origin's certificate for upstream TLS (mitm.upstream_ca).

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// setup is one test's robotsgate with an HTTP and an HTTPS origin.
type setup struct {
	cfg       e2eConfig
	cfgPath   string
	httpO     *origin
	httpsO    *origin
	p         *proc
	caFile    string // the interception CA the binary created
	upstreamF string // the HTTPS origin's certificate (PEM)
}

// startSetup starts both origins and robotsgate with a configuration that
// lets it reach them, on a free port with the admin listener off.
func startSetup(t *testing.T, strict bool) *setup {
	t.Helper()
	dir := t.TempDir()
	s := &setup{
		cfg:     e2eConfig{dir: dir, strictPaths: strict, upstreamCA: true},
		cfgPath: filepath.Join(dir, "cfg.yaml"),
		httpO:   startOrigin(t, false),
		httpsO:  startOrigin(t, true),
	}
	s.upstreamF = filepath.Join(dir, "upstream.pem")
	s.httpsO.writeCertPEM(t, s.upstreamF)
	writeFile(t, s.cfgPath, s.cfg.yaml())
	s.p = startServe(t, dir, "-config", s.cfgPath, "-listen", "127.0.0.1:0", "-admin-listen", "off")
	s.caFile = s.cfg.caPath()
	return s
}

func (s *setup) proxyURL() string { return "http://" + s.p.addr }

// wantRefusal checks the head and body of a robots.txt refusal of
// originURL+target by rule "Disallow: /private" on line 2.
func wantRefusal(t *testing.T, status int, h http.Header, body, originURL, target string) {
	t.Helper()
	if status != http.StatusForbidden {
		t.Errorf("status %d, want 403; body:\n%s", status, body)
	}
	if got := h.Get("X-Robotsgate-Decision"); got != "disallow" {
		t.Errorf("X-Robotsgate-Decision = %q, want disallow (headers %v)", got, h)
	}
	if got := h.Get("Proxy-Status"); !strings.HasPrefix(got, "robotsgate") || !strings.Contains(got, "Disallow: /private (line 2)") {
		t.Errorf("Proxy-Status = %q, want robotsgate's naming the rule and line", got)
	}
	if got := h.Get("Cache-Control"); got != "no-store" {
		t.Errorf("Cache-Control = %q, want no-store", got)
	}
	for _, want := range []string{
		"Disallow: /private (line 2)", // the rule and its line
		originURL + target,            // the URL
		originURL + "/robots.txt",     // the robots.txt URL
		"User-agent: *",               // the group
	} {
		if !strings.Contains(body, want) {
			t.Errorf("refusal body does not contain %q:\n%s", want, body)
		}
	}
}

// wantOriginSaw checks that target reached the origin, or that it did not.
func wantOriginSaw(t *testing.T, o *origin, target string, want bool) {
	t.Helper()
	if got := o.saw("", target); got != want {
		t.Errorf("origin received %s: %v, want %v", target, got, want)
	}
}

// TestE2ECurlWget drives the binary with curl and wget: plain HTTP with -x,
// intercepted HTTPS trusting the CA the binary created on first start, the
// proxy set through environment variables, and wget's proxy settings.
func TestE2ECurlWget(t *testing.T) {
	t.Parallel()
	s := startSetup(t, true)
	proxy := s.proxyURL()

	t.Run("curl -x http allowed", func(t *testing.T) {
		r := curl(t, cleanEnv(), "-x", proxy, s.httpO.URL+"/public/page")
		if r.code != 0 || r.status != 200 {
			t.Fatalf("curl exit %d, status %d, want 0 and 200; stderr: %s", r.code, r.status, r.stderr)
		}
		if r.body != "hello from origin: /public/page" || r.header.Get("X-Origin") != "e2e" {
			t.Errorf("got body %q, X-Origin %q; want the origin's response unchanged", r.body, r.header.Get("X-Origin"))
		}
		// robotsgate fetched robots.txt with its own User-Agent before
		// forwarding: the request did go through it.
		if !s.httpO.saw(e2eFetchUA, "/robots.txt") {
			t.Errorf("origin never saw robotsgate's robots.txt fetch (User-Agent %s)", e2eFetchUA)
		}
	})

	t.Run("curl -x http disallowed", func(t *testing.T) {
		r := curl(t, cleanEnv(), "-x", proxy, s.httpO.URL+"/private/x")
		if r.code != 0 {
			t.Fatalf("curl exit %d; stderr: %s", r.code, r.stderr)
		}
		wantRefusal(t, r.status, r.header, r.body, s.httpO.URL, "/private/x")
		if !strings.Contains(r.body, "curl/") {
			t.Errorf("refusal body does not name the agent (curl/...):\n%s", r.body)
		}
		wantOriginSaw(t, s.httpO, "/private/x", false)
	})

	t.Run("curl -x https intercepted", func(t *testing.T) {
		r := curl(t, cleanEnv(), "--cacert", s.caFile, "-x", proxy, s.httpsO.URL+"/public/page")
		if r.code != 0 || r.status != 200 || r.body != "hello from origin: /public/page" {
			t.Fatalf("allowed: curl exit %d, status %d, body %q; stderr: %s", r.code, r.status, r.body, r.stderr)
		}
		// Allow: /private/ok is longer than Disallow: /private.
		r = curl(t, cleanEnv(), "--cacert", s.caFile, "-x", proxy, s.httpsO.URL+"/private/ok")
		if r.status != 200 || r.body != "hello from origin: /private/ok" {
			t.Errorf("allowed by the longer Allow: status %d, body %q; stderr: %s", r.status, r.body, r.stderr)
		}
		r = curl(t, cleanEnv(), "--cacert", s.caFile, "-x", proxy, s.httpsO.URL+"/private/x")
		if r.code != 0 {
			t.Fatalf("disallowed: curl exit %d; stderr: %s", r.code, r.stderr)
		}
		wantRefusal(t, r.status, r.header, r.body, s.httpsO.URL, "/private/x")
		wantOriginSaw(t, s.httpsO, "/private/x", false)
	})

	t.Run("curl -x https presents robotsgate's certificate", func(t *testing.T) {
		// Trusting only the origin's own certificate fails: what curl
		// talks to inside the tunnel is robotsgate, not the origin.
		r := curl(t, cleanEnv(), "--cacert", s.upstreamF, "-x", proxy, s.httpsO.URL+"/public/other")
		if r.code != 60 {
			t.Errorf("curl exit %d, want 60 (peer certificate not trusted); stderr: %s", r.code, r.stderr)
		}
		wantOriginSaw(t, s.httpsO, "/public/other", false)
	})

	t.Run("curl --path-as-is evasion spellings", func(t *testing.T) {
		// The evasion guard (strict_paths, on by default) judges the
		// canonical path too; --path-as-is stops curl normalising it first.
		for _, o := range []*origin{s.httpO, s.httpsO} {
			for _, target := range []string{"/%70rivate", "/public/../private", "//private", "/./private"} {
				r := curl(t, cleanEnv(), "--path-as-is", "--cacert", s.caFile, "-x", proxy, o.URL+target)
				if r.status != 403 || r.header.Get("X-Robotsgate-Decision") != "disallow" {
					t.Errorf("%s%s: status %d, decision %q; want 403 disallow; stderr: %s",
						o.URL, target, r.status, r.header.Get("X-Robotsgate-Decision"), r.stderr)
				}
				wantOriginSaw(t, o, target, false)
			}
		}
	})

	t.Run("curl with http_proxy and HTTPS_PROXY", func(t *testing.T) {
		// curl reads the HTTP proxy only from lower-case http_proxy (it
		// ignores HTTP_PROXY, against httpoxy); HTTPS_PROXY in either case.
		env := cleanEnv("http_proxy="+proxy, "HTTPS_PROXY="+proxy)
		r := curl(t, env, s.httpO.URL+"/private/env")
		wantRefusal(t, r.status, r.header, r.body, s.httpO.URL, "/private/env")
		r = curl(t, env, s.httpO.URL+"/public/env")
		if r.status != 200 || r.body != "hello from origin: /public/env" {
			t.Errorf("http allowed: status %d, body %q; stderr: %s", r.status, r.body, r.stderr)
		}
		r = curl(t, env, "--cacert", s.caFile, s.httpsO.URL+"/private/env")
		wantRefusal(t, r.status, r.header, r.body, s.httpsO.URL, "/private/env")
		r = curl(t, env, "--cacert", s.caFile, s.httpsO.URL+"/public/env")
		if r.status != 200 || r.body != "hello from origin: /public/env" {
			t.Errorf("https allowed: status %d, body %q; stderr: %s", r.status, r.body, r.stderr)
		}
		wantOriginSaw(t, s.httpO, "/private/env", false)
		wantOriginSaw(t, s.httpsO, "/private/env", false)
	})

	for _, scheme := range []string{"http", "https"} {
		t.Run("wget "+scheme, func(t *testing.T) {
			o, extra := s.httpO, []string(nil)
			if scheme == "https" {
				o, extra = s.httpsO, []string{"--ca-certificate=" + s.caFile}
			}
			r := wget(t, s.p.addr, o.URL+"/public/wget", extra...)
			if r.code != 0 || r.body != "hello from origin: /public/wget" {
				t.Errorf("allowed: wget exit %d, body %q; log:\n%s", r.code, r.body, r.stderr)
			}
			r = wget(t, s.p.addr, o.URL+"/private/wget", extra...)
			if r.code != 8 { // 8: the server issued an error response
				t.Errorf("disallowed: wget exit %d, want 8; log:\n%s", r.code, r.stderr)
			}
			for _, want := range []string{"403 Forbidden", "X-Robotsgate-Decision: disallow", "ERROR 403"} {
				if !strings.Contains(r.stderr, want) {
					t.Errorf("wget's log does not contain %q:\n%s", want, r.stderr)
				}
			}
			if !strings.Contains(r.body, "Disallow: /private (line 2)") {
				t.Errorf("refusal body (--content-on-error) does not name the rule and line:\n%s", r.body)
			}
			wantOriginSaw(t, o, "/private/wget", false)
		})
	}
}

// TestE2EFirstStartCreatesCA: without a CA the binary creates one where the
// config says (key 0600), prints how to trust it, and intercepts with it; a
// second start reuses the same files.
func TestE2EFirstStartCreatesCA(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	httpsO := startOrigin(t, true)
	httpsO.writeCertPEM(t, filepath.Join(dir, "upstream.pem"))
	cfg := e2eConfig{dir: dir, strictPaths: true, upstreamCA: true}
	cfgPath := filepath.Join(dir, "cfg.yaml")
	writeFile(t, cfgPath, cfg.yaml())
	keyPath := filepath.Join(dir, "certs", "ca-key.pem")

	p := startServe(t, dir, "-config", cfgPath, "-admin-listen", "off")
	out := p.out.String()
	for _, want := range []string{
		"Created the interception CA in " + cfg.caPath(),
		"curl --cacert " + cfg.caPath(),
		"SSL_CERT_FILE=" + cfg.caPath(),
	} {
		if !strings.Contains(out, want) {
			t.Errorf("first start does not print %q; output:\n%s", want, out)
		}
	}
	certPEM, err := os.ReadFile(cfg.caPath())
	if err != nil {
		t.Fatalf("the CA certificate was not created: %v", err)
	}
	keyPEM, err := os.ReadFile(keyPath)
	if err != nil {
		t.Fatalf("the CA key was not created: %v", err)
	}
	if fi, err := os.Stat(keyPath); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("CA key mode = %v (%v), want 0600", fi.Mode().Perm(), err)
	}
	block, _ := pem.Decode(certPEM)
	if block == nil {
		t.Fatalf("%s: no PEM block", cfg.caPath())
	}
	caCert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if !caCert.IsCA {
		t.Errorf("the created certificate is not a CA")
	}
	if k, ok := caCert.PublicKey.(*ecdsa.PublicKey); !ok || k.Curve != elliptic.P256() {
		t.Errorf("CA key is %T, want ECDSA P-256", caCert.PublicKey)
	}
	// The binary intercepts with this CA: a client trusting only it gets
	// through to the origin.
	r := get(t, proxyClient(t, p.addr, cfg.caPath()), httpsO.URL+"/first")
	if r.status != 200 || r.body != "hello from origin: /first" {
		t.Errorf("HTTPS through the first start: status %d, body %q", r.status, r.body)
	}
	p.stop(0)

	p2 := startServe(t, dir, "-config", cfgPath, "-admin-listen", "off")
	if out := p2.out.String(); strings.Contains(out, "Created the interception CA") {
		t.Errorf("second start created a CA again; output:\n%s", out)
	}
	certPEM2, _ := os.ReadFile(cfg.caPath())
	keyPEM2, _ := os.ReadFile(keyPath)
	if string(certPEM2) != string(certPEM) || string(keyPEM2) != string(keyPEM) {
		t.Errorf("second start changed the CA files")
	}
	// The certificate clients trusted after the first start still works.
	r = get(t, proxyClient(t, p2.addr, cfg.caPath()), httpsO.URL+"/second")
	if r.status != 200 || r.body != "hello from origin: /second" {
		t.Errorf("HTTPS through the second start: status %d, body %q", r.status, r.body)
	}
}

// TestE2EReloadOnSIGHUP: SIGHUP applies a rewritten config to the next
// request on a connection opened before, and an invalid config is rejected
// (logged with its key and line) while the running one stays in force.
func TestE2EReloadOnSIGHUP(t *testing.T) {
	t.Parallel()
	s := startSetup(t, true)
	o := s.httpO
	c := dialProxy(t, s.p.addr) // one keep-alive connection throughout

	// strict_paths: true — the evasion guard refuses /%70rivate.
	r := c.get(o.URL + "/%70rivate")
	wantRefusal(t, r.status, r.header, r.body, o.URL, "/%70rivate")
	if r := c.get(o.URL + "/public"); r.status != 200 {
		t.Fatalf("/public: status %d, want 200; body:\n%s", r.status, r.body)
	}

	// strict_paths: false — decisions are exactly the library's: /%70rivate
	// does not match Disallow: /private.
	cfg := s.cfg
	cfg.strictPaths = false
	writeFile(t, s.cfgPath, cfg.yaml())
	s.p.signal(syscall.SIGHUP)
	s.p.waitLog("config reloaded", 1)
	r = c.get(o.URL + "/%70rivate")
	if r.status != 200 || r.body != "hello from origin: /%70rivate" {
		t.Errorf("after reloading strict_paths: false, /%%70rivate: status %d, body %q; want the origin's 200", r.status, r.body)
	}
	r = c.get(o.URL + "/private")
	wantRefusal(t, r.status, r.header, r.body, o.URL, "/private")

	// An invalid file (strict_paths back to true, plus a bad value) is
	// rejected as a whole: /%70rivate stays allowed.
	bad := e2eConfig{dir: s.cfg.dir, strictPaths: true, upstreamCA: true}.yaml()
	badLine := strings.Count(bad, "\n") + 2
	bad += "pacing:\n  max_wait: forever\n"
	writeFile(t, s.cfgPath, bad)
	s.p.signal(syscall.SIGHUP)
	s.p.waitLog("config reload rejected", 1)
	if want := fmt.Sprintf("cfg.yaml:%d: pacing.max_wait", badLine); !strings.Contains(s.p.out.String(), want) {
		t.Errorf("the rejected reload is not logged with %q; output:\n%s", want, s.p.out)
	}
	r = c.get(o.URL + "/%70rivate")
	if r.status != 200 {
		t.Errorf("after a rejected reload, /%%70rivate: status %d, want 200 (the running config kept); body:\n%s", r.status, r.body)
	}
	r = c.get(o.URL + "/private")
	wantRefusal(t, r.status, r.header, r.body, o.URL, "/private")

	// egress.allow_networks without the origin's address: refused by the
	// egress guard from the next request on.
	cfg.allowNetworks = "127.0.0.3/32"
	writeFile(t, s.cfgPath, cfg.yaml())
	s.p.signal(syscall.SIGHUP)
	s.p.waitLog("config reloaded", 2)
	r = c.get(o.URL + "/public/after-egress-change")
	if r.status != 403 || r.header.Get("X-Robotsgate-Decision") != "egress-denied" {
		t.Errorf("after removing the origin from allow_networks: status %d, decision %q; want 403 egress-denied; body:\n%s",
			r.status, r.header.Get("X-Robotsgate-Decision"), r.body)
	}
	wantOriginSaw(t, o, "/public/after-egress-change", false)
	if s.p.exited() {
		t.Fatalf("robotsgate exited during the reloads; output:\n%s", s.p.out)
	}
}

// TestE2ESIGTERMDrains: on SIGTERM robotsgate stops accepting connections at
// once, lets a request in flight finish — a plain HTTP one, and one inside an
// intercepted tunnel (a hijacked connection the HTTP server does not track) —
// and then exits 0 without waiting out the drain timeout.
func TestE2ESIGTERMDrains(t *testing.T) {
	t.Parallel()
	for _, scheme := range []string{"http", "https"} {
		t.Run(scheme, func(t *testing.T) {
			t.Parallel()
			s := startSetup(t, true)
			o := s.httpO
			if scheme == "https" {
				o = s.httpsO
			}
			client := proxyClient(t, s.p.addr, s.caFile)
			type result struct {
				r   response
				err error
			}
			done := make(chan result, 1)
			go func() {
				var res result
				resp, err := client.Get(o.URL + "/slow")
				if res.err = err; err == nil {
					var b strings.Builder
					_, res.err = ioCopy(&b, resp)
					res.r = response{resp.StatusCode, resp.Header, b.String()}
				}
				done <- res
			}()
			select {
			case <-o.slowStarted:
			case res := <-done:
				t.Fatalf("the slow request finished before reaching the origin: %+v", res)
			case <-time.After(requestTimeout):
				t.Fatalf("the slow request never reached the origin; proxy output:\n%s", s.p.out)
			}

			sigterm := time.Now()
			s.p.signal(syscall.SIGTERM)
			s.p.waitLog("draining", 1)

			// New connections are refused while the request is in flight.
			deadline := time.Now().Add(logTimeout)
			for {
				conn, err := net.DialTimeout("tcp", s.p.addr, time.Second)
				if err != nil {
					break
				}
				conn.Close()
				if time.Now().After(deadline) {
					t.Fatalf("robotsgate still accepts connections %v after SIGTERM", logTimeout)
				}
				time.Sleep(5 * time.Millisecond) // poll: the listener closes right after "draining"
			}
			// It must not exit while the request is in flight: a negative
			// property, so watch for a short while (a process that does not
			// drain exits within milliseconds of SIGTERM).
			if code, exited := s.p.wait(inFlightWatch); exited {
				t.Fatalf("robotsgate exited (status %d) with a request in flight; output:\n%s", code, s.p.out)
			}
			select {
			case res := <-done:
				t.Fatalf("the slow request finished before the origin released it: %+v", res)
			default:
			}

			o.releaseSlow()
			select {
			case res := <-done:
				if res.err != nil || res.r.status != 200 || res.r.body != "slow done" {
					t.Errorf("in-flight request: err %v, status %d, body %q; want 200 \"slow done\"; proxy output:\n%s",
						res.err, res.r.status, res.r.body, s.p.out)
				}
			case <-time.After(requestTimeout):
				t.Fatalf("the in-flight request did not complete after the origin released it; output:\n%s", s.p.out)
			}
			// The drain timeout is 30s; with nothing left in flight the
			// process must not wait it out (idle connections and tunnels
			// are closed).
			code, ok := s.p.wait(stopTimeout)
			if !ok {
				t.Fatalf("robotsgate still runs %v after SIGTERM with nothing in flight; output:\n%s",
					time.Since(sigterm).Round(time.Millisecond), s.p.out)
			}
			if code != 0 {
				t.Errorf("exit status %d after draining, want 0; output:\n%s", code, s.p.out)
			}
		})
	}
}

// TestE2ESIGTERMDrainsForAtMost30s: a request that never finishes holds
// the drain for the documented 30 s, not less, and then robotsgate gives
// up on it and exits.
func TestE2ESIGTERMDrainsForAtMost30s(t *testing.T) {
	t.Parallel()
	s := startSetup(t, true)
	// No client timeout: a client giving up would end the request, and the
	// drain with it, before the 30 s.
	client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: s.p.addr})}}
	t.Cleanup(client.CloseIdleConnections)
	done := make(chan error, 1)
	go func() {
		resp, err := client.Get(s.httpO.URL + "/slow")
		if err == nil {
			_, err = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		done <- err
	}()
	select {
	case <-s.httpO.slowStarted:
	case err := <-done:
		t.Fatalf("the stuck request ended before reaching the origin: %v", err)
	case <-time.After(requestTimeout):
		t.Fatalf("the stuck request never reached the origin; proxy output:\n%s", s.p.out)
	}
	sigterm := time.Now()
	s.p.signal(syscall.SIGTERM)
	s.p.waitLog("draining", 1)
	// Until 30 s after SIGTERM the process waits for the request (half a
	// second early, for the time SIGTERM took to arrive): a negative
	// property, watched for the whole of it.
	if code, exited := s.p.wait(30*time.Second - 500*time.Millisecond - time.Since(sigterm)); exited {
		t.Fatalf("robotsgate exited (status %d) %v after SIGTERM with a request in flight, before the 30 s drain; output:\n%s",
			code, time.Since(sigterm).Round(time.Millisecond), s.p.out)
	}
	if _, exited := s.p.wait(stopTimeout); !exited {
		t.Fatalf("robotsgate still runs %v after SIGTERM: the drain is not bounded by 30 s; output:\n%s",
			time.Since(sigterm).Round(time.Millisecond), s.p.out)
	}
	t.Logf("exited %v after SIGTERM", time.Since(sigterm).Round(time.Millisecond))
	select {
	case err := <-done:
		if err == nil {
			t.Error("the stuck request completed, though the origin never answered")
		}
	case <-time.After(requestTimeout):
		t.Error("the stuck request's client was not let go when robotsgate exited")
	}
}

// TestE2ECommands covers check, lint, ca init and version.
func TestE2ECommands(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()

	t.Run("check", func(t *testing.T) {
		httpO, httpsO := startOrigin(t, false), startOrigin(t, true)
		cdir := t.TempDir()
		httpsO.writeCertPEM(t, filepath.Join(cdir, "upstream.pem"))
		cfgPath := filepath.Join(cdir, "cfg.yaml")
		writeFile(t, cfgPath, e2eConfig{dir: cdir, strictPaths: true, upstreamCA: true}.yaml())

		out, errOut, code := runBin(t, dir, "check", "-config", cfgPath, httpO.URL+"/public")
		if code != 0 || !strings.HasPrefix(out, "ALLOW") {
			t.Errorf("allowed URL: exit %d, want 0; stdout %q, stderr %q", code, out, errOut)
		}
		out, errOut, code = runBin(t, dir, "check", "-config", cfgPath, httpO.URL+"/private/x")
		if code != 1 || !strings.HasPrefix(out, "DISALLOW") {
			t.Errorf("disallowed URL: exit %d, want 1; stdout %q, stderr %q", code, out, errOut)
		}
		for _, want := range []string{"Disallow: /private", "line 2", httpO.URL + "/robots.txt"} {
			if !strings.Contains(out, want) {
				t.Errorf("check output does not name %q: %q", want, out)
			}
		}
		// Several URLs: one line each, exit 1 because one is refused.
		out, _, code = runBin(t, dir, "check", "-config", cfgPath, httpsO.URL+"/public", httpsO.URL+"/private/y")
		if lines := strings.Split(strings.TrimSpace(out), "\n"); code != 1 || len(lines) != 2 ||
			!strings.HasPrefix(lines[0], "ALLOW") || !strings.HasPrefix(lines[1], "DISALLOW") {
			t.Errorf("two HTTPS URLs, one refused: exit %d, want 1 and ALLOW then DISALLOW; stdout:\n%s", code, out)
		}
		// -agent picks the FooBot group (line 5), whose rule is on line 6.
		out, _, code = runBin(t, dir, "check", "-config", cfgPath, "-agent", "FooBot", httpO.URL+"/foo-only", httpO.URL+"/private/x")
		if code != 1 || !strings.Contains(out, "Disallow: /foo-only") || !strings.Contains(out, "line 6") ||
			!strings.Contains(out, "ALLOW     "+httpO.URL+"/private/x") {
			t.Errorf("-agent FooBot: exit %d, want 1, /foo-only refused by line 6 and /private/x allowed; stdout:\n%s", code, out)
		}
		if _, _, code := runBin(t, dir, "check", "-config", cfgPath, httpO.URL+"/foo-only"); code != 0 {
			t.Errorf("/foo-only for the * group: exit %d, want 0", code)
		}
	})

	t.Run("lint", func(t *testing.T) {
		bad := filepath.Join(dir, "bad-robots.txt")
		writeFile(t, bad, "Disallow: /before-any-agent\nUser-agent: *\nDisallow: nopath\nUser-agent:\nDisallow: /x\n")
		out, errOut, code := runBin(t, dir, "lint", bad)
		if code != 1 {
			t.Errorf("lint of a file with errors: exit %d, want 1; stdout %q, stderr %q", code, out, errOut)
		}
		for _, want := range []string{"line 1: error", "line 3: error", "line 4: error", "3 errors"} {
			if !strings.Contains(out, want) {
				t.Errorf("lint output does not contain %q:\n%s", want, out)
			}
		}

		out, _, code = runBin(t, dir, "lint", "-json", bad)
		if code != 1 {
			t.Errorf("lint -json: exit %d, want 1", code)
		}
		var diags []struct {
			Line     int    `json:"line"`
			Severity string `json:"severity"`
			Code     string `json:"code"`
			Message  string `json:"message"`
		}
		if err := json.Unmarshal([]byte(out), &diags); err != nil {
			t.Fatalf("lint -json output is not a JSON array of diagnostics: %v\n%s", err, out)
		}
		var errLines []int
		for _, d := range diags {
			if d.Severity == "error" {
				errLines = append(errLines, d.Line)
			}
			if d.Code == "" || d.Message == "" {
				t.Errorf("diagnostic without code or message: %+v", d)
			}
		}
		if fmt.Sprint(errLines) != "[1 3 4]" {
			t.Errorf("lint -json error lines %v, want [1 3 4]; output:\n%s", errLines, out)
		}

		good := filepath.Join(dir, "good-robots.txt")
		writeFile(t, good, testRobotsTxt)
		if out, _, code := runBin(t, dir, "lint", good); code != 0 || !strings.Contains(out, "no problems") {
			t.Errorf("lint of a clean file: exit %d, want 0; stdout %q", code, out)
		}
	})

	t.Run("ca init", func(t *testing.T) {
		caDir := filepath.Join(dir, "ca")
		certPath, keyPath := filepath.Join(caDir, "ca.pem"), filepath.Join(caDir, "ca-key.pem")
		out, errOut, code := runBin(t, dir, "ca", "init", "-dir", caDir)
		if code != 0 || !strings.Contains(out, certPath) || !strings.Contains(out, "curl --cacert") {
			t.Fatalf("ca init: exit %d, want 0 and the paths and trust instructions; stdout %q, stderr %q", code, out, errOut)
		}
		first, err := os.ReadFile(certPath)
		if err != nil {
			t.Fatal(err)
		}
		if fi, err := os.Stat(keyPath); err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("key %s: %v, mode want 0600", keyPath, err)
		}

		_, errOut, code = runBin(t, dir, "ca", "init", "-dir", caDir)
		if code == 0 || !strings.Contains(errOut, certPath) || !strings.Contains(errOut, "-force") {
			t.Errorf("second ca init without -force: exit %d, want non-zero naming %s and -force; stderr %q", code, certPath, errOut)
		}
		if again, _ := os.ReadFile(certPath); string(again) != string(first) {
			t.Errorf("ca init without -force replaced the certificate")
		}

		if _, errOut, code = runBin(t, dir, "ca", "init", "-dir", caDir, "-force"); code != 0 {
			t.Fatalf("ca init -force: exit %d; stderr %q", code, errOut)
		}
		if replaced, _ := os.ReadFile(certPath); string(replaced) == string(first) {
			t.Errorf("ca init -force left the old certificate")
		}
		if fi, err := os.Stat(keyPath); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("key after -force: %v, mode want 0600", err)
		}
	})

	t.Run("version", func(t *testing.T) {
		out, _, code := runBin(t, dir, "version")
		if first, _, _ := strings.Cut(out, "\n"); code != 0 || first != "robotsgate "+e2eVersion {
			t.Errorf("version: exit %d, stdout %q; want 0 and first %q", code, out, "robotsgate "+e2eVersion)
		}
	})

	t.Run("unknown command", func(t *testing.T) {
		_, errOut, code := runBin(t, dir, "frobnicate")
		if code != 2 || !strings.Contains(errOut, `"frobnicate"`) {
			t.Errorf("unknown command: exit %d, stderr %q; want 2 naming it", code, errOut)
		}
	})
}

// TestE2EInvalidConfig: serve refuses to start on an invalid config file, with
// errors naming each key and line, and starts nothing (no CA files either).
func TestE2EInvalidConfig(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "bad.yaml"), "listen: 127.0.0.1:0\n"+
		"admin_listen: \"\"\n"+
		"robots:\n"+
		"  strict_paths: maybe\n"+ // line 4: wrong type
		"  bogus: 1\n"+ // line 5: unknown key
		"pacing:\n"+
		"  max_wait: forever\n") // line 7: invalid duration
	_, errOut, code := runBin(t, dir, "serve", "-config", "bad.yaml")
	if code == 0 {
		t.Fatalf("serve with an invalid config exited 0; stderr:\n%s", errOut)
	}
	for _, want := range []string{"bad.yaml:4: robots.strict_paths", "bad.yaml:5: robots.bogus", "bad.yaml:7: pacing.max_wait"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr does not name %q:\n%s", want, errOut)
		}
	}
	if strings.Contains(errOut, "proxy on") {
		t.Errorf("serve started listening despite the invalid config:\n%s", errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "robotsgate-state")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("serve with an invalid config created robotsgate-state/ (stat: %v)", err)
	}

	_, errOut, code = runBin(t, dir, "serve", "-config", "missing.yaml")
	if code == 0 || !strings.Contains(errOut, "missing.yaml") {
		t.Errorf("serve with a missing config file: exit %d, stderr %q; want non-zero naming the file", code, errOut)
	}
}

// adminOnRE finds the admin address in serve's "robotsgate listening" log
// line.
var adminOnRE = regexp.MustCompile(`msg="robotsgate listening" .*\badmin=(\S+)`)

// TestE2EQuickStart runs `serve` as the README's quick start does — no config
// file, in a fresh working directory — only moving the proxy and the admin
// listener to free ports (the documented defaults, 8080 and 9090, may be
// taken on a shared machine; the binary's help must name 9090). It starts,
// prints its address and the trust instructions, creates robotsgate-state/ca.pem
// there, refuses loopback origins (the default egress guard) before sending
// them anything, and answers /healthz on the admin listener.
func TestE2EQuickStart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	httpO, httpsO := startOrigin(t, false), startOrigin(t, true)
	if help, _, _ := runBin(t, t.TempDir(), "serve", "-h"); !strings.Contains(help, "built-in default 127.0.0.1:9090") {
		t.Errorf("serve -h does not give the admin listener's default, 127.0.0.1:9090:\n%s", help)
	}
	p := startServe(t, dir, "-listen", "127.0.0.1:0", "-admin-listen", "127.0.0.1:0")

	out := p.out.String()
	caAbs := filepath.Join(dir, "robotsgate-state", "ca.pem")
	for _, want := range []string{
		"proxy on 127.0.0.1:",
		"Created the interception CA in robotsgate-state/ca.pem",
		"curl --cacert " + caAbs,
		"SSL_CERT_FILE=" + caAbs,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output does not contain %q:\n%s", want, out)
		}
	}
	for _, f := range []string{"ca.pem", "ca-key.pem"} {
		if _, err := os.Stat(filepath.Join(dir, "robotsgate-state", f)); err != nil {
			t.Errorf("robotsgate-state/%s was not created in the working directory: %v", f, err)
		}
	}

	// Plain HTTP to a loopback origin: 403 egress-denied.
	c := dialProxy(t, p.addr)
	r := c.get(httpO.URL + "/public")
	if r.status != 403 || r.header.Get("X-Robotsgate-Decision") != "egress-denied" || !strings.Contains(r.body, "loopback") {
		t.Errorf("loopback origin with the defaults: status %d, decision %q, body %q; want 403 egress-denied naming loopback",
			r.status, r.header.Get("X-Robotsgate-Decision"), r.body)
	}
	if got := r.header.Get("Proxy-Status"); !strings.Contains(got, "destination_ip_prohibited") {
		t.Errorf("Proxy-Status = %q, want error=destination_ip_prohibited", got)
	}
	// HTTPS: the CONNECT itself is refused the same way.
	r = c.connect(strings.TrimPrefix(httpsO.URL, "https://"))
	if r.status != 403 || r.header.Get("X-Robotsgate-Decision") != "egress-denied" {
		t.Errorf("CONNECT to a loopback origin: status %d, decision %q; want 403 egress-denied", r.status, r.header.Get("X-Robotsgate-Decision"))
	}
	if n := httpO.count() + httpsO.count(); n != 0 {
		t.Errorf("the loopback origins received %d requests (robots.txt fetches included), want none", n)
	}

	m := adminOnRE.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("serve did not log its admin address:\n%s", out)
	}
	resp, err := (&http.Client{Timeout: requestTimeout}).Get("http://" + m[1] + "/healthz")
	if err != nil {
		t.Fatalf("admin /healthz: %v", err)
	}
	var b strings.Builder
	ioCopy(&b, resp)
	if resp.StatusCode != 200 || strings.TrimSpace(b.String()) != "ok" {
		t.Errorf("admin /healthz: status %d, body %q", resp.StatusCode, b.String())
	}
}
