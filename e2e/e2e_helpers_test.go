//go:build unix

package e2e

// Helpers of the end-to-end tests (e2e_test.go): they build the real
// robotsgate binary once, start it as a separate process per test, and drive
// it with real clients (curl, wget, Go's http.Client, raw TCP) against origins
// served by this test process on loopback.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// e2eVersion is linked into the test binary with -X main.version, so the
// version command shows that the build-time version reaches the binary.
const e2eVersion = "e2e-test"

// Timeouts of the end-to-end tests. They bound waits on real signals (a log
// line, a process exit, a response); nothing is synchronised by sleeping.
const (
	startTimeout   = 20 * time.Second // until "proxy on ADDR" is printed
	stopTimeout    = 10 * time.Second // SIGTERM with nothing in flight until exit
	requestTimeout = 20 * time.Second // one client request through the proxy
	logTimeout     = 10 * time.Second // until an expected log line appears
	// inFlightWatch is how long the drain test watches that the process
	// does not exit while a request is in flight: a negative property, the
	// one wait with no event to end it early.
	inFlightWatch = 300 * time.Millisecond
)

// readText returns a file's contents, failing the test when it cannot be read.
func readText(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// robotsgateBin is the binary built by TestMain.
var robotsgateBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "robotsgate-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
	robotsgateBin = filepath.Join(dir, "robotsgate")
	if err := buildBinary(robotsgateBin); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: building the robotsgate binary:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// binary returns the robotsgate binary that TestMain built, once the tests
// have read every file it is built from (readSources).
func binary(t testing.TB) string {
	t.Helper()
	sourcesOnce.Do(func() { sourcesErr = readSources("..") })
	if sourcesErr != nil {
		t.Fatalf("reading the sources of the binary: %v", sourcesErr)
	}
	return robotsgateBin
}

var (
	sourcesOnce sync.Once
	sourcesErr  error
)

// readSources reads every file the binary is built from (the module's Go
// files outside this package, go.mod, go.sum, embedded templates). This
// package imports none of them, so without these reads go test's cache would
// replay an old result after a change to the command: it hashes the files a
// test opens while its tests run, and neither TestMain before m.Run nor the
// go build it runs is seen.
func readSources(root string) error {
	return filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && (d.Name() == ".git" || d.Name() == "e2e" || d.Name() == "node_modules") && path != root:
			return filepath.SkipDir
		case d.IsDir():
			return nil
		}
		name := d.Name()
		if strings.HasSuffix(name, "_test.go") || !(strings.HasSuffix(name, ".go") || name == "go.mod" || name == "go.sum" ||
			strings.HasSuffix(name, ".html") || strings.HasSuffix(name, ".css") || strings.HasSuffix(name, ".tmpl")) {
			return nil
		}
		_, err = os.ReadFile(path)
		return err
	})
}

// buildBinary builds the robotsgate command into out. Under `go test -race` the binary
// is built with the race detector too, and the tests fail on any race it
// reports (see proc.stop).
func buildBinary(out string) error {
	args := []string{"build", "-o", out, "-ldflags", "-X main.version=" + e2eVersion}
	if raceEnabled {
		args = append(args, "-race")
	}
	// The command is the module's root package, one directory up.
	cmd := exec.Command("go", append(args, "github.com/robotsgate/robotsgate")...)
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, buf.Bytes())
	}
	return nil
}

// cleanEnv is the test process's environment without any proxy setting, so
// that neither the binary nor curl/wget pick up a proxy (or a no_proxy
// exemption) from the machine the tests run on.
func cleanEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch strings.ToLower(name) {
		case "http_proxy", "https_proxy", "all_proxy", "no_proxy", "ftp_proxy", "curl_ca_bundle", "ssl_cert_file", "ssl_cert_dir", "wgetrc", "curl_home":
			continue
		}
		env = append(env, kv)
	}
	return append(env, extra...)
}

// binEnv is the environment of the robotsgate processes: cleanEnv, and for a
// -race binary no pause at exit (the race runtime sleeps 1s by default,
// GORACE atexit_sleep_ms) on top of any GORACE options already set.
func binEnv() []string {
	env := cleanEnv()
	if !raceEnabled {
		return env
	}
	opts := "atexit_sleep_ms=0"
	for i, kv := range env {
		if v, ok := strings.CutPrefix(kv, "GORACE="); ok {
			env = append(env[:i:i], env[i+1:]...)
			opts = strings.TrimSpace(v + " " + opts)
			break
		}
	}
	return append(env, "GORACE="+opts)
}

// ---------------------------------------------------------------------------
// The robotsgate process.

