// Package headscan reads what an origin's HTML response says of itself in
// its head (its <meta> and <link> tags, package htmlmeta) before any of it
// is relayed, without consuming it: the bytes read are held back and the
// client still receives every byte of the origin's body, first those.
//
// A client cannot switch the scan off: its request asks the origin only
// for the content codings the scan decodes (RestrictAcceptEncoding), and
// a gzip or deflate body is decompressed for the scan only. A page the
// scan cannot read (another coding the origin sent anyway, a head that
// does not end within htmlmeta.Limit, a body that fails) is unscanned
// (policy.Head.Unscanned): what it says is unknown, never taken as if it
// said nothing.
package headscan

import (
	"bufio"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/robotsgate/robotsgate/botauth"
	"github.com/robotsgate/robotsgate/htmlmeta"
	"github.com/robotsgate/robotsgate/policy"
)

// Scan reads resp's HTML head at most once (scanHead), for its meta and
// its link tags; nil when resp is not an HTML page with a body.
type Scan struct {
	resp *http.Response
	done bool
	head policy.Head
}

// Of returns what reads resp's HTML head, nil when resp is not an HTML
// page with a body.
func Of(resp *http.Response) *Scan {
	if !hasHTMLBody(resp) {
		return nil
	}
	return &Scan{resp: resp}
}

// Read returns what reads the head (once, on its first call), nil for no
// HTML head: policy.ResponseJudge calls it only when a signal there
// matters.
func (h *Scan) Read() func() policy.Head {
	if h == nil {
		return nil
	}
	return func() policy.Head {
		if !h.done {
			h.done = true
			h.head = scanHead(h.resp)
		}
		return h.head
	}
}

// htmlTypes are the media types whose head is read: HTML and XHTML (a
// <meta> means the same in both). A response without a Content-Type is
// read too: a client would sniff it, and an origin must not be able to
// hide its tags by leaving the type out.
var htmlTypes = []string{"text/html", "application/xhtml+xml"}

// hasHTMLBody reports whether resp is an HTML page with a body to scan.
func hasHTMLBody(resp *http.Response) bool {
	if resp.Body == nil || resp.Body == http.NoBody || resp.ContentLength == 0 || resp.Request.Method == http.MethodHead ||
		resp.StatusCode == http.StatusNoContent || resp.StatusCode == http.StatusNotModified {
		return false
	}
	ct := resp.Header.Values("Content-Type")
	if len(ct) == 0 || strings.TrimSpace(strings.Join(ct, "")) == "" {
		return true
	}
	mediaType, _, _ := strings.Cut(ct[0], ";")
	for _, t := range htmlTypes {
		if strings.EqualFold(strings.TrimSpace(mediaType), t) {
			return true
		}
	}
	return false
}

// scanCodings are the content codings the scan decodes, which
// RestrictAcceptEncoding leaves in a request.
var scanCodings = []string{"gzip", "x-gzip", "deflate", "identity"}

// scanHead reads the tags of an HTML response's head, holding back what it
// read: resp.Body becomes those bytes, then the rest of the origin's body.
// Head.Unscanned says why the head could not be read, if it could not.
func scanHead(resp *http.Response) policy.Head {
	coding := strings.ToLower(strings.TrimSpace(strings.Join(resp.Header.Values("Content-Encoding"), ",")))
	if coding != "" && !slices.Contains(scanCodings, coding) {
		return policy.Head{Unscanned: "Content-Encoding " + coding + " is not decoded for the scan"}
	}
	held := &heldBody{rest: resp.Body}
	resp.Body = held
	var src io.Reader = &holdReader{b: held, left: htmlmeta.Limit}
	switch coding {
	case "gzip", "x-gzip":
		zr, err := gzip.NewReader(src)
		if err != nil {
			return policy.Head{Unscanned: "the body is not the gzip its Content-Encoding says"} // the client gets what the origin sent
		}
		src = zr
	case "deflate":
		src = deflateReader(bufio.NewReader(src))
	}
	head, err := htmlmeta.ScanHead(src, htmlmeta.Limit)
	switch {
	case err != nil:
		return policy.Head{Unscanned: "the body could not be read: " + err.Error()}
	case !head.Complete:
		return policy.Head{Unscanned: fmt.Sprintf("the head does not end within the first %d KiB", htmlmeta.Limit>>10)}
	}
	return policy.Head{Head: head}
}

// RestrictAcceptEncoding keeps, of a request's Accept-Encoding, only the
// codings the scan decodes (scanCodings), so that a client with purposes
// cannot have a page sent in a coding its scan does not read; with none
// left, the request asks for identity. A request without the field is left
// as it is (nothing is added), nor one whose client signs the field itself
// (Signature-Input covering accept-encoding, or unparsable): a signature
// robotsgate does not hold must stay valid. A page sent in another coding
// anyway is unscanned (scanHead).
func RestrictAcceptEncoding(h http.Header) {
	values := h.Values("Accept-Encoding")
	if len(values) == 0 {
		return
	}
	if h.Get(botauth.HeaderSignatureInput) != "" {
		covered, err := botauth.CoveredFields(h)
		if err != nil || slices.Contains(covered, "accept-encoding") {
			return
		}
	}
	var kept []string
	for _, v := range values {
		for member := range strings.SplitSeq(v, ",") {
			coding, _, _ := strings.Cut(member, ";")
			if slices.Contains(scanCodings, strings.ToLower(strings.TrimSpace(coding))) {
				kept = append(kept, strings.TrimSpace(member))
			}
		}
	}
	if len(kept) == 0 {
		kept = []string{"identity"}
	}
	h.Set("Accept-Encoding", strings.Join(kept, ", "))
}

// deflateReader decodes Content-Encoding: deflate, which is zlib (RFC 9110
// §8.4.1.2), or raw deflate as some servers send it.
func deflateReader(r *bufio.Reader) io.Reader {
	if h, err := r.Peek(2); err == nil && h[0]&0x0f == 8 && (uint16(h[0])<<8|uint16(h[1]))%31 == 0 {
		if zr, err := zlib.NewReader(r); err == nil {
			return zr
		}
	}
	return flate.NewReader(r)
}

// heldBody is an origin's body whose first bytes were read for a scan:
// they come first, then the rest.
type heldBody struct {
	held []byte        // read for the scan, not yet passed on
	err  error         // how the body ended while the scan read it (io.EOF, a failure), nil if it did not
	rest io.ReadCloser // the origin's body
}

func (b *heldBody) Read(p []byte) (int, error) {
	if len(b.held) > 0 {
		n := copy(p, b.held)
		b.held = b.held[n:]
		return n, nil
	}
	if b.err != nil {
		return 0, b.err
	}
	return b.rest.Read(p)
}

func (b *heldBody) Close() error { return b.rest.Close() }

// holdReader is the origin's body as the scan reads it: at most left
// bytes, each kept in the heldBody.
type holdReader struct {
	b    *heldBody
	left int
}

func (h *holdReader) Read(p []byte) (int, error) {
	if h.left <= 0 || h.b.err != nil {
		return 0, io.EOF
	}
	if len(p) > h.left {
		p = p[:h.left]
	}
	n, err := h.b.rest.Read(p)
	h.b.held = append(h.b.held, p[:n]...)
	h.left -= n
	h.b.err = err
	return n, err
}
