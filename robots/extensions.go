package robots

import (
	"bytes"
	"math"
	"strconv"
	"time"
)

// groupExtension records a per-group line that is not part of RFC 9309.
// Outside any group such lines mean nothing and are dropped.
func (b *builder) groupExtension(num uint32, kind keyKind, value []byte) {
	if len(b.runs) == 0 {
		return
	}
	r := &b.runs[len(b.runs)-1]
	switch kind {
	case keyCrawlDelay:
		if d, ok := parseCrawlDelay(value); ok {
			r.crawlDelay = max(r.crawlDelay, toDelay(d))
		}
	case keyRequestRate:
		if d, ok := parseRequestRate(value); ok {
			r.requestInterval = max(r.requestInterval, toDelay(d))
		}
	case keyVisitTime:
		if start, end, ok := parseVisitTime(value); ok {
			b.visits = append(b.visits, visitRule{run: uint32(len(b.runs) - 1), line: num, start: start, end: end})
		}
	case keyContentUsage:
		if u, ok := parseContentUsage(value, num); ok {
			u.run = uint32(len(b.runs) - 1)
			b.usage = append(b.usage, u)
		}
	}
}

// parseCrawlDelay reads "crawl-delay: 2.5" (seconds, decimals allowed; text
// after the first word is ignored).
func parseCrawlDelay(v []byte) (time.Duration, bool) {
	secs, err := strconv.ParseFloat(string(firstWord(v)), 64)
	if err != nil || math.IsNaN(secs) || secs < 0 {
		return 0, false
	}
	return secondsToDuration(secs), true
}

func secondsToDuration(secs float64) time.Duration {
	if secs >= MaxDelay.Seconds() {
		return MaxDelay
	}
	return time.Duration(secs * float64(time.Second))
}

// parseRequestRate reads "request-rate: n/T" where T is seconds, optionally
// with a unit s, m or h ("1/5", "1/10s", "30/1m"), and returns T/n. A time
// window after the rate ("1/5s 0800-1700") is ignored.
func parseRequestRate(v []byte) (time.Duration, bool) {
	num, period, ok := bytes.Cut(firstWord(v), []byte("/"))
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseFloat(string(num), 64)
	if err != nil || !(n > 0) || math.IsInf(n, 0) {
		return 0, false
	}
	unit := time.Second
	if len(period) > 0 {
		switch lowerASCII(period[len(period)-1]) {
		case 's':
			period = period[:len(period)-1]
		case 'm':
			unit, period = time.Minute, period[:len(period)-1]
		case 'h':
			unit, period = time.Hour, period[:len(period)-1]
		}
	}
	t, err := strconv.ParseFloat(string(period), 64)
	if err != nil || math.IsNaN(t) || t < 0 {
		return 0, false
	}
	return secondsToDuration(t * unit.Seconds() / n), true
}

func firstWord(v []byte) []byte {
	if i := bytes.IndexAny(v, " \t"); i >= 0 {
		return v[:i]
	}
	return v
}

// parseContentUsage reads "content-usage: [path ]train-ai=n, search=y"
// (draft-ietf-aipref-attach-05 §3.2). Without a path the line applies to
// the whole site ("/"). The attach draft starts a path only with "/";
// robotsgate also reads a value starting with "*" as a path pattern
// ("*.pdf train-ai=n"), which the draft would read as a statement that
// does not parse (no preference): the reading that refuses more.
func parseContentUsage(v []byte, num uint32) (usageRule, bool) {
	pattern := []byte("/")
	if len(v) > 0 && (v[0] == '/' || v[0] == '*') {
		word := firstWord(v)
		pattern = appendEscaped(nil, word)
		v = trimSpace(v[len(word):])
	}
	if len(v) == 0 {
		return usageRule{}, false
	}
	return usageRule{pattern: string(pattern), stmt: ParseContentUsage([]string{string(v)}, int(num))}, true
}
