package audit

import "unicode/utf8"

// Limits of what a record quotes of what clients and origins sent, so
// that one request cannot make a line too long to read back (the readers
// take lines of up to 1 MiB): a 600 KB User-Agent would otherwise be
// written twice.
const (
	// MaxField bounds every text field a client or an origin controls.
	MaxField = 8 << 10
	// MaxURL bounds the URL, which the proxy accepts up to its 1 MiB
	// request head: the first 64 KiB are kept.
	MaxURL = 64 << 10
	// MaxUsage bounds the AI-usage signals listed (one per header line or
	// meta tag of a response).
	MaxUsage = 64
)

// Cap cuts the fields of r that a client or an origin controls to their
// limits, at a UTF-8 boundary, and lists the names of those it cut in
// Truncated: a record that cannot be replayed whole says so.
func (r *Record) Cap() {
	for _, f := range []struct {
		name string
		v    *string
		max  int
	}{
		{"url", &r.URL, MaxURL},
		{"method", &r.Method, MaxField},
		{"user_agent", &r.UserAgent, MaxField},
		{"agent", &r.Agent, MaxField},
		{"group", &r.Group, MaxField},
		{"rule", &r.Rule, MaxField},
		{"canonical", &r.Canonical, MaxURL},
		{"note", &r.Note, MaxField},
		{"robots_url", &r.RobotsURL, MaxField},
		{"robots_error", &r.RobotsError, MaxField},
		{"tdmrep_error", &r.TDMRepError, MaxField},
		{"backoff", &r.Backoff, MaxField},
		{"crawler_error", &r.CrawlerError, MaxField},
	} {
		if len(*f.v) > f.max {
			*f.v = cut(*f.v, f.max)
			r.Truncated = append(r.Truncated, f.name)
		}
	}
	if len(r.Usage) > MaxUsage {
		r.Usage = r.Usage[:MaxUsage]
		r.Truncated = append(r.Truncated, "usage")
	}
}

// cut returns the longest prefix of s of at most n bytes that does not
// split a UTF-8 sequence.
func cut(s string, n int) string {
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
