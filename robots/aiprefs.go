package robots

import (
	"errors"
	"fmt"
	"strings"
	"unsafe"

	"github.com/dunglas/httpsfv"
)

// AI-usage statements: the value of a Content-Usage line (IETF aipref,
// draft-ietf-aipref-attach-05 §3) or Content-Signal line (Cloudflare's
// Content Signals) in robots.txt, and the same fields as response headers.
// Both are read as RFC 9651 Dictionaries, the way draft-ietf-aipref-vocab-07
// §6.5 ("Processing Algorithm") reads a statement of preference:
//
//   - the statement is parsed as a Dictionary (RFC 9651 §4.2.2): a key
//     given twice keeps its last value (§6.5.1), parameters are ignored
//     (§6.5.2), keys are case-sensitive (an upper-case key fails the parse);
//   - a Content-Usage value is a preference only when it is the Token y or
//     n (§6.2); any other value (a String "n", a Boolean, an Inner List)
//     leaves that category unknown;
//   - a Content-Usage statement that does not parse states no preference
//     at all (§6.5.1: "If the parsing of the Dictionary fails, preferences
//     are unknown").
//
// Content-Signal has no published grammar beyond "name=yes|no" pairs
// (contentsignals.org's policy text, known here through the copy quoted in
// google/robotstxt issue #80), so robotsgate reads it with the same
// Dictionary rules and two conservative differences: yes and no are
// compared ignoring ASCII case and may be Tokens or Strings, and a
// statement that does not parse is still read, leniently, for the
// purposes it names with "no" (as an unparsable Robots-Tag still refuses
// on noai): a refusal a site wrote is not dropped for a syntax error.

// Statement is one statement of AI-usage preferences.
type Statement struct {
	// Text is the statement as written: a Content-Usage line's value after
	// its path, a Content-Signal line's value, or a header field's lines
	// joined with ", ".
	Text string
	// Line is its robots.txt line; 0 for a header field.
	Line int
	// Prefs are the preferences it states, one per key (its last value),
	// in the order the keys first appear: for Content-Usage only the
	// values y and n, for Content-Signal yes and no (lower case).
	Prefs []Pref
	// Err says why Text is not an RFC 9651 Dictionary; nil when it is. A
	// Content-Usage statement that does not parse has no Prefs; a
	// Content-Signal one has a "no" Pref for each name=no it mentions.
	Err error
}

// ErrNotDictionary is wrapped by a Statement's Err.
var ErrNotDictionary = errors.New("not an RFC 9651 dictionary")

// ParseContentUsage reads a Content-Usage statement: the field lines of a
// response header (joined as RFC 9651 §4.2 joins them; blank lines are
// skipped), or the value of one robots.txt line after its path, with its
// line number (0 for a header).
func ParseContentUsage(lines []string, line int) Statement {
	s, dict := parseStatement(lines, line)
	if dict == nil {
		return s
	}
	for _, name := range dict.Names() {
		m, _ := dict.Get(name)
		if it, ok := m.(httpsfv.Item); ok {
			if tok, ok := it.Value.(httpsfv.Token); ok && (tok == "y" || tok == "n") {
				s.Prefs = append(s.Prefs, Pref{Name: name, Value: string(tok), Line: line})
			}
		}
	}
	return s
}

// ParseContentSignal reads a Content-Signal statement, as
// ParseContentUsage reads a Content-Usage one, with the differences the
// comment above lists.
func ParseContentSignal(lines []string, line int) Statement {
	s, dict := parseStatement(lines, line)
	if dict == nil {
		if s.Err != nil {
			s.Prefs = lenientNos(s.Text, line)
		}
		return s
	}
	for _, name := range dict.Names() {
		m, _ := dict.Get(name)
		it, ok := m.(httpsfv.Item)
		if !ok {
			continue
		}
		var v string
		switch x := it.Value.(type) {
		case httpsfv.Token:
			v = string(x)
		case string:
			v = x
		}
		if v = strings.ToLower(v); v == "yes" || v == "no" {
			s.Prefs = append(s.Prefs, Pref{Name: name, Value: v, Line: line})
		}
	}
	return s
}

// parseStatement parses lines as one Dictionary; dict is nil when they are
// blank (no statement, Err nil) or do not parse (Err says why).
func parseStatement(lines []string, line int) (Statement, *httpsfv.Dictionary) {
	var kept []string
	for _, l := range lines {
		if l = strings.TrimSpace(l); l != "" {
			kept = append(kept, l)
		}
	}
	s := Statement{Text: strings.Join(kept, ", "), Line: line}
	if len(kept) == 0 {
		return s, nil
	}
	dict, err := httpsfv.UnmarshalDictionary(kept)
	if err != nil {
		s.Err = fmt.Errorf("%w: %v", ErrNotDictionary, err)
		return s, nil
	}
	return s, dict
}

// lenientNos reads a statement that is not a Dictionary for the names it
// gives the value no: comma-separated name=value items, parameters and
// quotes dropped, compared ignoring ASCII case.
func lenientNos(text string, line int) []Pref {
	var out []Pref
	for item := range strings.SplitSeq(text, ",") {
		item, _, _ = strings.Cut(item, ";")
		name, value, ok := strings.Cut(item, "=")
		name = strings.ToLower(strings.TrimSpace(name))
		value = strings.Trim(strings.TrimSpace(value), `"`)
		if ok && name != "" && strings.EqualFold(value, "no") {
			out = append(out, Pref{Name: name, Value: "no", Line: line})
		}
	}
	return out
}

// size is what s retains beyond its own struct (for File.Size): its text,
// its preferences and its error.
func (s *Statement) size() int64 {
	n := int64(len(s.Text)) + int64(cap(s.Prefs))*int64(unsafe.Sizeof(Pref{}))
	for _, p := range s.Prefs {
		n += int64(len(p.Name) + len(p.Value))
	}
	if s.Err != nil {
		n += 64 + int64(len(s.Err.Error()))
	}
	return n
}