// proc is one running `robotsgate serve`.
type proc struct {
	t    testing.TB
	cmd  *exec.Cmd
	out  *logBuffer
	addr string // the proxy's address, from "proxy on ADDR"

	done chan struct{} // closed when the process has exited
}

var proxyOnRE = regexp.MustCompile(`proxy on (\S+)`)

// startServe starts `robotsgate serve args...` in dir and waits until it
// prints its proxy address. The process is stopped (SIGTERM) at the end of the
// test unless the test did so itself.
func startServe(t testing.TB, dir string, args ...string) *proc {
	t.Helper()
	p, err := tryStartServe(t, dir, args...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// tryStartServe is startServe returning an error, with the output, when the
// process exits (or never prints its address) instead of starting.
func tryStartServe(t testing.TB, dir string, args ...string) (*proc, error) {
	t.Helper()
	return tryStartServeIn(t, nil, dir, args...)
}

// tryStartServeIn is tryStartServe run by prefix (ip netns exec NAME),
// none when nil.
func tryStartServeIn(t testing.TB, prefix []string, dir string, args ...string) (*proc, error) {
	t.Helper()
	return tryStartServeEnv(t, prefix, binEnv(), dir, args...)
}

// tryStartServeEnv is tryStartServeIn with the environment env.
func tryStartServeEnv(t testing.TB, prefix, env []string, dir string, args ...string) (*proc, error) {
	t.Helper()
	argv := append(append(slices.Clone(prefix), binary(t), "serve"), args...)
	p := &proc{
		t:    t,
		cmd:  exec.Command(argv[0], argv[1:]...),
		out:  newLogBuffer(),
		done: make(chan struct{}),
	}
	p.cmd.Dir = dir
	p.cmd.Env = env
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start robotsgate: %v", err)
	}
	go func() {
		p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() { p.stop(0) })
	var m []string
	ok := p.out.waitFor(startTimeout, p.done, func(s string) bool {
		m = proxyOnRE.FindStringSubmatch(s)
		return m != nil
	})
	if !ok {
		p.stop(-1)
		return nil, fmt.Errorf("robotsgate serve %s did not print its proxy address within %v (%s); output:\n%s",
			strings.Join(args, " "), startTimeout, p.cmd.ProcessState, p.out)
	}
	p.addr = m[1]
	return p, nil
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// signal sends sig to the process.
func (p *proc) signal(sig syscall.Signal) {
	p.t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		p.t.Fatalf("send %v to robotsgate: %v", sig, err)
	}
}

// wait waits up to d for the process to exit and returns its exit code, or
// -1 and false if it is still running.
func (p *proc) wait(d time.Duration) (int, bool) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-p.done:
		return p.cmd.ProcessState.ExitCode(), true
	case <-timer.C:
		return -1, false
	}
}

// stop ends the process if it still runs: SIGTERM, then SIGKILL after
// stopTimeout. It checks the exit code when wantCode >= 0 (a process that
// needed SIGKILL is an error) and fails the test if the race detector of a
// -race binary reported anything. Safe to call more than once.
func (p *proc) stop(wantCode int) {
	p.t.Helper()
	if !p.exited() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		if _, ok := p.wait(stopTimeout); !ok {
			_ = p.cmd.Process.Kill()
			<-p.done
			if wantCode >= 0 {
				p.t.Errorf("robotsgate did not exit within %v of SIGTERM with nothing in flight; killed it. Output:\n%s", stopTimeout, p.out)
			}
			return
		}
		if code := p.cmd.ProcessState.ExitCode(); wantCode >= 0 && code != wantCode {
			p.t.Errorf("robotsgate exited with status %d after SIGTERM, want %d; output:\n%s", code, wantCode, p.out)
		}
	}
	if strings.Contains(p.out.String(), "WARNING: DATA RACE") {
		p.t.Errorf("the race detector found a data race in robotsgate:\n%s", p.out)
	}
}

// waitLog waits until the output contains want at least n times.
func (p *proc) waitLog(want string, n int) {
	p.t.Helper()
	if !p.out.waitFor(logTimeout, p.done, func(s string) bool { return strings.Count(s, want) >= n }) {
		state := "still running"
		if p.exited() {
			state = "exited: " + p.cmd.ProcessState.String()
		}
		p.t.Fatalf("robotsgate did not log %q (%d times) within %v (%s); output:\n%s", want, n, logTimeout, state, p.out)
	}
}

// logBuffer collects a process's output and wakes up waiters on each write.
type logBuffer struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	changed chan struct{} // closed and replaced on every write
}

