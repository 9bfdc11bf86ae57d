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
	"strings"

	"github.com/robotsgate/robotsgate/htmlmeta"
	"github.com/robotsgate/robotsgate/policy"
)

// The AI-usage signals of an origin's response (policy/response.go) are
// judged in the relay's ModifyResponse, before anything of the response is
// written to the client, and only for a client with purposes: the
// request's audit slot carries them (Decision.ResponsePurposes), and every
// other request pays one length check.
//
// A refusing signal makes ModifyResponse return a *usageRefusedError: the
// relay closes the origin's body unread (its transport then closes the
// connection, or resets the HTTP/2 stream) and its ErrorHandler sends 403
// usage-denied instead. Not one byte of the origin's body reaches the
// client; the audit record keeps the origin's status (upstream_status) and
// says in its note which signal withheld the body.
//
// With usage.scan_html, the head of a text/html page is read for its meta
// tags first: the relay holds back up to htmlmeta.Limit bytes of the body
// (until </head> or <body>), then passes them on ahead of the rest. A gzip
// or deflate body is decompressed for the scan only, the client still
// receives the origin's bytes; any other coding (br, zstd, several) is not
// scanned, and the audit note says so.

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

// withheldNote is the audit record's note of a response that a signal
// refused.
func withheldNote(r *policy.ResponseRefusal, monitor bool) string {
	if monitor {
		return fmt.Sprintf("the origin's response (%d) would be withheld: %s (monitor mode: delivered)", r.UpstreamStatus, r.Signal.Explain())
	}
	return fmt.Sprintf("the origin's response (%d) was withheld: %s", r.UpstreamStatus, r.Signal.Explain())
}

// judgeResponse judges the AI-usage signals of resp as the slot's decision
// says (policy.ResponseJudge); a non-nil error withholds the response
// (usageRefusedError).
func (s *Server) judgeResponse(resp *http.Response, slot *auditSlot) error {
	ctx := withLicenceBudget(resp.Request.Context(), s.settings()) // one for this response's licences
	j, err := judgeResponseSignals(ctx, &slot.d, resp, slot.addNote)
	if err != nil {
		return &clientLeftError{"while the response's RSL licence was fetched", err}
	}
	slot.signals = j.Signals
	if !j.Refused {
		return nil
	}
	slot.d.ApplyResponse(j, resp.StatusCode)
	d := &slot.d
	if !j.Enforced {
		s.log.Info("response would be refused (monitor mode): delivered", "url", d.Request.Origin.URL(d.Request.Target),
			"signal", j.Refusal.String(), "purpose", j.Refusal.Purpose, "client", resp.Request.RemoteAddr, "client_rule", d.Request.Client.Name)
		return nil
	}
	s.log.Info("response refused", "url", d.Request.Origin.URL(d.Request.Target), "signal", j.Refusal.String(), "purpose", j.Refusal.Purpose,
		"upstream_status", resp.StatusCode, "client", resp.Request.RemoteAddr, "client_rule", d.Request.Client.Name)
	return &usageRefusedError{d: *d}
}

// judgeResponseSignals judges the AI-usage signals of resp for the
// request d allowed, as the relay, /explain and check all do: its header
// fields and meta tags (ResponseJudge.Judge), then, when they refuse
// nothing, the RSL licences it names (ResponseJudge.JudgeLicenses), whose
// signals are listed after the others. The head is read once for both.
// The only error is ctx's (the client left while a licence was fetched).
func judgeResponseSignals(ctx context.Context, d *policy.Decision, resp *http.Response, note func(string)) (policy.ResponseJudgement, error) {
	judge := d.ResponseJudge()
	head := headOf(resp, note)
	j := judge.Judge(resp.Header, head.metas())
	if j.Refused {
		return j, nil
	}
	lj, err := judge.JudgeLicenses(ctx, resp.Header, head.links())
	if err != nil {
		return j, err
	}
	lj.Signals = append(j.Signals, lj.Signals...)
	return lj, nil
}

// headScan reads resp's HTML head at most once (scanHead), for its meta
// and its link tags; nil when resp is not an HTML page with a body.
type headScan struct {
	resp *http.Response
	note func(string)
	done bool
	head htmlmeta.Head
}

// headOf returns what reads resp's HTML head, nil when resp is not an
// HTML page with a body; note receives why the head was not read, if it
// was not.
func headOf(resp *http.Response, note func(string)) *headScan {
	if !hasHTMLBody(resp) {
		return nil
	}
	return &headScan{resp: resp, note: note}
}

func (h *headScan) get() htmlmeta.Head {
	if !h.done {
		h.done = true
		var why string
		h.head, why = scanHead(h.resp)
		if why != "" {
			h.note(why)
		}
	}
	return h.head
}

// metas returns what reads the meta tags, nil for no HTML head.
func (h *headScan) metas() func() []htmlmeta.Meta {
	if h == nil {
		return nil
	}
	return func() []htmlmeta.Meta { return h.get().Metas }
}

// links returns what reads the link tags, nil for no HTML head.
func (h *headScan) links() func() []htmlmeta.Link {
	if h == nil {
		return nil
	}
	return func() []htmlmeta.Link { return h.get().Links }
}

// hasHTMLBody reports whether resp is an HTML page with a body to scan.
func hasHTMLBody(resp *http.Response) bool {
	if resp.Body == nil || resp.Body == http.NoBody || resp.ContentLength == 0 || resp.Request.Method == http.MethodHead ||
		resp.StatusCode == http.StatusNoContent || resp.StatusCode == http.StatusNotModified {
		return false
	}
	mediaType, _, _ := strings.Cut(resp.Header.Get("Content-Type"), ";")
	return strings.EqualFold(strings.TrimSpace(mediaType), "text/html")
}

// scanHead reads the meta tags of an HTML response's head, holding back
// what it read: resp.Body becomes those bytes, then the rest of the
// origin's body. The note says why the head was not read, if it was not.
func scanHead(resp *http.Response) (htmlmeta.Head, string) {
	coding := strings.ToLower(strings.TrimSpace(strings.Join(resp.Header.Values("Content-Encoding"), ",")))
	switch coding {
	case "", "identity", "gzip", "x-gzip", "deflate":
	default:
		return htmlmeta.Head{}, "meta tags not scanned: Content-Encoding " + coding + " is not decoded for the scan"
	}
	held := &heldBody{rest: resp.Body}
	resp.Body = held
	var src io.Reader = &holdReader{b: held, left: htmlmeta.Limit}
	switch coding {
	case "gzip", "x-gzip":
		zr, err := gzip.NewReader(src)
		if err != nil {
			return htmlmeta.Head{}, "meta tags not scanned: the body is not gzip" // the client gets what the origin sent
		}
		src = zr
	case "deflate":
		src = deflateReader(bufio.NewReader(src))
	}
	head, _ := htmlmeta.ScanHead(src, htmlmeta.Limit) // a failed read only ends the scan
	return head, ""
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
