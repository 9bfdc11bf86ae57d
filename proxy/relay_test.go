package proxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/robotsgate/robotsgate/config"
)

// rawOrigin is a plain HTTP origin on 127.0.0.2 that answers robots.txt
// (allowing everything but /private) and hands every other request, with
// its connection, to serve; it records the heads it received.
type rawOrigin struct {
	ln    net.Listener
	addr  string
	heads chan *http.Request
}

func startRawOrigin(t *testing.T, serve func(req *http.Request, c net.Conn, br *bufio.Reader)) *rawOrigin {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Fatal(err)
	}
	o := &rawOrigin{ln: ln, addr: ln.Addr().String(), heads: make(chan *http.Request, 16)}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go o.serveConn(c, serve)
		}
	}()
	return o
}

func (o *rawOrigin) serveConn(c net.Conn, serve func(*http.Request, net.Conn, *bufio.Reader)) {
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	br := bufio.NewReader(c)
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		if req.URL.Path == "/robots.txt" {
			body := "User-agent: *\nDisallow: /private\n"
			fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
			continue
		}
		select {
		case o.heads <- req:
		default:
		}
		serve(req, c, br)
		return
	}
}

// A body that the origin cuts short (a bad chunk, or a close before the
// Content-Length) must not reach the client as complete: the proxy aborts
// the client's connection instead of ending the body cleanly (regression:
// the client got "0\r\n\r\n" and a kept connection, and a crawler would
// archive a truncated page as complete).
func TestTruncatedUpstreamBodyAbortsTheClientConnection(t *testing.T) {
	cases := map[string]string{
		"bad chunk":     "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\nzz\r\n",
		"chunked close": "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n",
		"short length":  "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nhello",
	}
	for name, response := range cases {
		t.Run(name, func(t *testing.T) {
			o := startRawOrigin(t, func(_ *http.Request, c net.Conn, _ *bufio.Reader) {
				io.WriteString(c, response)
			})
			p := startProxy(t, testConfig(t, nil))
			c := dialProxy(t, p)
			fmt.Fprintf(c, "GET http://%s/page HTTP/1.1\r\nHost: %s\r\n\r\n", o.addr, o.addr)
			// The head may not even arrive (it waits in the server's buffer
			// for the body); what matters is that no complete response does.
			if resp, err := http.ReadResponse(c.r, nil); err == nil {
				if body, err := io.ReadAll(resp.Body); err == nil {
					t.Fatalf("the body %q ended cleanly: a truncated page presented as complete", body)
				}
			}
			if _, err := c.r.ReadByte(); err == nil {
				t.Error("the connection stayed open after the aborted body")
			}
		})
	}
}

// Hop-by-hop fields (RFC 9110 §7.6.1) are not forwarded in either
// direction: Connection and the fields it names, Keep-Alive,
// Proxy-Connection, TE other than trailers, and an Upgrade that is not a
// WebSocket's (regression: all were forwarded both ways).
func TestHopByHopFieldsAreNotForwarded(t *testing.T) {
	o := startRawOrigin(t, func(_ *http.Request, c net.Conn, _ *bufio.Reader) {
		io.WriteString(c, "HTTP/1.1 200 OK\r\nConnection: X-Resp-Hop, keep-alive\r\nX-Resp-Hop: 1\r\n"+
			"Keep-Alive: timeout=5\r\nProxy-Connection: keep-alive\r\nX-End-To-End: yes\r\nContent-Length: 2\r\n\r\nok")
	})
	p := startProxy(t, testConfig(t, nil))
	c := dialProxy(t, p)
	resp, body := c.roundTrip(t, fmt.Sprintf("GET http://%s/page HTTP/1.1\r\nHost: %s\r\n"+
		"Connection: X-Req-Hop, Upgrade\r\nX-Req-Hop: 1\r\nKeep-Alive: 300\r\nProxy-Connection: keep-alive\r\n"+
		"TE: gzip\r\nUpgrade: h2c\r\nX-Client: kept\r\n\r\n", o.addr, o.addr))
	if resp.StatusCode != 200 || body != "ok" {
		t.Fatalf("%d %q", resp.StatusCode, body)
	}
	req := <-o.heads
	for _, h := range []string{"X-Req-Hop", "Keep-Alive", "Proxy-Connection", "Te", "Upgrade"} {
		if v, ok := req.Header[h]; ok {
			t.Errorf("the origin received hop-by-hop %s: %q", h, v)
		}
	}
	if req.Header.Get("X-Client") != "kept" {
		t.Error("an end-to-end request field was dropped")
	}
	for _, h := range []string{"X-Resp-Hop", "Keep-Alive", "Proxy-Connection"} {
		if v, ok := resp.Header[h]; ok {
			t.Errorf("the client received hop-by-hop %s: %q", h, v)
		}
	}
	if resp.Header.Get("X-End-To-End") != "yes" {
		t.Error("an end-to-end response field was dropped")
	}
}

