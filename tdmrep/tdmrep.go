// Package tdmrep reads the site-wide file of the W3C TDM Reservation
// Protocol (TDMRep Community Group final report, 2024): an origin's
// /.well-known/tdmrep.json, in which a rightsholder reserves (or not) the
// text-and-data-mining rights on sets of its paths. It parses and matches
// only; fetching and caching are the caller's.
//
// The file is a JSON array of rules, each an object:
//
//	[
//	  {"location": "/public/*", "tdm-reservation": 0},
//	  {"location": "/", "tdm-reservation": 1, "tdm-policy": "https://example.com/tdm-policy.json"}
//	]
//
// location is a path pattern with robots.txt's special characters ('*' any
// run of characters, a final '$' the end of the path); tdm-reservation is 1
// (rights reserved) or 0 (not reserved); tdm-policy, optional, is the URL
// of the rightsholder's licensing policy. Unlike robots.txt, where the
// longest pattern wins, the report says "the most specific match is the
// first in sequence": the first rule whose location matches applies, and
// a target no rule matches has no reservation.
//
// Parse is lenient where the report allows it and strict on types:
//
//   - a body that is not a JSON array (an HTML error page served with 200,
//     say) is no file: no rules, and Err says why;
//   - an element that is not an object, or whose location is missing, empty
//     or not a string, is no rule (it is skipped, and Problems says so);
//   - a tdm-reservation that is not the number 0 or 1 (a string "1", true,
//     2, or none) is a protocol error, which the report says to read as
//     "unset": the rule still matches, in its place, but reserves nothing;
//   - a tdm-policy that is not a string is ignored;
//   - member names are matched ignoring case ("Location"), a location
//     without a leading '/' gets one ("images/" is "/images/"), a byte
//     order mark is skipped, and only the first MaxFileSize bytes are read
//     (the rules complete before the cut are kept: Truncated).
//
// Locations and targets are compared in their canonical form
// (robots.CanonicalTarget: %XX escapes of unreserved characters decoded,
// as the report requires, other escapes upper-cased, non-ASCII octets
// %-encoded, and dot segments and repeated slashes resolved as origins do),
// case-sensitively; a '$' or '*' of the target is compared as %24 or %2A,
// the form in which the report has a location name them literally. Matching is linear in the path per rule and bounded as
// a whole by MaxMatchWork, so no file can make a target costly to judge.
package tdmrep

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unsafe"

	"github.com/robotsgate/robotsgate/robots"
)

// Path is where an origin serves its tdmrep.json.
const Path = "/.well-known/tdmrep.json"

// MaxFileSize is how much of a body Parse reads: robots.txt's 500 KiB.
const MaxFileSize = robots.MaxFileSize

// MaxMatchWork bounds the octets of the path that the wildcard searches of
// one Match may examine between them, as robots.MaxMatchWork does for a
// robots.txt decision: beyond it the target is judged TooCostly.
const MaxMatchWork = robots.MaxMatchWork

// maxProblems bounds File.Problems; maxQuoted the location, policy and
// value quoted in messages.
const (
	maxProblems = 20
	maxQuoted   = 256
)

// Reservation is a rule's tdm-reservation.
type Reservation uint8

// Reservations. Unset is the zero value.
const (
	// Unset: no valid tdm-reservation (missing, or a protocol error): the
	// rule declares nothing.
	Unset Reservation = iota
	// NotReserved: tdm-reservation 0, TDM rights are not reserved.
	NotReserved
	// Reserved: tdm-reservation 1, TDM rights are reserved (the "opt-out"
	// of the EU DSM Directive, art. 4).
	Reserved
)

// String returns "1", "0" or "unset".
func (r Reservation) String() string {
	switch r {
	case Reserved:
		return "1"
	case NotReserved:
		return "0"
	}
	return "unset"
}

// Entry is one rule of a tdmrep.json.
type Entry struct {
	// Index is the rule's position in the file's array, from 0 (skipped
	// elements count).
	Index int
	// Location is the pattern as the file wrote it.
	Location string
	// Reservation is its tdm-reservation.
	Reservation Reservation
	// Policy is its tdm-policy as the file wrote it (surrounding white
	// space removed), "" when absent or not a string.
	Policy string
	// pattern is Location as matched: with a leading '/', canonical.
	pattern string
}

