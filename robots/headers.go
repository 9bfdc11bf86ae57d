package robots

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/dunglas/httpsfv"
)

// The agent names and Robots-Tag rules that reach robotsgate outside a
// robots.txt file (in HTTP response headers and HTML meta tags) are read
// with robots.txt's own rules, so that they mean the same thing wherever a
// site states them. (AI-usage statements: aiprefs.go.)

// NamesAgent reports whether token, an agent name as a site writes it
// ("FooBot" in "X-Robots-Tag: FooBot: noai" or <meta name="FooBot">),
// names the agent userAgent (a User-Agent header or a fixed product
// token) by the rules GroupForUserAgent applies to user-agent lines: token
// must be a product token ([A-Za-z_-]+), and one of the runs of [A-Za-z_-]
// in userAgent must equal it, ignoring ASCII case ("Mozilla/5.0
// (compatible; FooBot/2.1)" is named by "foobot").
func NamesAgent(userAgent, token string) bool {
	if token == "" || tokenLen(token) != len(token) {
		return false
	}
	for i := 0; i < len(userAgent); {
		if !isTokenChar(userAgent[i]) {
			i++
			continue
		}
		start := i
		for i < len(userAgent) && isTokenChar(userAgent[i]) {
			i++
		}
		if i-start == len(token) && strings.EqualFold(userAgent[start:i], token) {
			return true
		}
	}
	return false
}

// MaxRobotsTagBytes bounds the Robots-Tag field value ParseRobotsTag reads
// (its field lines joined): draft-illyes-repext asks a reader to limit it,
// to no less than 8 KiB. A longer value is an error.
const MaxRobotsTagBytes = 8 << 10

// RobotsTagItem is one member of a Robots-Tag field: a product token
// ("ExampleBot", or "*" for every agent) and the rules its parameters name,
// in lower case, in order ("noindex", "noai"). A parameter whose value is
// the Boolean false (";noai=?0") names no rule.
type RobotsTagItem struct {
	Agent string
	Rules []string
}

// ErrRobotsTag is the error ParseRobotsTag wraps when a value is not a
// Robots-Tag field.
var ErrRobotsTag = errors.New("not a Robots-Tag field")

// ParseRobotsTag reads the field lines of a Robots-Tag response header
// (draft-illyes-repext: an RFC 9651 structured-field List whose members
// are Items, each a product token or "*" with the rules as Parameters:
// "*;noai, ExampleBot;noindex;nosnippet"). The lines are one List, joined
// as RFC 9651 joins them. Anything else is an error wrapping ErrRobotsTag,
// and what it says is unknown: a value that is not a List (";" with no
// rule after it, an upper-case rule), an inner list, a member that is not
// a token or string, a value longer than MaxRobotsTagBytes.
func ParseRobotsTag(lines []string) ([]RobotsTagItem, error) {
	n := 0
	for _, l := range lines {
		n += len(l) + 2
	}
	if n > MaxRobotsTagBytes+2 {
		return nil, fmt.Errorf("%w: longer than %d bytes", ErrRobotsTag, MaxRobotsTagBytes)
	}
	list, err := httpsfv.UnmarshalList(lines)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrRobotsTag, err)
	}
	out := make([]RobotsTagItem, 0, len(list))
	for _, m := range list {
		item, ok := m.(httpsfv.Item)
		if !ok {
			return nil, fmt.Errorf("%w: an inner list is not a product token", ErrRobotsTag)
		}
		var agent string
		switch v := item.Value.(type) {
		case httpsfv.Token:
			agent = string(v)
		case string:
			agent = v
		default:
			return nil, fmt.Errorf("%w: member %v is not a product token", ErrRobotsTag, item.Value)
		}
		it := RobotsTagItem{Agent: agent}
		for _, name := range item.Params.Names() {
			if v, _ := item.Params.Get(name); v != false {
				it.Rules = append(it.Rules, name)
			}
		}
		out = append(out, it)
	}
	return out, nil
}

// RobotsTagRules returns the rules a parsed Robots-Tag field sets for the
// agent userAgent: those of every "*" member and of every member whose
// product token names it (NamesAgent), merged in order without
// duplicates, as the draft has a reader merge them.
func RobotsTagRules(items []RobotsTagItem, userAgent string) []string {
	var out []string
	for _, it := range items {
		if it.Agent != "*" && !NamesAgent(userAgent, it.Agent) {
			continue
		}
		for _, r := range it.Rules {
			if !slices.Contains(out, r) {
				out = append(out, r)
			}
		}
	}
	return out
}