// The proxy adds nothing to a request the client did not send: no
// User-Agent where the client sent none (regression: Go's default
// "Go-http-client/1.1"), no X-Forwarded-For; the client's own forwarding
// fields and query pass unchanged.
func TestNothingIsAddedUpstream(t *testing.T) {
	o := startRawOrigin(t, func(_ *http.Request, c net.Conn, _ *bufio.Reader) {
		io.WriteString(c, "HTTP/1.1 204 No Content\r\n\r\n")
	})
	p := startProxy(t, testConfig(t, nil))
	for _, tt := range []struct {
		name, extra string
		want        http.Header
	}{
		{"bare request", "", http.Header{}},
		{"client's forwarding fields", "X-Forwarded-For: 192.0.2.1\r\nForwarded: for=192.0.2.1\r\n",
			http.Header{"X-Forwarded-For": {"192.0.2.1"}, "Forwarded": {"for=192.0.2.1"}}},
	} {
		c := dialProxy(t, p)
		c.roundTrip(t, fmt.Sprintf("GET http://%s/page?a=1;b=2 HTTP/1.1\r\nHost: %s\r\n%s\r\n", o.addr, o.addr, tt.extra))
		req := <-o.heads
		if req.RequestURI != "/page?a=1;b=2" {
			t.Errorf("%s: request-target %q", tt.name, req.RequestURI)
		}
		got := req.Header.Clone()
		if fmt.Sprint(got) != fmt.Sprint(tt.want) {
			t.Errorf("%s: the origin received %v, want %v", tt.name, got, tt.want)
		}
	}
}

// A client that stops sending its request body loses the request after
// timeouts.client_body (408) instead of holding the connection forever.
func TestStalledRequestBodyTimesOut(t *testing.T) {
	o := startRawOrigin(t, func(req *http.Request, c net.Conn, _ *bufio.Reader) {
		io.Copy(io.Discard, req.Body)
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
	})
	cfg := testConfig(t, nil)
	cfg.Timeouts.ClientBody = config.Duration(1500 * time.Millisecond)
	p := startProxy(t, cfg)
	c := dialProxy(t, p)
	start := time.Now()
	fmt.Fprintf(c, "POST http://%s/upload HTTP/1.1\r\nHost: %s\r\nContent-Length: 10\r\n\r\nabc", o.addr, o.addr)
	resp, _ := c.readResponse(t, "the answer to a stalled body")
	if resp.StatusCode != http.StatusRequestTimeout || !resp.Close {
		t.Errorf("%d close=%v, want 408 and the connection closed", resp.StatusCode, resp.Close)
	}
	if d := time.Since(start); d < 1500*time.Millisecond {
		t.Errorf("refused after %v, before the timeout", d)
	}
	// The connection is closed once the 408 is written, not after waiting
	// timeouts.client_body once more for the rest of the body.
	answered := time.Now()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := c.r.Read(make([]byte, 1)); err == nil || n > 0 {
		t.Errorf("read %d bytes after the 408 (%v), want the connection closed", n, err)
	}
	if d := time.Since(answered); d > 750*time.Millisecond {
		t.Errorf("the connection was closed %v after the 408, want at once (the body timeout is 1.5 s)", d)
	}
}