func newLogBuffer() *logBuffer { return &logBuffer{changed: make(chan struct{})} }

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Write(p)
	close(b.changed)
	b.changed = make(chan struct{})
	return len(p), nil
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// waitFor waits up to d until cond holds on the whole output so far. It gives
// up early when stop (if not nil) is closed and cond still does not hold.
func (b *logBuffer) waitFor(d time.Duration, stop <-chan struct{}, cond func(string) bool) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		b.mu.Lock()
		s, changed := b.buf.String(), b.changed
		b.mu.Unlock()
		if cond(s) {
			return true
		}
		select {
		case <-changed:
		case <-stop:
			// The process exited and Wait returned: the buffer holds
			// all its output.
			return cond(b.String())
		case <-timer.C:
			return false
		}
	}
}

// runBin runs the binary to completion (bounded by a timeout) and returns its
// stdout, stderr and exit code.
func runBin(t *testing.T, dir string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return runProgram(t, dir, binEnv(), binary(t), args...)
}

// runProgram runs name with args in dir with env, bounded by a timeout.
func runProgram(t *testing.T, dir string, env []string, name string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = env
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("%s %s: still running after 30s; killed. stderr:\n%s", filepath.Base(name), strings.Join(args, " "), errOut.String())
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatalf("%s %s: %v", filepath.Base(name), strings.Join(args, " "), err)
	}
	return out.String(), errOut.String(), code
}

// ---------------------------------------------------------------------------
// Origins.

// testRobotsTxt is every origin's robots.txt. Line 2 is the rule the
// refusal tests look for.
const testRobotsTxt = "User-agent: *\n" +
	"Disallow: /private\n" +
	"Allow: /private/ok\n" +
	"\n" +
	"User-agent: FooBot\n" +
	"Disallow: /foo-only\n"

// e2eFetchUA is the User-Agent of robotsgate's robots.txt fetches in the test
// configurations: an origin that sees it knows robotsgate asked.
const e2eFetchUA = "robotsgate-e2e/1.0"

// origin is an HTTP or HTTPS server on 127.0.0.1 in the test process. It
// serves testRobotsTxt, blocks requests to /slow until release is closed,
// and answers everything else with "hello from origin: TARGET".
type origin struct {
	*httptest.Server
	slowStarted chan struct{} // receives once per /slow request that arrived
	release     chan struct{} // closed by releaseSlow: /slow requests finish
	releaseOnce sync.Once

	mu       sync.Mutex
	requests []string // "UA TARGET" of every request received
}

func startOrigin(t *testing.T, useTLS bool) *origin {
	t.Helper()
	o := &origin{slowStarted: make(chan struct{}, 8), release: make(chan struct{})}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o.mu.Lock()
		o.requests = append(o.requests, r.UserAgent()+" "+r.RequestURI)
		o.mu.Unlock()
		switch r.URL.Path {
		case "/robots.txt":
			w.Header().Set("Content-Type", "text/plain")
			io.WriteString(w, testRobotsTxt)
		case "/slow":
			o.slowStarted <- struct{}{}
			select {
			case <-o.release:
			case <-r.Context().Done():
				return
			}
			io.WriteString(w, "slow done")
		default:
			w.Header().Set("X-Origin", "e2e")
			io.WriteString(w, "hello from origin: "+r.RequestURI)
		}
	})
	if useTLS {
		o.Server = httptest.NewTLSServer(h)
	} else {
		o.Server = httptest.NewServer(h)
	}
	t.Cleanup(func() {
		o.releaseSlow()
		o.Server.Close()
	})
	return o
}

// releaseSlow lets blocked /slow requests finish (idempotent).
func (o *origin) releaseSlow() { o.releaseOnce.Do(func() { close(o.release) }) }

// saw reports whether the origin received a request for target from a
// client whose User-Agent is ua ("" = any).
func (o *origin) saw(ua, target string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, r := range o.requests {
		gotUA, gotTarget := splitRequest(r)
		if gotTarget == target && (ua == "" || gotUA == ua) {
			return true
		}
	}
	return false
}

// splitRequest splits a recorded "User-Agent request-target" at its last
// space: a User-Agent may hold spaces (robotsgate's own default does), a
// request-target cannot.
func splitRequest(r string) (ua, target string) {
	i := strings.LastIndexByte(r, ' ')
	if i < 0 {
		return "", r
	}
	return r[:i], r[i+1:]
}

// writeCertPEM writes the HTTPS origin's certificate as PEM (for
// mitm.upstream_ca).
func (o *origin) writeCertPEM(t *testing.T, path string) {
	t.Helper()
	data := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: o.Certificate().Raw})
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// ---------------------------------------------------------------------------
// Configuration.

