// Package paycrawl reads and writes the prices of pay per crawl, the
// exchange in which an origin answers 402 Payment Required with a
// crawler-price header, a crawler retries offering crawler-exact-price (or
// crawler-max-price) in a signed request, and the origin answers with
// crawler-charged, or with a crawler-error code. Values are a currency
// code and a decimal amount, e.g. "USD 0.01" (Cloudflare's pay per crawl
// documentation, "Crawl pages" and "Error codes", last updated 23 April
// 2026). It does no I/O.
package paycrawl

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Header names, canonical (HTTP/2 lower-cases them on the wire).
const (
	HeaderPrice      = "Crawler-Price"       // on the origin's 402: what the content costs
	HeaderMaxPrice   = "Crawler-Max-Price"   // on the crawler's retry: the most it pays
	HeaderExactPrice = "Crawler-Exact-Price" // on the crawler's retry: exactly the price asked
	HeaderCharged    = "Crawler-Charged"     // on the origin's success: what was charged
	HeaderError      = "Crawler-Error"       // on an error response: why (e.g. InvalidCrawlerExactPrice)
)

// MaxLen bounds a price value in bytes; a longer one does not parse.
const MaxLen = 32

// Scale is the number of amount units in one currency unit: amounts are
// kept in millionths, so that sums are exact.
const Scale = 1_000_000

// maxAmount bounds an amount (in millionths): a billion currency units.
const maxAmount = 1_000_000_000 * Scale

// Price is an amount in a currency.
type Price struct {
	// Currency is a three-letter upper-case code, e.g. "USD".
	Currency string
	// Amount is in millionths of the currency's unit (Scale).
	Amount int64
}

// Parse reads a price: a three-letter upper-case currency code, one space,
// and a non-negative decimal amount with at most nine integer and six
// fraction digits ("USD 0.01"). Anything else is an error: the caller
// then does not pay.
func Parse(s string) (Price, error) {
	if len(s) > MaxLen {
		return Price{}, errors.New("paycrawl: price too long")
	}
	s = strings.Trim(s, " \t")
	cur, amount, ok := strings.Cut(s, " ")
	if !ok || len(cur) != 3 || !upper(cur) {
		return Price{}, fmt.Errorf("paycrawl: price %q: want a currency code and an amount, e.g. USD 0.01", s)
	}
	whole, frac, _ := strings.Cut(amount, ".")
	if whole == "" || len(whole) > 9 || len(frac) > 6 || !digits(whole) || !digits(frac) || strings.HasSuffix(amount, ".") {
		return Price{}, fmt.Errorf("paycrawl: price %q: want a decimal amount such as 0.01", s)
	}
	w, _ := strconv.ParseInt(whole, 10, 64)
	f := int64(0)
	if frac != "" {
		f, _ = strconv.ParseInt(frac+strings.Repeat("0", 6-len(frac)), 10, 64)
	}
	return Price{Currency: cur, Amount: w*Scale + f}, nil
}

// String writes p as Parse reads it, with the fewest fraction digits that
// keep its value and at least two ("USD 0.01", "USD 1.50", "EUR 0.0025").
func (p Price) String() string {
	frac := fmt.Sprintf("%06d", p.Amount%Scale)
	frac = strings.TrimRight(frac, "0")
	for len(frac) < 2 {
		frac += "0"
	}
	return fmt.Sprintf("%s %d.%s", p.Currency, p.Amount/Scale, frac)
}

// Float is the amount in currency units, for metrics.
func (p Price) Float() float64 { return float64(p.Amount) / Scale }

// Within reports whether p can be paid under max (or is not more than a
// quote): the same currency, and no more.
func (p Price) Within(max Price) bool { return p.Currency == max.Currency && p.Amount <= max.Amount }

func upper(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 'A' || s[i] > 'Z' {
			return false
		}
	}
	return true
}

func digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
