package proxy

import (
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// FuzzRequestPath feeds arbitrary client bytes to the proxy port, the way
// a client would send them (then half-closing its side): net/http's
// server behind the framing guard, the CONNECT handling, the sniffer of
// plain tunnels and the relay. "HOST" in the input stands for the origin's
// host:port, so that the fuzzer can build requests that reach it. Whatever
// the bytes, the proxy must answer and close (no hang), not panic, and no
// request for /private may reach the origin.
func FuzzRequestPath(f *testing.F) {
	for _, seed := range []string{
		"GET http://HOST/a HTTP/1.1\r\nHost: HOST\r\n\r\n",
		"GET http://HOST/a HTTP/1.1\r\nHost: HOST\r\n\r\nGET http://HOST/private HTTP/1.1\r\nHost: HOST\r\n\r\n",
		"POST http://HOST/a HTTP/1.1\r\nHost: HOST\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /private HTTP/1.1\r\n\r\n",
		"POST http://HOST/a HTTP/1.0\r\nHost: HOST\r\nTransfer-Encoding: chunked\r\n\r\n30\r\nGET http://HOST/private HTTP/1.1\r\nHost: HOST\r\n\r\n\r\n0\r\n\r\n",
		"GET http://HOST/a HTTP/1.1\r\nHost: HOST\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\nGET http://HOST/private HTTP/1.1\r\nHost: HOST\r\n\r\n",
		"CONNECT HOST HTTP/1.1\r\nHost: HOST\r\n\r\nGET /a HTTP/1.1\r\nHost: HOST\r\n\r\nGET /private HTTP/1.1\r\nHost: HOST\r\n\r\n",
		"CONNECT HOST HTTP/1.1\r\n\r\nPOST /a HTTP/1.1\r\nHost: HOST\r\nContent-Length: 9223372036854775807\r\n\r\nGET /private HTTP/1.1\r\n\r\n",
		"CONNECT HOST HTTP/1.1\r\n\r\nSSH-2.0-x\r\n",
		"GET http://HOST/a HTTP/1.1\nHost: HOST\nContent-Length: 3\n Transfer-Encoding: chunked\n\nabc",
	} {
		f.Add([]byte(seed))
	}
	o := startOrigin(f, "127.0.0.2", false, "User-agent: *\nDisallow: /private\n", 0)
	cfg := testConfig(f, nil)
	cfg.Timeouts.ClientHeader = 500_000_000
	cfg.Timeouts.ClientIdle = 500_000_000
	cfg.Timeouts.ClientBody = 500_000_000
	p := startProxy(f, cfg)
	host := strings.TrimPrefix(o.URL, "http://")
	f.Fuzz(func(t *testing.T, raw []byte) {
		before := len(o.seen())
		c, err := net.Dial("tcp", p.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		start := time.Now()
		c.SetDeadline(start.Add(10 * time.Second))
		c.Write([]byte(strings.ReplaceAll(string(raw), "HOST", host)))
		c.(*net.TCPConn).CloseWrite()
		if _, err := io.Copy(io.Discard, c); err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Fatalf("no end after %v", time.Since(start))
			}
		}
		for _, target := range o.seen()[before:] {
			if strings.HasPrefix(target, "/private") {
				t.Fatalf("the origin received %q", target)
			}
		}
		if strings.Contains(p.logText(), "panic") {
			t.Fatalf("the proxy panicked:\n%s", p.logText())
		}
	})
}
