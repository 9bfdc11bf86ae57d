package proxy

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// Malformed heads inside a tunnel are answered by net/http's server, and
// none of them reaches the origin.
func TestTunnelRefusesMalformedHeads(t *testing.T) {
	o := startOrigin(t, "127.0.0.1", true, testRobots, 0)
	p := startProxy(t, testConfig(t, o.Certificate()))
	host := strings.TrimPrefix(o.URL, "https://")
	tests := []struct {
		name   string
		raw    string
		status int
		body   string // a part of the body, if set
	}{
		{"no Host", "GET /public/a HTTP/1.1\r\n\r\n", 400, "missing required Host"},
		{"two Hosts (RFC 9112 §3.2)", "GET /public/a HTTP/1.1\r\nHost: " + host + "\r\nHost: 127.0.0.9\r\n\r\n", 400, "more than one Host"},
		{"invalid Host", "GET /public/a HTTP/1.1\r\nHost: a b\r\n\r\n", 400, ""},
		{"not a request line", "HELLO\r\n\r\n", 400, ""},
		{"bad escape in the target (regression: was taken for a network error, no answer)", "GET /%zz HTTP/1.1\r\nHost: " + host + "\r\n\r\n", 400, ""},
		{"another HTTP version", "GET /public/a HTTP/2.0\r\nHost: " + host + "\r\n\r\n", 505, ""},
		{"head over the limit", "GET /public/a HTTP/1.1\r\nHost: " + host + "\r\nX-Big: " + strings.Repeat("x", maxHeaderBytes+8192) + "\r\n\r\n", 431, ""},
		{"unknown expectation", "GET /public/a HTTP/1.1\r\nHost: " + host + "\r\nExpect: coffee\r\n\r\n", 417, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tc := dialProxy(t, p).connect(t, p, host, "127.0.0.1")
			resp, body := tc.roundTrip(t, tt.raw)
			if resp.StatusCode != tt.status || !strings.Contains(body, tt.body) {
				t.Errorf("%d %q, want %d with %q", resp.StatusCode, body, tt.status, tt.body)
			}
			if !resp.Close {
				t.Error("the connection stays open after a malformed request")
			}
		})
	}
	if o.saw("/public/a") {
		t.Error("a malformed request was forwarded")
	}
}

// streamOrigin is an HTTPS origin on 127.0.0.1 that allows everything and
// serves: /stream, a chunked body with a trailer; /hold, a response that
// waits until the request is cancelled or release is closed (reporting
// each on arrived and cancelled); anything else, "ok".
type streamOrigin struct {
	*httptest.Server
	arrived, cancelled chan string
	release            chan struct{}
}

func startStreamOrigin(t *testing.T) *streamOrigin {
	t.Helper()
	o := &streamOrigin{arrived: make(chan string, 8), cancelled: make(chan string, 8), release: make(chan struct{})}
	o.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/robots.txt":
			io.WriteString(w, "User-agent: *\nAllow: /\n")
		case "/stream":
			w.Header().Set("Trailer", "X-Sum")
			io.WriteString(w, "first,")
			w.(http.Flusher).Flush()
			io.WriteString(w, "second")
			w.Header().Set("X-Sum", "2")
		case "/hold":
			o.arrived <- r.URL.Path
			select {
			case <-r.Context().Done():
				o.cancelled <- r.URL.Path
			case <-o.release:
				io.WriteString(w, "released")
			}
		case "/echo":
			io.Copy(w, r.Body)
		default:
			io.WriteString(w, "ok")
		}
	}))
	o.StartTLS()
	t.Cleanup(o.Close)
	return o
}

// openStreamTunnel starts a streamOrigin and a proxy, and opens an
// intercepted tunnel to the origin through it.
func openStreamTunnel(t *testing.T) (*streamOrigin, *testProxy, string, *rawConn) {
	t.Helper()
	o := startStreamOrigin(t)
	p := startProxy(t, testConfig(t, o.Certificate()))
	host := strings.TrimPrefix(o.URL, "https://")
	return o, p, host, dialProxy(t, p).connect(t, p, host, "127.0.0.1")
}