// 1xx informational responses are forwarded (103 Early Hints), and the
// final response follows.
func TestEarlyHintsAreForwarded(t *testing.T) {
	o := startRawOrigin(t, func(_ *http.Request, c net.Conn, _ *bufio.Reader) {
		io.WriteString(c, "HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n"+
			"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
	})
	p := startProxy(t, testConfig(t, nil))
	c := dialProxy(t, p)
	fmt.Fprintf(c, "GET http://%s/page HTTP/1.1\r\nHost: %s\r\n\r\n", o.addr, o.addr)
	interim, err := http.ReadResponse(c.r, nil)
	if err != nil || interim.StatusCode != 103 || interim.Header.Get("Link") == "" {
		t.Fatalf("first response: %v %v, want 103 with its Link", interim, err)
	}
	final, body := c.readResponse(t, "the final response")
	if final.StatusCode != 200 || body != "ok" {
		t.Errorf("final: %d %q", final.StatusCode, body)
	}
}

// A 101 from the origin to a request that did not ask for that protocol
// is a 502, and nothing the client sends after it reaches the origin
// (regression: any 101 turned the connection into a raw pipe, carrying
// "GET /private" unjudged).
func TestUnrequestedSwitchIs502(t *testing.T) {
	later := make(chan string, 1)
	o := startRawOrigin(t, func(_ *http.Request, c net.Conn, br *bufio.Reader) {
		io.WriteString(c, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n")
		c.SetReadDeadline(time.Now().Add(time.Second))
		line, _ := br.ReadString('\n')
		later <- line
	})
	p := startProxy(t, testConfig(t, nil))
	c := dialProxy(t, p)
	resp, _ := c.roundTrip(t, fmt.Sprintf("GET http://%s/page HTTP/1.1\r\nHost: %s\r\n\r\n", o.addr, o.addr))
	checkRefusal(t, resp, http.StatusBadGateway, "upstream-error", "http_upgrade_failed")
	fmt.Fprintf(c, "GET /private HTTP/1.1\r\nHost: %s\r\n\r\n", o.addr)
	if line := <-later; line != "" {
		t.Errorf("the origin received %q after its 101", line)
	}
}

// A refused request whose body the client stops sending is still
// answered: net/http reads the unread body before writing a response, and
// that read is bounded by timeouts.client_body too.
func TestRefusalOfAStalledBodyIsAnswered(t *testing.T) {
	o := startOrigin(t, "127.0.0.2", false, testRobots, 0)
	cfg := testConfig(t, nil)
	cfg.Timeouts.ClientBody = 300_000_000 // 300 ms
	p := startProxy(t, cfg)
	host := o.Listener.Addr().String()
	c := dialProxy(t, p)
	fmt.Fprintf(c, "POST http://%s/private/form HTTP/1.1\r\nHost: %s\r\nContent-Length: 10\r\n\r\nabc", host, host)
	resp, _ := c.readResponse(t, "the refusal")
	checkRefusal(t, resp, 403, "disallow", "http_request_denied")
	if o.saw("/private/form") {
		t.Error("the refused request reached the origin")
	}
}

// A request with Expect: 100-continue gets one 100 Continue. Here the
// origin says nothing until the body arrives (the upstream transport sends
// it after its 1 s wait, reading the client's body, at which net/http's
// server has sent the client a 100 Continue), then a late 100 Continue
// and its answer: relaying that 100 too gave the client two (regression:
// TestTunnelFramesResponses failed now and then under load, when the
// transport's body writer read the body before the origin's 100 was
// relayed).
func TestExpectContinueGetsOneHundredContinue(t *testing.T) {
	o := startRawOrigin(t, func(req *http.Request, c net.Conn, br *bufio.Reader) {
		body, _ := io.ReadAll(req.Body)
		fmt.Fprintf(c, "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	})
	p := startProxy(t, testConfig(t, nil))
	c := dialProxy(t, p)
	fmt.Fprintf(c, "POST http://%s/echo HTTP/1.1\r\nHost: %s\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n", o.addr, o.addr)
	if line, err := c.r.ReadString('\n'); err != nil || line != "HTTP/1.1 100 Continue\r\n" {
		t.Fatalf("before the body: %q %v, want 100 Continue", line, err)
	}
	c.r.ReadString('\n') // the blank line ending the interim response
	resp, body := c.roundTrip(t, "hello")
	if resp.StatusCode != 200 || body != "hello" {
		t.Errorf("after the body: %d %q, want 200 \"hello\" (a second 100 Continue?)", resp.StatusCode, body)
	}
}
