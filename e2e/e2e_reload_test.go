package e2e

import (
	"errors"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
)

// TestE2EReloadFeedback: a rejected SIGHUP reload shows in the metrics
// (robotsgate_config_last_reload_successful 0) and on the status page, not
// only in the log; a good one sets it back to 1 and applies log.level; a
// SIGTERM ends with a "stopped" line.
func TestE2EReloadFeedback(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := e2eConfig{dir: dir, strictPaths: true}
	cfgPath := filepath.Join(dir, "cfg.yaml")
	writeFile(t, cfgPath, cfg.yaml())
	p := startServe(t, dir, "-config", cfgPath, "-admin-listen", "127.0.0.1:0")
	m := regexp.MustCompile(`admin=(127\.0\.0\.1:\d+)`).FindStringSubmatch(p.out.String())
	if m == nil {
		t.Fatalf("no admin address in the start-up log:\n%s", p.out)
	}
	admin := "http://" + m[1]
	metric := func() string {
		body := httpGet(t, admin+"/metrics")
		for _, line := range strings.Split(body, "\n") {
			if v, ok := strings.CutPrefix(line, "robotsgate_config_last_reload_successful "); ok {
				return v
			}
		}
		return "absent"
	}
	if v := metric(); v != "1" {
		t.Errorf("at start: robotsgate_config_last_reload_successful %s, want 1", v)
	}

	writeFile(t, cfgPath, cfg.yaml()+"pacing:\n  max_wait: forever\n")
	p.signal(syscall.SIGHUP)
	p.waitLog("config reload rejected", 1)
	if v := metric(); v != "0" {
		t.Errorf("after a rejected reload: robotsgate_config_last_reload_successful %s, want 0", v)
	}
	if page := httpGet(t, admin+"/"); !strings.Contains(page, "rejected") || !strings.Contains(page, "pacing.max_wait") {
		t.Errorf("the status page does not show the rejected reload:\n%s", page)
	}

	o := startOrigin(t, false)
	writeFile(t, cfgPath, cfg.yaml()+"log:\n  level: debug\n")
	p.signal(syscall.SIGHUP)
	p.waitLog("config reloaded", 1)
	if v := metric(); v != "1" {
		t.Errorf("after a good reload: robotsgate_config_last_reload_successful %s, want 1", v)
	}
	c := dialProxy(t, p.addr)
	if r := c.get(o.URL + "/public/after-reload"); r.status != 200 {
		t.Fatalf("status %d", r.status)
	}
	p.waitLog("level=DEBUG msg=request", 1) // log.level applied on reload

	p.stop(0)
	if !strings.Contains(p.out.String(), `msg=stopped`) {
		t.Errorf("no final stopped line:\n%s", p.out)
	}
}

// TestE2EBadFileCreatesNothing: a configuration naming a file that cannot
// be used (mitm.upstream_ca without a certificate) stops serve before it
// creates the CA (regression: the CA's directory was created, then start failed).
func TestE2EBadFileCreatesNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "upstream.pem"), "not a certificate\n")
	cfg := e2eConfig{dir: dir, strictPaths: true, upstreamCA: true}
	writeFile(t, filepath.Join(dir, "cfg.yaml"), cfg.yaml())
	_, errOut, code := runBin(t, dir, "serve", "-config", "cfg.yaml", "-admin-listen", "off")
	if code == 0 || !strings.Contains(errOut, "mitm.upstream_ca") {
		t.Errorf("exit %d, stderr %q; want an error naming mitm.upstream_ca", code, errOut)
	}
	for _, d := range []string{"certs", "robotsgate-state"} {
		if _, err := os.Stat(filepath.Join(dir, d)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s/ was created before the bad file was found (stat: %v)", d, err)
		}
	}
}

// httpGet fetches a loopback URL directly (the admin listener).
func httpGet(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	return readBody(t, resp)
}

// httpPost posts form to address (the admin listener's /explain fetches a
// page only on a POST) and returns the body.
func httpPost(t *testing.T, address string, form url.Values) string {
	t.Helper()
	resp, err := http.PostForm(address, form)
	if err != nil {
		t.Fatal(err)
	}
	return readBody(t, resp)
}

func readBody(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	var b strings.Builder
	_, err := ioCopy(&b, resp)
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}
