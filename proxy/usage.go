package proxy

import (
	"bufio"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/robotsgate/robotsgate/botauth"
	"github.com/robotsgate/robotsgate/htmlmeta"
	"github.com/robotsgate/robotsgate/policy"
)

// The AI-usage signals of an origin's response (policy/response.go) are
// judged in the relay's ModifyResponse, before anything of the response is
// written to the client, and only for a client with purposes: the
// request's record carries them (Decision.ResponsePurposes), and every
// other request pays one length check.
//
// A refusing signal makes ModifyResponse return a *usageRefusedError: the
// relay closes the origin's body unread (its transport then closes the
// connection, or resets the HTTP/2 stream) and its ErrorHandler sends 403
// usage-denied instead. Not one byte of the origin's body reaches the
// client; the audit record keeps the origin's status (upstream_status) and
// says in its note which signal withheld the body.
//
// With usage.scan_html, the head of an HTML page (text/html,
// application/xhtml+xml, or a response with no Content-Type at all) is read
// for its meta and link tags first: the relay holds back up to
// htmlmeta.Limit bytes of the body (until </head> or <body>), then passes
// them on ahead of the rest. A client cannot switch the scan off: its
// request asks the origin only for the content codings the scan decodes
// (restrictAcceptEncoding: gzip and deflate, identity), and a gzip or
// deflate body is decompressed for the scan only, the client still
// receiving the origin's bytes. A page the scan cannot read — another
// coding the origin sent anyway, a head that does not end within the
// limit, a body that fails — is unscanned: what it says is unknown
// (policy.Head.Unscanned; 503 usage-unknown under usage.on_unknown), never
// let through as if it said nothing.

// usageRefusedError is a response withheld because one of its AI-usage
// signals refuses the client's purpose: the decision, made UsageDenied by
// the response (policy.Decision.ApplyResponse).
type usageRefusedError struct{ d policy.Decision }

func (e *usageRefusedError) Error() string {
	if e.d.Response == nil { // withheld for another reason than a signal (fetch-limited)
		return e.d.Note
	}
	return withheldNote(e.d.Response, false)
}

// clientLeftError is a client that went away (err, its context's) while
// the response to its request was judged.
type clientLeftError struct {
	while string
	err   error
}

func (e *clientLeftError) Error() string { return "the client left " + e.while + ": " + e.err.Error() }
func (e *clientLeftError) Unwrap() error { return e.err }

// withheldNote is the audit record's note of a response that a signal
// refused.
func withheldNote(r *policy.ResponseRefusal, monitor bool) string {
	if monitor {
		return fmt.Sprintf("the origin's response (%d) would be withheld: %s (monitor mode: delivered)", r.UpstreamStatus, r.Signal.Explain())
	}
	return fmt.Sprintf("the origin's response (%d) was withheld: %s", r.UpstreamStatus, r.Signal.Explain())
}

// judgeResponse judges the AI-usage signals of resp as the record's
// decision says (policy.ResponseJudge); a non-nil error withholds the
// response (usageRefusedError).
func (s *Server) judgeResponse(resp *http.Response, rec *record) error {
	ctx := withLicenceBudget(resp.Request.Context(), s.settings()) // one for this response's licences
	j, err := judgeResponseSignals(ctx, &rec.d, resp)
	if err != nil {
		return &clientLeftError{"while the response's RSL licence was fetched", err}
	}
	rec.signals = j.Signals
	if !j.Refused {
		return nil
	}
	rec.d.ApplyResponse(j, resp.StatusCode)
	d := &rec.d
	if !j.Enforced {
		if d.Request.Client.MonitorHeader {
			resp.Header.Set(wouldRefuseHeader, s.wouldRefuse(d))
		}
		s.log.Info("response would be refused (monitor mode): delivered", "url", d.Request.Origin.URL(d.Request.Target),
			"signal", j.Refusal.String(), "purpose", j.Refusal.Purpose, "client", resp.Request.RemoteAddr, "client_rule", d.Request.Client.Name)
		return nil
	}
	s.log.Info("response refused", "url", d.Request.Origin.URL(d.Request.Target), "signal", j.Refusal.String(), "purpose", j.Refusal.Purpose,
		"upstream_status", resp.StatusCode, "client", resp.Request.RemoteAddr, "client_rule", d.Request.Client.Name)
	return &usageRefusedError{d: *d}
}

// judgeResponseSignals judges the AI-usage signals of resp for the
// request d allowed (policy.ResponseJudge.JudgeResponse), as the relay,
// /explain and check all do, reading its head at most once. The only error
// is ctx's (the client left while a licence was fetched).
func judgeResponseSignals(ctx context.Context, d *policy.Decision, resp *http.Response) (policy.ResponseJudgement, error) {
	return d.ResponseJudge().JudgeResponse(ctx, resp.Header, headOf(resp).read())
}

// headScan reads resp's HTML head at most once (scanHead), for its meta
// and its link tags; nil when resp is not an HTML page with a body.
type headScan struct {
	resp *http.Response
	done bool
	head policy.Head
}

// headOf returns what reads resp's HTML head, nil when resp is not an
// HTML page with a body.
func headOf(resp *http.Response) *headScan {
	if !hasHTMLBody(resp) {
		return nil
	}
	return &headScan{resp: resp}
}

// read returns what reads the head, nil for no HTML head.
func (h *headScan) read() func() policy.Head {
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
// restrictAcceptEncoding leaves in a request.
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

// restrictAcceptEncoding keeps, of a request's Accept-Encoding, only the
// codings the scan decodes (scanCodings), so that a client with purposes
// cannot have a page sent in a coding its scan does not read; with none
// left, the request asks for identity. A request without the field is left
// as it is (nothing is added), nor one whose client signs the field itself
// (Signature-Input covering accept-encoding, or unparsable): a signature
// robotsgate does not hold must stay valid. A page sent in another coding
// anyway is unscanned (scanHead).
func restrictAcceptEncoding(h http.Header) {
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