// e2eConfig is what the tests vary in a configuration file.
type e2eConfig struct {
	dir           string // the test's directory: certs/ and upstream.pem live here
	allowNetworks string // egress.allow_networks entry; "" = 127.0.0.1/32
	strictPaths   bool
	upstreamCA    bool // set mitm.upstream_ca to dir/upstream.pem
}

// yaml renders the configuration. The proxy listens on a free loopback port
// and the admin listener is off.
func (c e2eConfig) yaml() string {
	nets := c.allowNetworks
	if nets == "" {
		nets = "127.0.0.1/32"
	}
	upstream := `""`
	if c.upstreamCA {
		upstream = strconv.Quote(filepath.Join(c.dir, "upstream.pem"))
	}
	return fmt.Sprintf(`# written by the end-to-end tests
listen: 127.0.0.1:0
admin_listen: ""
robots:
  fetch_user_agent: %q
  fetch_timeout: 5s
  strict_paths: %t
egress:
  allow_networks: [%s]
mitm:
  ca_cert: %s
  ca_key: %s
  upstream_ca: %s
`, e2eFetchUA, c.strictPaths, nets,
		strconv.Quote(filepath.Join(c.dir, "certs", "ca.pem")),
		strconv.Quote(filepath.Join(c.dir, "certs", "ca-key.pem")),
		upstream)
}

// caPath is where the binary creates the interception CA for this config.
func (c e2eConfig) caPath() string { return filepath.Join(c.dir, "certs", "ca.pem") }

