package auditlog

import (
	"encoding/json"
	"math"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/robotsgate/robotsgate/audit"
)

// appendRecord appends r as encoding/json's Marshal writes it, byte for
// byte, without reflection and without allocating: the audit log is
// written for every request, and Marshal cost about a third of a record's
// CPU (docs/benchmarks.md). The fields a decision rarely has (usage
// signals, a pause, a checkpoint) are encoded by encoding/json itself.
// TestAppendRecordIsMarshal and FuzzAppendRecord hold it to Marshal's
// output; a field added to audit.Record and not here fails them. The
// error is Marshal's, for what it cannot encode (a NaN, a year past
// 9999).
func appendRecord(b []byte, r *audit.Record) ([]byte, error) {
	for _, f := range [...]float64{r.WaitMS, r.SentMS, r.DurationMS, r.BackoffMS} {
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return marshalAppend(b, r)
		}
	}
	if y := r.Time.Year(); y < 0 || y > 9999 {
		return marshalAppend(b, r)
	}
	b = appendField(b, `{"prev_sha256":`, r.Prev)
	b = append(b, `,"time":`...)
	b = appendTime(b, r.Time)
	b = appendField(b, `,"client":`, r.Client)
	b = appendField(b, `,"user":`, r.User)
	b = appendField(b, `,"client_rule":`, r.ClientRule)
	b = appendField(b, `,"mode":`, r.Mode)
	b = appendField(b, `,"user_agent":`, r.UserAgent)
	b = appendField(b, `,"agent":`, r.Agent)
	b = appendField(b, `,"group":`, r.Group)
	b = appendField(b, `,"method":`, r.Method)
	b = appendField(b, `,"via":`, r.Via)
	b = appendField(b, `,"url":`, r.URL)
	b = appendField(b, `,"decision":`, r.Decision)
	b = strconv.AppendBool(append(b, `,"enforced":`...), r.Enforced)
	b = appendField(b, `,"rule":`, r.Rule)
	b = strconv.AppendInt(append(b, `,"line":`...), int64(r.Line), 10)
	b = appendField(b, `,"canonical":`, r.Canonical)
	b = appendField(b, `,"note":`, r.Note)
	b = appendField(b, `,"robots_status":`, r.RobotsStatus)
	b = appendField(b, `,"robots_url":`, r.RobotsURL)
	b = appendField(b, `,"robots_error":`, r.RobotsError)
	b = appendField(b, `,"robots_sha256":`, r.RobotsSHA256)
	b = strconv.AppendBool(append(b, `,"strict_paths":`...), r.StrictPaths)
	b = appendFloat(append(b, `,"wait_ms":`...), r.WaitMS)
	if r.SentMS != 0 {
		b = appendFloat(append(b, `,"sent_ms":`...), r.SentMS)
	}
	b = strconv.AppendInt(append(b, `,"upstream_status":`...), int64(r.UpstreamStatus), 10)
	b = strconv.AppendInt(append(b, `,"status":`...), int64(r.Status), 10)
	b = strconv.AppendInt(append(b, `,"bytes":`...), r.Bytes, 10)
	b = appendFloat(append(b, `,"duration_ms":`...), r.DurationMS)
	b = appendOptional(b, `,"crawler_price":`, r.CrawlerPrice)
	b = appendOptional(b, `,"crawler_charged":`, r.CrawlerCharged)
	if r.CrawlerOvercharged {
		b = append(b, `,"crawler_overcharged":true`...)
	}
	b = appendOptional(b, `,"crawler_error":`, r.CrawlerError)
	b = appendOptional(b, `,"tdmrep_status":`, r.TDMRepStatus)
	b = appendOptional(b, `,"tdmrep_error":`, r.TDMRepError)
	b = appendOptional(b, `,"tdmrep_sha256":`, r.TDMRepSHA256)
	if r.TDMEntry != nil {
		b = strconv.AppendInt(append(b, `,"tdm_entry":`...), int64(*r.TDMEntry), 10)
	}
	return appendRare(b, r)
}

// appendRare appends the fields after tdm_entry, which most records
// leave out, and closes the object.
func appendRare(b []byte, r *audit.Record) ([]byte, error) {
	var err error
	if len(r.Usage) > 0 {
		if b, err = appendJSON(append(b, `,"usage":`...), r.Usage); err != nil {
			return b, err
		}
	}
	if r.BackoffMS != 0 {
		b = appendFloat(append(b, `,"backoff_ms":`...), r.BackoffMS)
	}
	b = appendOptional(b, `,"backoff":`, r.Backoff)
	if r.Pause != nil {
		if b, err = appendJSON(append(b, `,"pause":`...), r.Pause); err != nil {
			return b, err
		}
	}
	if len(r.Truncated) > 0 {
		b = append(b, `,"truncated":[`...)
		for i, s := range r.Truncated {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, s)
		}
		b = append(b, ']')
	}
	if r.Checkpoint != nil {
		if b, err = appendJSON(append(b, `,"checkpoint":`...), r.Checkpoint); err != nil {
			return b, err
		}
	}
	return append(b, '}'), nil
}

// marshalAppend is the slow way, for what the fast one does not write.
func marshalAppend(b []byte, r *audit.Record) ([]byte, error) {
	return appendJSON(b, r)
}

func appendJSON(b []byte, v any) ([]byte, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return b, err
	}
	return append(b, data...), nil
}

func appendField(b []byte, key, s string) []byte {
	return appendString(append(b, key...), s)
}

// appendOptional appends key and s unless s is empty (omitempty).
func appendOptional(b []byte, key, s string) []byte {
	if s == "" {
		return b
	}
	return appendField(b, key, s)
}

// appendTime appends t as time.Time's MarshalJSON does (RFC 3339 with
// nanoseconds, quoted), for a year Marshal accepts.
func appendTime(b []byte, t time.Time) []byte {
	b = append(b, '"')
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b, '"')
}

// appendFloat appends f as encoding/json writes a float64: the shortest
// decimal that reads back as f, in exponent form below 1e-6 and from 1e21
// on, with the exponent's leading zero dropped (e-07 → e-7).
func appendFloat(b []byte, f float64) []byte {
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		n := len(b)
		if n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

const hexDigits = "0123456789abcdef"

// appendString appends s quoted as encoding/json writes a string: HTML's
// <, > and & escaped, control characters as \n, \t… or \u00XX, invalid
// UTF-8 as \ufffd, and U+2028 and U+2029 escaped (JavaScript reads them as
// line ends).
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if safeASCII(c) {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			b = appendEscapedByte(b, c)
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(append(b, s[start:i]...), `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(append(b, s[start:i]...), `\u202`...)
			b = append(b, hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// safeASCII reports whether encoding/json writes c as it is (with its HTML
// escaping on).
func safeASCII(c byte) bool {
	return c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
}

func appendEscapedByte(b []byte, c byte) []byte {
	switch c {
	case '\\', '"':
		return append(b, '\\', c)
	case '\b':
		return append(b, '\\', 'b')
	case '\f':
		return append(b, '\\', 'f')
	case '\n':
		return append(b, '\\', 'n')
	case '\r':
		return append(b, '\\', 'r')
	case '\t':
		return append(b, '\\', 't')
	}
	return append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
}
