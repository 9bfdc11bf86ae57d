//go:build linux

package e2e

// One client cannot stop the process: the real binary under a descriptor
// limit of 512 (prlimit), and a client holding more idle connections than
// that to its SOCKS5 listener, one byte sent on each and nothing more.

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	xproxy "golang.org/x/net/proxy"
)

// descriptorLimit is the limit the tests set on the binary; idleConns the
// connections their client holds, more than the limit.
const descriptorLimit, idleConns = 512, 600

// limitedEnv is robotsgate under the descriptor limit, with its SOCKS5
// and admin listeners, and an origin.
type limitedEnv struct {
	p            *proc
	socks, admin string
	origin       *origin
}

// startLimited starts robotsgate under prlimit --nofile=512:512 with
// connections (the connections section, "" for the defaults).
func startLimited(t *testing.T, connections string) *limitedEnv {
	t.Helper()
	prlimit := needTool(t, "prlimit")
	dir := t.TempDir()
	cfg := fmt.Sprintf(`# written by the descriptor tests
listen: 127.0.0.1:0
admin_listen: 127.0.0.1:0
robots:
  fetch_user_agent: %q
  fetch_timeout: 5s
egress:
  allow_networks: [127.0.0.1/32]
mitm:
  ca_cert: %q
  ca_key: %q
socks:
  listen: 127.0.0.1:0
log:
  audit: ""
%s`, e2eFetchUA, filepath.Join(dir, "certs", "ca.pem"), filepath.Join(dir, "certs", "ca-key.pem"), connections)
	writeFile(t, filepath.Join(dir, "cfg.yaml"), cfg)
	p, err := tryStartServeIn(t, []string{prlimit, fmt.Sprintf("--nofile=%d:%d", descriptorLimit, descriptorLimit)}, dir, "-config", "cfg.yaml")
	if err != nil {
		t.Fatal(err)
	}
	e := &limitedEnv{p: p, origin: startOrigin(t, false)}
	p.waitLog("SOCKS5 on", 1)
	e.socks = socksOnRE.FindStringSubmatch(p.out.String())[1]
	e.admin = "http://" + adminOnRE.FindStringSubmatch(p.out.String())[1]
	return e
}

// holdIdle opens n connections to addr from the loopback address src and
// sends one byte on each (a SOCKS5 greeting's first); they are closed when
// the test ends, or by the returned function.
func holdIdle(t *testing.T, addr, src string, n int) (closeAll func()) {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 5 * time.Second}
	var conns []net.Conn
	closeAll = func() {
		for _, c := range conns {
			c.Close()
		}
		conns = nil
	}
	t.Cleanup(closeAll)
	for i := range n {
		c, err := d.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("idle connection %d of %d: %v", i+1, n, err)
		}
		c.Write([]byte{5})
		conns = append(conns, c)
	}
	return closeAll
}

// readyz asks /readyz with a short timeout, on a connection of its own:
// its status, or 0 when no answer came (an admin listener out of
// descriptors cannot answer). A connection kept alive from an earlier
// call would be answered without the admin listener accepting anything,
// so a listener that failed to accept would still count as failing.
func (e *limitedEnv) readyz(t *testing.T) (int, string) {
	t.Helper()
	tr := &http.Transport{DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, Timeout: 3 * time.Second}).Get(e.admin + "/readyz")
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// viaSOCKS fetches path from the origin through the SOCKS5 listener.
func (e *limitedEnv) viaSOCKS(t *testing.T, path string) (int, error) {
	t.Helper()
	d, err := xproxy.SOCKS5("tcp", e.socks, nil, &net.Dialer{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		return d.(xproxy.ContextDialer).DialContext(ctx, network, addr)
	}}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, Timeout: requestTimeout}).Get(e.origin.URL + path)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// metric reads one series of the admin listener's /metrics (-1: absent).
func (e *limitedEnv) metric(t *testing.T, series string) float64 {
	t.Helper()
	_, body := adminStatus(t, e.admin+"/metrics")
	return seriesValue(body, series)
}

// seriesValue is the value of one series (name and labels, exactly as
// exposed) in a Prometheus text exposition; -1 when absent.
func seriesValue(exposition, series string) float64 {
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` (\S+)$`).FindStringSubmatch(exposition)
	if m == nil {
		return -1
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return -1
	}
	return v
}