// String names the rule: `tdmrep.json[1] (location "/private/*")`. A long
// location is cut short.
func (e *Entry) String() string {
	return fmt.Sprintf("tdmrep.json[%d] (location %s)", e.Index, Quote(e.Location))
}

// Quote quotes s as Go does (control and invalid characters escaped), cut
// to its first 256 bytes: a file's text safe to put in a message, a log
// line or a header field.
func Quote(s string) string {
	if len(s) > maxQuoted {
		s = strings.ToValidUTF8(s[:maxQuoted], "") + "…"
	}
	return strconv.Quote(s)
}

// File is a parsed tdmrep.json.
type File struct {
	// Entries are the rules, in file order.
	Entries []Entry
	// Err says why the body is not (all) a valid tdmrep.json: not JSON,
	// not an array, or where reading stopped (the entries before stand).
	// Nil for a valid file.
	Err error
	// Problems says which elements were skipped, or read as unset, and
	// why ("tdmrep.json[2]: tdm-reservation "1" is not the number 0 or
	// 1: unset"); at most the first 20, and a last one counting the rest.
	Problems []string
	// Truncated reports that the body was longer than MaxFileSize and only
	// its first MaxFileSize bytes were read.
	Truncated bool

	problems int
}

// Size returns the bytes f retains on the heap: the File, its entries and
// their strings, its problems. Caches bound themselves by it.
func (f *File) Size() int64 {
	if f == nil {
		return 0
	}
	n := int64(unsafe.Sizeof(*f)) + int64(cap(f.Entries))*int64(unsafe.Sizeof(Entry{})) + int64(cap(f.Problems))*16
	for i := range f.Entries {
		e := &f.Entries[i]
		n += int64(len(e.Location) + len(e.Policy) + len(e.pattern))
	}
	for _, p := range f.Problems {
		n += int64(len(p))
	}
	if f.Err != nil {
		n += int64(len(f.Err.Error()))
	}
	return n
}

// Parse reads a tdmrep.json body (see the package documentation for what
// it accepts). It never fails: a body that is not a tdmrep.json gives a
// File without entries whose Err says why.
func Parse(body []byte) *File {
	f := &File{}
	if len(body) > MaxFileSize {
		body, f.Truncated = body[:MaxFileSize], true
	}
	body = bytes.TrimPrefix(body, []byte("\xef\xbb\xbf"))
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	tok, err := dec.Token()
	switch {
	case err != nil:
		f.Err = fmt.Errorf("not JSON: %w", cleanJSONError(err))
		return f
	case tok != json.Delim('['):
		f.Err = errors.New("not a JSON array (a tdmrep.json is [ {\"location\": ..., \"tdm-reservation\": ...}, ... ])")
		return f
	}
	for i := 0; dec.More(); i++ {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			f.Err = fmt.Errorf("tdmrep.json[%d]: %w (the %d rules before it stand)", i, cleanJSONError(err), len(f.Entries))
			f.finishProblems()
			return f
		}
		f.add(i, raw)
	}
	if _, err := dec.Token(); err != nil {
		f.Err = fmt.Errorf("after the last rule: %w", cleanJSONError(err))
	}
	f.finishProblems()
	return f
}

// cleanJSONError turns the decoder's end of input into a plain message.
func cleanJSONError(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return errors.New("unexpected end of the file")
	}
	return err
}

// rawEntry is an element as decoded: each member kept raw, so that its
// type is checked here and not coerced.
type rawEntry struct {
	Location    json.RawMessage `json:"location"`
	Reservation json.RawMessage `json:"tdm-reservation"`
	Policy      json.RawMessage `json:"tdm-policy"`
}

