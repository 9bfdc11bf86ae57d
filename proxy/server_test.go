package proxy

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// A client that sends its request head too slowly (slowloris) is cut off
// after timeouts.client_header, on the proxy port and inside a tunnel
// (regression: the hand-written request loop held a slow first head for
// the idle timeout, 90 s).
func TestSlowRequestHeadIsCutOff(t *testing.T) {
	o := startOrigin(t, "127.0.0.1", true, testRobots, 0)
	cfg := testConfig(t, o.Certificate())
	cfg.Timeouts.ClientHeader = 300_000_000 // 300 ms
	p := startProxy(t, cfg)
	host := strings.TrimPrefix(o.URL, "https://")
	for name, open := range map[string]func() *rawConn{
		"proxy port": func() *rawConn { return dialProxy(t, p) },
		"tunnel":     func() *rawConn { return dialProxy(t, p).connect(t, p, host, "127.0.0.1") },
	} {
		t.Run(name, func(t *testing.T) {
			c := open()
			start := time.Now()
			io.WriteString(c, "GET /public HTTP/1.1\r\nHost: "+host+"\r\n") // never finished
			c.SetReadDeadline(time.Now().Add(5 * time.Second))
			_, err := io.ReadAll(c.r)
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				t.Fatalf("the connection was still open after %v", time.Since(start))
			}
		})
	}
}

// "Connection: close" on an allowed request closes the client connection
// after its response (RFC 9112 §9.6, a MUST; regression: the hand-written
// loop kept it open), while the upstream connection is reused.
func TestClientConnectionCloseIsHonoured(t *testing.T) {
	o := startOrigin(t, "127.0.0.2", false, testRobots, 0)
	p := startProxy(t, testConfig(t, nil))
	host := strings.TrimPrefix(o.URL, "http://")
	for i := range 2 {
		c := dialProxy(t, p)
		resp, body := c.roundTrip(t, fmt.Sprintf("GET http://%s/page%d HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", host, i, host))
		if resp.StatusCode != 200 || !resp.Close || body != fmt.Sprintf("target=/page%d", i) {
			t.Fatalf("%d %q close=%v", resp.StatusCode, body, resp.Close)
		}
		if _, err := c.r.ReadByte(); err != io.EOF {
			t.Errorf("after the response: %v, want the connection closed (EOF)", err)
		}
	}
	if n := o.conns.Load(); n > 2 { // robots.txt and the pages
		t.Errorf("the origin saw %d connections: the client's Connection: close reached upstream", n)
	}
}

// Bytes a client sends right behind a WebSocket upgrade request (a first
// frame, before the 101 arrives) are relayed, not lost with net/http's
// read-ahead buffer at the hijack.
func TestBytesSentWithTheUpgradeAreNotLost(t *testing.T) {
	o := startEchoUpgradeOrigin(t, "127.0.0.2", false)
	p := startProxy(t, testConfig(t, nil))
	host := strings.TrimPrefix(o.URL, "http://")
	c := dialProxy(t, p)
	io.WriteString(c, upgradeRequest("http://"+host+"/socket", host)+"early-frame\n")
	resp, err := http.ReadResponse(c.r, nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade: %v %v", resp, err)
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	line, err := bufio.NewReader(c.r).ReadString('\n')
	if line != "early-frame\n" {
		t.Errorf("echo of the frame sent with the upgrade: %q %v", line, err)
	}
}

// A request head over 1 MiB is answered 431 by the proxy, with its
// decision headers like every response it makes (regression: net/http's
// bare 431), on the proxy port and inside a tunnel; a head just under the
// limit is served.
func TestOversizedHeadIs431WithDecision(t *testing.T) {
	o := startOrigin(t, "127.0.0.1", true, testRobots, 0)
	p := startProxy(t, testConfig(t, o.Certificate()))
	host := strings.TrimPrefix(o.URL, "https://")
	for name, open := range map[string]func() (*rawConn, string){
		"proxy port": func() (*rawConn, string) { return dialProxy(t, p), "https://" + host },
		"tunnel":     func() (*rawConn, string) { return dialProxy(t, p).connect(t, p, host, "127.0.0.1"), "" },
	} {
		t.Run(name, func(t *testing.T) {
			c, prefix := open()
			// 1 MiB as a literal, the documented limit, not the constant.
			big := fmt.Sprintf("GET %s/public HTTP/1.1\r\nHost: %s\r\nX-Big: %s\r\n\r\n", prefix, host, strings.Repeat("x", 1<<20))
			resp, body := c.roundTrip(t, big)
			checkRefusal(t, resp, http.StatusRequestHeaderFieldsTooLarge, "bad-request", "http_request_error")
			if !resp.Close || !strings.Contains(body, "1 MiB") {
				t.Errorf("close=%v body %q", resp.Close, body)
			}
			c, _ = open()
			fits := fmt.Sprintf("GET %s/fits HTTP/1.1\r\nHost: %s\r\nX-Big: %s\r\n\r\n", prefix, host, strings.Repeat("x", 1<<20-1024))
			if resp, _ := c.roundTrip(t, fits); resp.StatusCode != 200 {
				t.Errorf("a head just under 1 MiB: %d", resp.StatusCode)
			}
		})
	}
}
