package proxy

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// The framing guard (package wire) in front of the proxy port, end to end.

func TestFramingGuardFollowsPipelinedBodies(t *testing.T) {
	o := startOrigin(t, "127.0.0.2", false, testRobots, 0)
	p := startProxy(t, testConfig(t, nil))
	host := strings.TrimPrefix(o.URL, "http://")
	c := dialProxy(t, p)
	// Two requests with bodies and a smuggling attempt, in one write: the
	// guard must find each head after each body.
	body := "x=1\r\n\r\nGET /p" // a body that looks like the start of a head
	pipeline := fmt.Sprintf("POST http://%s/a HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n\r\n%s", host, host, len(body), body) +
		fmt.Sprintf("POST http://%s/b HTTP/1.1\r\nHost: %s\r\nContent-Length: 2\r\n\r\nok", host, host) +
		fmt.Sprintf("POST http://%s/c HTTP/1.1\r\nHost: %s\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", host, host)
	io.WriteString(c, pipeline)
	for _, want := range []int{200, 200, 400} {
		resp, err := http.ReadResponse(c.r, nil)
		if err != nil {
			t.Fatalf("reading response (want %d): %v", want, err)
		}
		io.Copy(io.Discard, resp.Body)
		if resp.StatusCode != want {
			t.Errorf("status %d, want %d", resp.StatusCode, want)
		}
	}
	if o.saw("/c") {
		t.Error("the ambiguous request was forwarded")
	}
}

func TestChunkedRequestEndsTheConnection(t *testing.T) {
	o := startOrigin(t, "127.0.0.2", false, testRobots, 0)
	p := startProxy(t, testConfig(t, nil))
	host := strings.TrimPrefix(o.URL, "http://")
	c := dialProxy(t, p)
	resp, _ := c.roundTrip(t, fmt.Sprintf("POST http://%s/a HTTP/1.1\r\nHost: %s\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n", host, host))
	if resp.StatusCode != 200 || !resp.Close {
		t.Errorf("status %d close %v: a chunked request must end its connection", resp.StatusCode, resp.Close)
	}
}

// TestFramingGuardBareLF: net/http ends header lines at a bare LF too, so
// the guard must read heads the same way, or an ambiguous request written
// with bare LFs would pass it (or hang it).
func TestFramingGuardBareLF(t *testing.T) {
	o := startOrigin(t, "127.0.0.2", false, testRobots, 0)
	p := startProxy(t, testConfig(t, nil))
	host := strings.TrimPrefix(o.URL, "http://")
	c := dialProxy(t, p)
	c.SetDeadline(time.Now().Add(5 * time.Second))
	io.WriteString(c, fmt.Sprintf("POST http://%s/lf HTTP/1.1\nHost: %s\nContent-Length: 3\nTransfer-Encoding: chunked\n\n0\r\n\r\n", host, host))
	resp, err := http.ReadResponse(c.r, nil)
	if err != nil {
		t.Fatalf("reading response: %v", err)
	}
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("status %d, want 400", resp.StatusCode)
	}
	if o.saw("/lf") {
		t.Error("the ambiguous request was forwarded")
	}
}