// add reads element i of the array.
func (f *File) add(i int, raw json.RawMessage) {
	var r rawEntry
	if raw[0] != '{' || json.Unmarshal(raw, &r) != nil {
		f.problem(i, "not an object: skipped")
		return
	}
	loc, ok := jsonString(r.Location)
	switch {
	case r.Location == nil || isNull(r.Location):
		f.problem(i, "no location: skipped")
		return
	case !ok:
		f.problem(i, "location "+Quote(string(r.Location))+" is not a string: skipped")
		return
	case strings.TrimSpace(loc) == "":
		f.problem(i, "empty location: skipped")
		return
	}
	e := Entry{Index: i, Location: loc, pattern: canonicalPattern(strings.TrimSpace(loc))}
	switch {
	case r.Reservation == nil || isNull(r.Reservation):
		f.problem(i, "no tdm-reservation: unset")
	default:
		if n, ok := jsonNumber(r.Reservation); ok && (n == 0 || n == 1) {
			e.Reservation = NotReserved + Reservation(n)
		} else {
			f.problem(i, "tdm-reservation "+Quote(string(r.Reservation))+" is not the number 0 or 1: unset")
		}
	}
	if r.Policy != nil && !isNull(r.Policy) {
		if p, ok := jsonString(r.Policy); ok {
			e.Policy = strings.TrimSpace(p)
		} else {
			f.problem(i, "tdm-policy "+Quote(string(r.Policy))+" is not a string: ignored")
		}
	}
	f.Entries = append(f.Entries, e)
}

func (f *File) problem(i int, msg string) {
	if f.problems < maxProblems {
		f.Problems = append(f.Problems, fmt.Sprintf("tdmrep.json[%d]: %s", i, msg))
	}
	f.problems++
}

func (f *File) finishProblems() {
	if n := f.problems - maxProblems; n > 0 {
		f.Problems = append(f.Problems, fmt.Sprintf("and %d more", n))
	}
}

func isNull(raw json.RawMessage) bool { return string(raw) == "null" }

// jsonString decodes raw when it is a JSON string.
func jsonString(raw json.RawMessage) (string, bool) {
	var s string
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// jsonNumber decodes raw when it is a JSON number with an integer value
// that fits an int8 (0, 1, 1.0, 1e0 all qualify).
func jsonNumber(raw json.RawMessage) (int8, bool) {
	if len(raw) == 0 || !(raw[0] == '-' || '0' <= raw[0] && raw[0] <= '9') {
		return 0, false
	}
	v, err := strconv.ParseFloat(string(raw), 64)
	if err != nil || v != float64(int8(v)) {
		return 0, false
	}
	return int8(v), true
}

// canonicalPattern is a location as matched: a leading '/' added when it
// has none (a '*' pattern keeps its own start), then robots.CanonicalPattern.
func canonicalPattern(loc string) string {
	if loc[0] != '/' && loc[0] != '*' {
		loc = "/" + loc
	}
	return robots.CanonicalPattern(loc)
}

// Match is what a file says about one target.
type Match struct {
	// Entry is the first rule whose location matches the target; nil when
	// none does (no reservation) or the target was TooCostly.
	Entry *Entry
	// TooCostly reports that the locations would have needed more than
	// MaxMatchWork octets of comparisons for this target, which only a
	// file built to exhaust its reader needs: no rule is named and the
	// target counts as reserved, conservatively.
	TooCostly bool
}

// Reserved reports whether TDM rights on the target are reserved: its
// first matching rule says tdm-reservation 1, or the target was TooCostly.
func (m Match) Reserved() bool {
	return m.TooCostly || m.Entry != nil && m.Entry.Reservation == Reserved
}

// Match returns the first rule whose location matches target, a
// request-target as sent (path[;params][?query]; "" is "/", a fragment is
// ignored). A nil File matches nothing.
func (f *File) Match(target string) Match {
	if f == nil || len(f.Entries) == 0 {
		return Match{}
	}
	target = robots.MatchTarget(target)
	work := 0
	for i := range f.Entries {
		e := &f.Entries[i]
		if robots.MatchPattern(e.pattern, target, &work) {
			return Match{Entry: e}
		}
		if work > MaxMatchWork {
			return Match{TooCostly: true}
		}
	}
	return Match{}
}
