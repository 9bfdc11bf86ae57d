package wire

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"strings"
	"testing"
	"testing/iotest"
)

func TestFramingReadsHeadsAsNetHTTPDoes(t *testing.T) {
	tests := []struct {
		name string
		head string
		want headFraming
	}{
		{"no body", "GET / HTTP/1.1\r\nHost: h\r\n\r\n", headFraming{hosts: 1}},
		{"two hosts", "GET / HTTP/1.1\r\nHost: h\r\nhost: i\r\n\r\n", headFraming{hosts: 2}},
		{"length", "POST / HTTP/1.1\r\ncontent-LENGTH: 12 \r\n\r\n", headFraming{contentLength: 12}},
		{"chunked", "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", headFraming{chunked: true}},
		{"both", "POST / HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n", headFraming{contentLength: 3, chunked: true, ambiguous: true}},
		{"both, bare LF", "POST / HTTP/1.1\nContent-Length: 3\nTransfer-Encoding: chunked\n\n", headFraming{contentLength: 3, chunked: true, ambiguous: true}},
		// Regression: an Upgrade made the guard stop reading heads, so a
		// CL+TE request after a refused upgrade went through unchecked. A
		// connection is handed over only once a 101 is relayed.
		{"upgrade is no tunnel yet", "GET / HTTP/1.1\r\nUPGRADE: websocket\r\n\r\n", headFraming{}},
		{"connect after blank lines", "\r\n\r\nCONNECT h:443 HTTP/1.1\r\n\r\n", headFraming{tunnel: true}},
		{"name with a space is not the header", "POST / HTTP/1.1\r\nContent-Length : 3\r\n\r\n", headFraming{}},
		{"bad length", "POST / HTTP/1.1\r\nContent-Length: 1x\r\n\r\n", headFraming{}},
		{"huge length", "POST / HTTP/1.1\r\nContent-Length: 99999999999999999999999\r\n\r\n", headFraming{}},
		// Regression: lengths above about 4.6e18 were 0 here and a body to
		// net/http, which accepts up to 2^63-1 (strconv.ParseUint(v, 10, 63)).
		{"largest length", "POST / HTTP/1.1\r\nContent-Length: 9223372036854775807\r\n\r\n", headFraming{contentLength: 1<<63 - 1}},
		{"length above 4.6e18", "POST / HTTP/1.1\r\nContent-Length: 5000000000000000000\r\n\r\n", headFraming{contentLength: 5e18}},
		{"obs-fold", "POST / HTTP/1.1\r\nContent-Length:\r\n 5\r\n\r\n", headFraming{folded: true}},
		{"one past the largest", "POST / HTTP/1.1\r\nContent-Length: 9223372036854775808\r\n\r\n", headFraming{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := framing([]byte(tt.head)); got != tt.want {
				t.Errorf("framing = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestHeadEnd(t *testing.T) {
	tests := []struct {
		in   string
		want int
	}{
		{"GET / HTTP/1.1\r\nHost: h\r\n\r\nbody", 27},
		{"GET / HTTP/1.1\nHost: h\n\nbody", 24},
		{"GET / HTTP/1.1\r\nHost: h\n\r\nbody", 26},
		{"\r\nGET / HTTP/1.1\r\n\r\n", 20},
		{"GET / HTTP/1.1\r\nHost: h\r\n", -1},
		{"\r\n\r\n", -1},
	}
	for _, tt := range tests {
		if got := headEnd([]byte(tt.in)); got != tt.want {
			t.Errorf("headEnd(%q) = %d, want %d", tt.in, got, tt.want)
		}
	}
}

// chunkedConn is a connection whose reads return the script in pieces of
// the given sizes, then EOF.
type chunkedConn struct {
	net.Conn
	data  []byte
	sizes []int
}

func (c *chunkedConn) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := min(len(p), len(c.data))
	if len(c.sizes) > 0 {
		n = min(n, c.sizes[0])
		c.sizes = c.sizes[1:]
	}
	copy(p, c.data[:n])
	c.data = c.data[n:]
	return n, nil
}

// TestFramingGuardPassesStreamsUnchanged: whatever the pieces the client's
// bytes arrive in, a stream of well-framed pipelined requests comes out of
// the guard byte for byte, across buffer reuse and recycling.
func TestFramingGuardPassesStreamsUnchanged(t *testing.T) {
	var stream []byte
	for i := range 20 {
		body := strings.Repeat("b", i*97)
		stream = fmt.Appendf(stream, "POST /r%d HTTP/1.1\r\nHost: h\r\nContent-Length: %d\r\n\r\n%s", i, len(body), body)
	}
	stream = append(stream, "GET /ws HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\n\r\nframes after the upgrade"...)
	r := rand.New(rand.NewPCG(7, 9))
	for range 50 {
		var sizes []int
		for range 200 {
			sizes = append(sizes, 1+r.IntN(700))
		}
		g := NewFramingGuard(&chunkedConn{data: stream, sizes: sizes}, 8192)
		got, err := io.ReadAll(iotest.OneByteReader(io.LimitReader(g, int64(len(stream)))))
		if err != nil || !bytes.Equal(got, stream) {
			t.Fatalf("read %d of %d bytes (err %v); first difference at %d", len(got), len(stream), err, firstDiff(got, stream))
		}
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
