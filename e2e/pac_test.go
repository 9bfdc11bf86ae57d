//go:build unix

package e2e

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// pacDir is where make deps installs the PAC evaluator's npm packages
// (e2e/pac/package.json): $ROBOTSGATE_PAC_DIR, or
// ~/.cache/robotsgate-e2e/pac.
func pacDir() string {
	if d := os.Getenv("ROBOTSGATE_PAC_DIR"); d != "" {
		return d
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	return filepath.Join(cache, "robotsgate-e2e", "pac")
}

// evaluatePAC runs the PAC file at path with e2e/pac/evaluate.mjs (npm's
// pac-resolver) on urls and returns what FindProxyForURL said for each.
// node and the packages are required: make deps installs them, and their
// absence is a failure, not a skip.
func evaluatePAC(t *testing.T, dir, path string, urls []string) []string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is not installed (make deps requires Node.js 20 or later): %v", err)
	}
	modules := filepath.Join(pacDir(), "node_modules")
	if _, err := os.Stat(filepath.Join(modules, "pac-resolver")); err != nil {
		t.Fatalf("the PAC evaluator's packages are not installed in %s (run make deps): %v", pacDir(), err)
	}
	script, err := filepath.Abs(filepath.Join("pac", "evaluate.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := runProgram(t, dir, cleanEnv(), node, append([]string{script, modules, path}, urls...)...)
	lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	if code != 0 || len(lines) != len(urls) {
		t.Fatalf("evaluate.mjs: exit %d, %d lines for %d URLs\nstdout:\n%s\nstderr:\n%s", code, len(lines), len(urls), stdout, stderr)
	}
	return lines
}

// TestE2EPACFileSendsBrowsersToTheProxy: /proxy.pac on the admin listener,
// fetched as a browser fetches it (no credentials, though admin_auth is
// on), run by a PAC evaluator robotsgate did not write: every URL goes to
// the proxy, but the hosts of upstream.no_proxy, which go DIRECT, matched
// as the proxy matches them (globs, any case, a trailing dot); and the
// proxy it names is the one serving, which judges a request sent to it.
// With pac_proxy it names that address instead.
func TestE2EPACFileSendsBrowsersToTheProxy(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	o := startOrigin(t, false)
	hash, _, code := runBinStdin(t, dir, "s3cret\n", "passwd", "admin")
	if code != 0 {
		t.Fatalf("passwd: exit %d", code)
	}
	writeFile(t, filepath.Join(dir, "htpasswd"), hash)
	base := strings.Replace(e2eConfig{dir: dir}.yaml(), "admin_listen: \"\"\n", "admin_listen: 127.0.0.1:0\n", 1) +
		fmt.Sprintf("admin_auth: true\nauth:\n  htpasswd: %q\nupstream:\n  no_proxy: [\"*.corp.example\", INTRANET, 10.1.2.3, \"host-[0-9].lan\"]\n",
			filepath.Join(dir, "htpasswd"))
	urls := []string{
		o.URL + "/page",                    // the proxy
		"http://www.example.com/",          // the proxy
		"https://a.corp.example/x",         // DIRECT: *.corp.example
		"http://b.a.corp.example:8080/",    // DIRECT: * spans dots, as path.Match's on a host
		"https://corp.example/",            // the proxy: *.corp.example needs a label before it
		"http://intranet/",                 // DIRECT (the glob is written in capitals: hosts are compared lower-case)
		"http://INTRANET./",                // DIRECT: any case, a trailing dot
		"http://intranet.evil.example/",    // the proxy
		"http://10.1.2.3:8080/",            // DIRECT
		"http://10.1.2.33/",                // the proxy
		"http://host-7.lan/",               // DIRECT
		"http://host-77.lan/",              // the proxy
		"https://a.corp.example.evil.net/", // the proxy
	}
	direct := map[int]bool{2: true, 3: true, 5: true, 6: true, 8: true, 10: true}

	for _, pacProxy := range []string{"", "proxy.corp.example:3128"} {
		cfg := base
		if pacProxy != "" {
			cfg += fmt.Sprintf("pac_proxy: %q\n", pacProxy)
		}
		writeFile(t, filepath.Join(dir, "cfg.yaml"), cfg)
		p := startServe(t, dir, "-config", "cfg.yaml")
		admin := regexp.MustCompile(`admin=(127\.0\.0\.1:\d+)`).FindStringSubmatch(p.out.String())
		if admin == nil {
			t.Fatalf("no admin address in:\n%s", p.out)
		}
		resp, err := http.Get("http://" + admin[1] + "/proxy.pac")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/x-ns-proxy-autoconfig" {
			t.Fatalf("GET /proxy.pac without credentials: %d %q\n%s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
		}
		if resp, err := http.Get("http://" + admin[1] + "/"); err != nil || resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("the status page without credentials: %v %v; want 401 (admin_auth covers all but the PAC file)", resp, err)
		}
		pacFile := filepath.Join(dir, "proxy.pac")
		writeFile(t, pacFile, string(body))

		want := "PROXY " + p.addr
		if pacProxy != "" {
			want = "PROXY " + pacProxy
		}
		got := evaluatePAC(t, dir, pacFile, urls)
		for i, u := range urls {
			w := want
			if direct[i] {
				w = "DIRECT"
			}
			if got[i] != w {
				t.Errorf("pac_proxy %q: FindProxyForURL(%s) = %q, want %q", pacProxy, u, got[i], w)
			}
		}
		if pacProxy == "" {
			// The proxy the PAC file names is robotsgate, judging what it is sent.
			c := proxyClient(t, strings.TrimPrefix(got[0], "PROXY "), "")
			if r := get(t, c, o.URL+"/private/pac"); r.status != 403 || r.header.Get("X-Robotsgate-Decision") != "disallow" {
				t.Errorf("a request through the proxy the PAC file names: %d %q, want 403 disallow", r.status, r.header.Get("X-Robotsgate-Decision"))
			}
		}
		p.stop(0)
	}
}
