package wire

import (
	"bufio"
	"bytes"
	"net/http"
	"testing"
)

// FuzzFramingAgreesWithNetHTTP: wherever net/http reads a request head, the
// framing guard must see the same framing, or a request could hide a body
// (and a second request in it) from the guard: a transfer coding net/http
// applies is one the guard saw, and a body length net/http reads is the
// one the guard skips.
func FuzzFramingAgreesWithNetHTTP(f *testing.F) {
	for _, seed := range []string{
		"GET / HTTP/1.1\r\nHost: h\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n",
		"POST / HTTP/1.1\nHost: h\nContent-Length: 3\nTransfer-Encoding: chunked\n\n",
		"POST / HTTP/1.1\r\nHost: h\r\ncontent-length:  7 \r\n\r\n",
		"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding:\r\n chunked\r\n\r\n",
		"\r\nPOST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: h\r\nContent-Length:\r\n 5\r\n\r\n", // obs-fold (regression)
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		end := headEnd(raw)
		if end < 0 {
			return
		}
		head := raw[:end]
		req, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(head)))
		if err != nil {
			return // net/http refuses it: nothing reaches an origin
		}
		fr := framing(head)
		if fr.ambiguous || fr.folded || fr.hosts > 1 {
			return // the guard refuses it: nothing reaches net/http's reading of it
		}
		if len(req.TransferEncoding) > 0 && !fr.chunked {
			t.Fatalf("net/http applies %q, the guard saw no transfer coding in %q", req.TransferEncoding, head)
		}
		if len(req.TransferEncoding) == 0 && req.ContentLength > 0 && fr.contentLength != req.ContentLength {
			t.Fatalf("net/http reads a body of %d, the guard skips %d, in %q", req.ContentLength, fr.contentLength, head)
		}
	})
}
