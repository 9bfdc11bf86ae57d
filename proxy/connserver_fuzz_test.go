package proxy

import (
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/robotsgate/robotsgate/origin"
)

// FuzzRequestLoop feeds arbitrary bytes to a connection's request loop, as a
// hostile client on the proxy port or inside an intercepted tunnel could: the loop must neither
// panic nor hang, and every HTTP/1.1 request it hands on names a Host and has a
// body that reads to its end or fails (never more than the client sent).
func FuzzRequestLoop(f *testing.F) {
	for _, seed := range []string{
		"GET / HTTP/1.1\r\nHost: h\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: h\r\n\r\nGET /2 HTTP/1.1\r\nHost: h\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nabcGET / HTTP/1.1\r\nHost: h\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n",
		"PUT / HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\nhi",
		"HEAD / HTTP/1.0\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: h\r\nHost: i\r\n\r\n",
		"GET / HTTP/1.1\r\n\r\n",
		"\r\n\r\nGET http://h/x HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n",
	} {
		f.Add([]byte(seed), true)
		f.Add([]byte(seed), false)
	}
	f.Fuzz(func(t *testing.T, input []byte, inTunnel bool) {
		handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Host == "" && r.ProtoAtLeast(1, 1) {
				t.Errorf("an HTTP/1.1 request without Host reached the handler: %q", input)
			}
			if n, _ := io.Copy(io.Discard, r.Body); n > int64(len(input)) {
				t.Errorf("a body of %d bytes from %d bytes of input", n, len(input))
			}
			w.Header().Set("X-Test", "1")
			io.WriteString(w, "ok")
		})
		ts := newConnServer(guardFraming(handler))
		client, server := net.Pipe()
		defer client.Close()
		var info *tunnelInfo // the proxy port's connections have none
		if inTunnel {
			info = &tunnelInfo{origin: origin.Origin{Host: "h", Port: 443}, connect: &http.Request{RemoteAddr: "127.0.0.1:1"}}
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			ts.serve(newFramingGuard(server, maxHeaderBytes+4096), "127.0.0.1:1", info)
		}()
		go io.Copy(io.Discard, client) // the responses
		client.SetWriteDeadline(time.Now().Add(5 * time.Second))
		client.Write(input)
		client.Close()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("the loop still runs 10 s after the client closed, on %q", input)
		}
	})
}