// Without caps (connections: 0), 600 idle connections exhaust the 512
// descriptors: the SOCKS5 listener retries its accept errors instead of
// ending the process, /readyz never says ready meanwhile, and once the
// connections close everything serves again and /readyz says so.
func TestDescriptorExhaustionDoesNotStopTheProcess(t *testing.T) {
	t.Parallel()
	e := startLimited(t, "connections:\n  max_per_listener: 0\n  max_per_client: 0\n")
	if code, body := e.readyz(t); code != 200 {
		t.Fatalf("/readyz before: %d %s", code, body)
	}
	closeAll := holdIdle(t, e.socks, "127.0.0.1", idleConns)
	e.p.waitLog("the SOCKS5 listener cannot accept connections, retrying", 1)
	if e.p.exited() {
		t.Fatalf("robotsgate exited: %s\n%s", e.p.cmd.ProcessState, e.p.out)
	}
	if code, body := e.readyz(t); code == 200 {
		t.Errorf("/readyz says ready while the SOCKS5 listener cannot accept: %q", body)
	} else {
		t.Logf("/readyz while out of descriptors: %d %s", code, body)
	}
	closeAll()
	e.p.waitLog("the SOCKS5 listener accepts connections again", 1)
	var code int
	var body string
	for range 10 { // the admin listener may still be taking its waiting connections back
		if code, body = e.readyz(t); code == 200 {
			break
		}
	}
	if code != 200 {
		t.Errorf("/readyz after the connections closed: %d %s", code, body)
	}
	if status, err := e.viaSOCKS(t, "/after"); err != nil || status != 200 {
		t.Errorf("a SOCKS5 client after the connections closed: %d %v", status, err)
	}
	if r := get(t, proxyClient(t, e.p.addr, ""), e.origin.URL+"/after-proxy"); r.status != 200 {
		t.Errorf("a proxy client after the connections closed: %d %s", r.status, r.body)
	}
	if n := e.metric(t, fmt.Sprintf(`robotsgate_listener_accept_errors_total{addr=%q,listener="socks"}`, e.socks)); n < 1 {
		t.Errorf("robotsgate_listener_accept_errors_total of the SOCKS5 listener: %v, want >= 1", n)
	}
	if e.p.exited() {
		t.Fatalf("robotsgate exited: %s\n%s", e.p.cmd.ProcessState, e.p.out)
	}
}

// With the default caps, lowered to fit 512 descriptors (64 per listener,
// 16 per client), a client holding 600 connections keeps 16: another
// client is served meanwhile, through SOCKS5 and the proxy port, and
// /readyz says ready.
func TestConnectionCapsKeepOneClientFromTakingEveryDescriptor(t *testing.T) {
	t.Parallel()
	e := startLimited(t, "")
	e.p.waitLog("caps lowered to fit", 1)
	if !strings.Contains(e.p.out.String(), "lowered_to=64") || !strings.Contains(e.p.out.String(), "client_lowered_to=16") {
		t.Errorf("the caps were not lowered to 64 per listener and 16 per client:\n%s", e.p.out)
	}
	holdIdle(t, e.socks, "127.0.0.2", idleConns)
	e.p.waitLog("the SOCKS5 listener closed a connection at once: the client's cap is reached", 1)
	if status, err := e.viaSOCKS(t, "/meanwhile"); err != nil || status != 200 {
		t.Errorf("another SOCKS5 client while one holds %d connections: %d %v", idleConns, status, err)
	}
	if r := get(t, proxyClient(t, e.p.addr, ""), e.origin.URL+"/meanwhile-proxy"); r.status != 200 {
		t.Errorf("a proxy client meanwhile: %d %s", r.status, r.body)
	}
	if code, body := e.readyz(t); code != 200 {
		t.Errorf("/readyz meanwhile: %d %s", code, body)
	}
	refused := e.metric(t, fmt.Sprintf(`robotsgate_listener_refused_total{addr=%q,cap="client",listener="socks"}`, e.socks))
	open := e.metric(t, fmt.Sprintf(`robotsgate_listener_connections{addr=%q,listener="socks"}`, e.socks))
	if refused < 1 || open > 16 {
		t.Errorf("SOCKS5 listener: %v refused over the client's cap, %v open; want some refused and at most 16 open", refused, open)
	}
	if strings.Contains(e.p.out.String(), "cannot accept connections") {
		t.Errorf("a listener ran out of descriptors despite the caps:\n%s", e.p.out)
	}
}
