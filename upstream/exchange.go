package upstream

import (
	"io"
	"net/netip"
	"sync/atomic"

	"github.com/robotsgate/robotsgate/audit"
)

// Exchange is what the upstream side is given of one proxied request
// (where it goes, how it is signed and paid for) and what is recorded of
// its exchange with the origin, for the request's audit record: the
// origin's status, when the request was sent, how the origin's body
// failed, the pause its answer started, and what was paid. The proxy's
// record of the request holds it; the transport reaches it through the
// request's context (Options.Exchange).
type Exchange struct {
	// Pin, when not nil and valid, is the address the request goes to
	// whatever its name resolves to (a transparent client's original
	// destination).
	Pin *netip.AddrPort
	// Sign signs the request for Web Bot Auth and pays under pay per
	// crawl; nil: it goes out unsigned.
	Sign *Signing
	// Status is the origin's status code, 0 when it gave none.
	Status int
	// SentAt is when the request's head was written to the origin (Unix
	// nanoseconds, 0: not measured), for its response time.
	SentAt atomic.Int64
	// BodyErr is how the origin's body failed, if it did (Body).
	BodyErr error
	// Pause is the origin's pause its answer started or lengthened.
	Pause *audit.Pause
	// Paid is what pay per crawl said of the request, nil when nothing
	// (most requests: the record stays small).
	Paid *Payment

	body body // held here: one allocation less per request
}

// Payment is what pay per crawl said of a request: the crawler-price of
// the origin's 402 as parsed (Price), the crawler-charged of the paid
// retry's answer (Charged), whether that is above the price
// (Overcharged), and an origin's crawler-error (CrawlerError).
type Payment struct {
	Price, Charged, CrawlerError string
	Overcharged                  bool
}

// payment is x.Paid, made when first needed.
func (x *Exchange) payment() *Payment {
	if x.Paid == nil {
		x.Paid = &Payment{}
	}
	return x.Paid
}

// pin is the address x's request goes to, invalid: by name.
func (x *Exchange) pin() netip.AddrPort {
	if x.Pin == nil {
		return netip.AddrPort{}
	}
	return *x.Pin
}

// Body wraps the origin's response body, noting in BodyErr how it ends
// early (the relay then aborts the client's response).
func (x *Exchange) Body(rc io.ReadCloser) io.ReadCloser {
	x.body = body{ReadCloser: rc, x: x}
	return &x.body
}

type body struct {
	io.ReadCloser
	x *Exchange
}

func (b *body) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && err != io.EOF {
		b.x.BodyErr = err
	}
	return n, err
}
