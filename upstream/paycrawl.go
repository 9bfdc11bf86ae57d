package upstream

import (
	"io"
	"net/http"
	"strings"

	"github.com/robotsgate/robotsgate/paycrawl"
)

// maxDrain is how much of a 402's body is read before its connection is
// reused for the paid retry; a longer body closes the connection.
const maxDrain = 64 << 10

// maxChargedLen bounds the crawler-charged and crawler-error values kept
// in the audit record.
const maxChargedLen = 64

// payPerCrawl answers an origin's 402 with a crawler-price (pay per
// crawl): when the client has a signer and a max_price in the price's
// currency at or above it, and the request can be sent again (GET or HEAD
// without a body), it is retried once with crawler-exact-price set to the
// price quoted, byte for byte (Cloudflare: it "should exactly match the
// price set in the response header crawler-price"; one price header per
// request), signed over crawler-exact-price too, after a pacing slot of
// its own (it is one more request to the origin, so Crawl-delay and the
// concurrency limit apply to it as to any); the retry's answer is relayed
// whatever it is. Otherwise the 402 is relayed. Every 402 with a price is
// counted by what was done with it; a charge above the quote (or that
// cannot be read) is flagged in the audit record and counted.
func (u *Upstream) payPerCrawl(req *http.Request, resp *http.Response, x *Exchange) (*http.Response, error) {
	outcome := func(o string) { u.opts.Metrics.PriceAnswers.WithLabelValues(o).Inc() }
	out := x.Sign
	if out == nil {
		outcome("unsigned")
		return resp, nil
	}
	if out.Max == nil {
		outcome("no_max_price")
		return resp, nil
	}
	quote := strings.Trim(resp.Header.Get(paycrawl.HeaderPrice), " \t")
	price, err := paycrawl.Parse(quote)
	if err != nil {
		outcome("bad_price")
		return resp, nil
	}
	x.payment().Price = price.String()
	if (req.Method != http.MethodGet && req.Method != http.MethodHead) || (req.Body != nil && req.Body != http.NoBody) {
		outcome("not_replayable")
		return resp, nil
	}
	if !price.Within(*out.Max) {
		outcome("over_max")
		return resp, nil
	}
	if out.Repace != nil {
		if err := out.Repace(req.Context()); err != nil {
			outcome("not_paced")
			return resp, nil
		}
	}
	io.CopyN(io.Discard, resp.Body, maxDrain)
	resp.Body.Close()
	retry := new(http.Request)
	*retry = *req
	retry.Header = req.Header.Clone()
	retry.Header.Del(paycrawl.HeaderMaxPrice) // one price header per request
	retry.Header.Set(paycrawl.HeaderExactPrice, quote)
	retry = SignedCopy(retry, out.Signer, "crawler-exact-price")
	u.opts.Metrics.SignedRequests.WithLabelValues("proxied").Inc()
	resp, err = u.send(retry, x.pin())
	if err != nil {
		return nil, err
	}
	x.noteCrawlerError(resp)
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		outcome("retry_refused")
		return resp, nil
	}
	outcome("paid")
	charged := resp.Header.Get(paycrawl.HeaderCharged)
	if len(charged) <= maxChargedLen && checkHeaderValue(charged) {
		x.payment().Charged = charged
	}
	c, err := paycrawl.Parse(charged)
	if charged != "" && (err != nil || !c.Within(price)) {
		// More than the quote, another currency, or a charge that cannot be
		// read: the client agreed to the quote, not to this.
		x.payment().Overcharged = true
		u.opts.Metrics.CrawlerOvercharges.Inc()
	}
	if err == nil && c.Currency == out.Max.Currency {
		// Only the currencies of max_price: the label's values are bounded
		// by the configuration, not by what origins send.
		u.opts.Metrics.CrawlerCharged.WithLabelValues(c.Currency).Add(c.Float())
	}
	return resp, nil
}

// noteCrawlerError records the crawler-error code an origin's answer
// carries (pay per crawl's error responses), bounded and printable; the
// last answer's wins.
func (x *Exchange) noteCrawlerError(resp *http.Response) {
	v := resp.Header.Get(paycrawl.HeaderError)
	if v == "" {
		return
	}
	if len(v) > maxChargedLen || !checkHeaderValue(v) {
		v = "(unreadable)"
	}
	x.payment().CrawlerError = v
}

// checkHeaderValue reports whether v is printable ASCII (what the audit
// record keeps of a header an origin chose).
func checkHeaderValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if v[i] < 0x20 || v[i] > 0x7e {
			return false
		}
	}
	return true
}