// writeFile writes data to path, failing the test on error.
func writeFile(t testing.TB, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// ---------------------------------------------------------------------------
// Go clients.

// proxyClient is an http.Client that sends everything through the proxy at
// addr and trusts the CA certificate in caFile (the interception CA) for
// HTTPS. Its idle connections are closed at the end of the test.
func proxyClient(t *testing.T, addr, caFile string) *http.Client {
	t.Helper()
	tr := &http.Transport{
		Proxy:                 http.ProxyURL(&url.URL{Scheme: "http", Host: addr}),
		TLSClientConfig:       &tls.Config{RootCAs: certPool(t, caFile)},
		ForceAttemptHTTP2:     false,
		ResponseHeaderTimeout: requestTimeout,
	}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{
		Transport:     tr,
		Timeout:       requestTimeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// certPool reads PEM certificates from file; nil when file is "".
func certPool(t *testing.T, file string) *x509.CertPool {
	t.Helper()
	if file == "" {
		return nil
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		t.Fatalf("%s: no PEM certificate", file)
	}
	return pool
}

// response is a response read in full.
type response struct {
	status int
	header http.Header
	body   string
}

func get(t *testing.T, c *http.Client, rawURL string) response {
	t.Helper()
	resp, err := c.Get(rawURL)
	if err != nil {
		t.Fatalf("GET %s through the proxy: %v", rawURL, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s through the proxy: reading the body: %v", rawURL, err)
	}
	return response{resp.StatusCode, resp.Header, string(body)}
}

// rawConn is one keep-alive client connection to the proxy, speaking
// HTTP/1.1 by hand so the request-target is exactly what the test wrote.
type rawConn struct {
	t    *testing.T
	conn net.Conn
	br   *bufio.Reader
}

func dialProxy(t *testing.T, addr string) *rawConn {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, requestTimeout)
	if err != nil {
		t.Fatalf("dial the proxy: %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	return &rawConn{t: t, conn: conn, br: bufio.NewReader(conn)}
}

// get sends "GET absURL HTTP/1.1" on the connection and reads the response.
func (c *rawConn) get(absURL string) response {
	c.t.Helper()
	u, err := url.Parse(absURL)
	if err != nil {
		c.t.Fatal(err)
	}
	c.conn.SetDeadline(time.Now().Add(requestTimeout))
	defer c.conn.SetDeadline(time.Time{})
	if _, err := fmt.Fprintf(c.conn, "GET %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: e2e-raw/1.0\r\n\r\n", absURL, u.Host); err != nil {
		c.t.Fatalf("GET %s: write: %v", absURL, err)
	}
	resp, err := http.ReadResponse(c.br, nil)
	if err != nil {
		c.t.Fatalf("GET %s: read the response on the kept-alive connection: %v", absURL, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatalf("GET %s: read the body: %v", absURL, err)
	}
	return response{resp.StatusCode, resp.Header, string(body)}
}

// ---------------------------------------------------------------------------
// curl and wget.

// needTool skips the test when name is not installed.
func needTool(t *testing.T, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		t.Skipf("%s is not installed: this end-to-end test drives the real binary with it (make test installs it: make deps)", name)
	}
	return path
}

// curlResult is what curl got: the status of the last response (that of the
// origin request, after any CONNECT), its headers and body.
type curlResult struct {
	code    int // curl's exit status
	status  int
	version string // %{http_version} of the last response: "1.1", "2"
	header  http.Header
	body    string
	stderr  string
}

// curl runs curl with args (plus flags to record the response) and env.
func curl(t *testing.T, env []string, args ...string) curlResult {
	t.Helper()
	return curlIn(t, nil, env, args...)
}

// curlIn is curl run by prefix (a command that runs another: ip netns
// exec NAME), none when nil.
func curlIn(t *testing.T, prefix []string, env []string, args ...string) curlResult {
	t.Helper()
	bin := needTool(t, "curl")
	dir := t.TempDir()
	hdrFile, bodyFile := filepath.Join(dir, "headers"), filepath.Join(dir, "body")
	// -q must come first: it stops curl reading ~/.curlrc.
	full := append([]string{"-q", "-sS", "--max-time", "20", "-D", hdrFile, "-o", bodyFile, "-w", "%{http_code} %{http_version}"}, args...)
	if len(prefix) > 0 {
		full = append(append(slices.Clone(prefix[1:]), bin), full...)
		bin = prefix[0]
	}
	stdout, stderr, code := runProgram(t, dir, env, bin, full...)
	r := curlResult{code: code, stderr: stderr}
	status, version, _ := strings.Cut(strings.TrimSpace(stdout), " ")
	r.status, _ = strconv.Atoi(status)
	r.version = version
	if data, err := os.ReadFile(hdrFile); err == nil {
		r.header = lastHeaderBlock(string(data))
	}
	if data, err := os.ReadFile(bodyFile); err == nil {
		r.body = string(data)
	}
	return r
}

// lastHeaderBlock parses the last response head in a curl -D dump (which
// holds the proxy's CONNECT response first when tunnelling).
func lastHeaderBlock(dump string) http.Header {
	blocks := strings.Split(strings.TrimSpace(strings.ReplaceAll(dump, "\r\n", "\n")), "\n\n")
	h := http.Header{}
	lines := strings.Split(blocks[len(blocks)-1], "\n")
	for _, line := range lines[1:] { // lines[0] is the status line
		if name, value, ok := strings.Cut(line, ":"); ok {
			h.Add(strings.TrimSpace(name), strings.TrimSpace(value))
		}
	}
	return h
}

// wgetResult is what wget did.
type wgetResult struct {
	code   int    // wget's exit status (8: the server answered with an error)
	body   string // the document (with --content-on-error, also an error's body)
	stderr string // wget's log, with the server's response headers (-S)
}

// wget fetches rawURL with wget through the proxy at proxyAddr, set with
// -e use_proxy=yes -e http_proxy=... -e https_proxy=..., plus extra args.
func wget(t *testing.T, proxyAddr, rawURL string, extra ...string) wgetResult {
	t.Helper()
	bin := needTool(t, "wget")
	dir := t.TempDir()
	bodyFile := filepath.Join(dir, "body")
	args := []string{"--no-config", "-S", "--tries=1", "--timeout=20", "--content-on-error", "-O", bodyFile,
		"-e", "use_proxy=yes",
		"-e", "http_proxy=http://" + proxyAddr,
		"-e", "https_proxy=http://" + proxyAddr}
	args = append(append(args, extra...), rawURL)
	_, stderr, code := runProgram(t, dir, cleanEnv(), bin, args...)
	r := wgetResult{code: code, stderr: stderr}
	if data, err := os.ReadFile(bodyFile); err == nil {
		r.body = string(data)
	}
	return r
}

// ioCopy reads resp's body into w and closes it.
func ioCopy(w io.Writer, resp *http.Response) (int64, error) {
	defer resp.Body.Close()
	return io.Copy(w, resp.Body)
}

// count is the number of requests the origin received.
func (o *origin) count() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.requests)
}

// connect sends "CONNECT authority HTTP/1.1" on the connection and reads the
// response (meant for refusals: on success the connection becomes a tunnel).
func (c *rawConn) connect(authority string) response {
	c.t.Helper()
	c.conn.SetDeadline(time.Now().Add(requestTimeout))
	defer c.conn.SetDeadline(time.Time{})
	if _, err := fmt.Fprintf(c.conn, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", authority, authority); err != nil {
		c.t.Fatalf("CONNECT %s: write: %v", authority, err)
	}
	resp, err := http.ReadResponse(c.br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		c.t.Fatalf("CONNECT %s: read the response: %v", authority, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return response{resp.StatusCode, resp.Header, string(body)}
}