// One keep-alive tunnel carries HEAD, a chunked response with its trailer,
// Expect: 100-continue and pipelined requests, each framed right (a wrong
// frame would garble the responses after it).
func TestTunnelFramesResponses(t *testing.T) {
	_, _, host, tc := openStreamTunnel(t)

	io.WriteString(tc, "HEAD /page HTTP/1.1\r\nHost: "+host+"\r\n\r\n")
	resp, err := http.ReadResponse(tc.r, &http.Request{Method: http.MethodHead})
	if err != nil || resp.StatusCode != 200 || resp.ContentLength != 2 {
		t.Fatalf("HEAD: %v %v, want 200 with the GET's Content-Length 2", resp, err)
	}

	resp, body := tc.roundTrip(t, "GET /stream HTTP/1.1\r\nHost: "+host+"\r\n\r\n")
	if body != "first,second" || resp.Trailer.Get("X-Sum") != "2" {
		t.Errorf("chunked: %q, trailer %q", body, resp.Trailer)
	}

	io.WriteString(tc, "POST /echo HTTP/1.1\r\nHost: "+host+"\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n")
	if line, err := tc.r.ReadString('\n'); err != nil || line != "HTTP/1.1 100 Continue\r\n" {
		t.Fatalf("before the body: %q %v, want 100 Continue", line, err)
	}
	tc.r.ReadString('\n') // the blank line ending the interim response
	resp, body = tc.roundTrip(t, "hello")
	if resp.StatusCode != 200 || body != "hello" {
		t.Errorf("after 100 Continue: %d %q", resp.StatusCode, body)
	}

	get := "GET /page HTTP/1.1\r\nHost: " + host + "\r\n\r\n"
	io.WriteString(tc, get+get)
	for i := range 2 {
		if resp, body := tc.readResponse(t, "a pipelined response"); resp.StatusCode != 200 || body != "ok" {
			t.Errorf("pipelined response %d: %d %q", i, resp.StatusCode, body)
		}
	}
}

// A client that leaves while its request is in flight cancels it, as under
// net/http's server: here the origin sees its request cancelled.
func TestClientLeavingCancelsTunnelRequest(t *testing.T) {
	o, _, host, tc := openStreamTunnel(t)
	io.WriteString(tc, "GET /hold HTTP/1.1\r\nHost: "+host+"\r\n\r\n")
	<-o.arrived
	tc.Close()
	select {
	case <-o.cancelled:
	case <-time.After(10 * time.Second):
		t.Fatal("the origin's request was not cancelled 10 s after the client left")
	}
}

// Shutdown closes idle tunnels at once and lets a request in flight finish
// before closing its tunnel.
func TestShutdownDrainsTunnels(t *testing.T) {
	o, p, host, idle := openStreamTunnel(t)
	if resp, _ := idle.roundTrip(t, "GET /page HTTP/1.1\r\nHost: "+host+"\r\n\r\n"); resp.StatusCode != 200 {
		t.Fatalf("idle tunnel's first request: %d", resp.StatusCode)
	}
	busy := dialProxy(t, p).connect(t, p, host, "127.0.0.1")
	io.WriteString(busy, "GET /hold HTTP/1.1\r\nHost: "+host+"\r\n\r\n")
	<-o.arrived

	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		done <- p.srv.Shutdown(ctx)
	}()
	if _, err := idle.r.ReadByte(); !errors.Is(err, io.EOF) {
		t.Errorf("idle tunnel during Shutdown: %v, want EOF", err)
	}
	select {
	case err := <-done:
		t.Fatalf("Shutdown returned (%v) with a request in flight", err)
	default:
	}
	close(o.release)
	resp, body := busy.readResponse(t, "the response in flight")
	if body != "released" || !resp.Close {
		t.Errorf("the request in flight: %q, close=%v; want its body and Connection: close", body, resp.Close)
	}
	if err := <-done; err != nil {
		t.Errorf("Shutdown: %v", err)
	}
	var ne net.Error
	if _, err := busy.r.ReadByte(); err == nil || errors.As(err, &ne) && ne.Timeout() {
		t.Errorf("the busy tunnel after Shutdown: %v, want it closed", err)
	}
}

// A request still in flight, with the client's next request already sent
// behind it (net/http's background read takes its first byte), leaves the
// tunnel usable: both responses arrive, in order, and a third request
// follows.
func TestPipelinedRequestBehindALongOneKeepsTheTunnelUsable(t *testing.T) {
	o, _, host, tc := openStreamTunnel(t)
	io.WriteString(tc, "GET /hold HTTP/1.1\r\nHost: "+host+"\r\n\r\n")
	<-o.arrived
	io.WriteString(tc, "GET /page HTTP/1.1\r\nHost: "+host+"\r\n\r\n")
	close(o.release)
	for _, want := range []string{"released", "ok"} {
		if resp, body := tc.readResponse(t, "the response "+want); body != want {
			t.Errorf("response %q: %d %q", want, resp.StatusCode, body)
		}
	}
	if resp, body := tc.roundTrip(t, "GET /page HTTP/1.1\r\nHost: "+host+"\r\n\r\n"); resp.StatusCode != 200 || body != "ok" {
		t.Errorf("the next request: %d %q", resp.StatusCode, body)
	}
}
