package robots

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// TestParseStatements: Content-Usage and Content-Signal statements are RFC
// 9651 dictionaries (draft-ietf-aipref-vocab-07 §6.5); the policy package's
// conformance tables judge with them.
func TestParseStatements(t *testing.T) {
	for _, tc := range []struct {
		name   string
		signal bool
		in     []string
		want   []Pref
		bad    bool
	}{
		{"one preference", false, []string{"train-ai=n"}, []Pref{{Name: "train-ai", Value: "n"}}, false},
		{"parameters ignored", false, []string{`train-ai=n;note="why", search=y;a=b`}, []Pref{{Name: "train-ai", Value: "n"}, {Name: "search", Value: "y"}}, false},
		{"last value wins", false, []string{"train-ai=n, train-ai=y"}, []Pref{{Name: "train-ai", Value: "y"}}, false},
		{"a string is not a token", false, []string{`train-ai="n"`}, nil, false},
		{"a boolean is not a token", false, []string{"train-ai"}, nil, false},
		{"upper case fails the parse", false, []string{"Train-AI=n"}, nil, true},
		{"lines are one dictionary", false, []string{"train-ai=n", "train-ai=y, search=n"}, []Pref{{Name: "train-ai", Value: "y"}, {Name: "search", Value: "n"}}, false},
		{"blank lines are skipped", false, []string{"", " train-ai=n "}, []Pref{{Name: "train-ai", Value: "n"}}, false},
		{"blank", false, []string{""}, nil, false},
		{"signal", true, []string{"search=yes, ai-train=no"}, []Pref{{Name: "search", Value: "yes"}, {Name: "ai-train", Value: "no"}}, false},
		{"signal, quoted and mixed case values", true, []string{`ai-train="No", search=YES`}, []Pref{{Name: "ai-train", Value: "no"}, {Name: "search", Value: "yes"}}, false},
		{"signal, last value wins", true, []string{"ai-train=no, ai-train=yes"}, []Pref{{Name: "ai-train", Value: "yes"}}, false},
		{"signal not a dictionary keeps its nos", true, []string{"AI-Train=No, search=yes, junk"}, []Pref{{Name: "ai-train", Value: "no"}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			parse := ParseContentUsage
			if tc.signal {
				parse = ParseContentSignal
			}
			got := parse(tc.in, 0)
			if !reflect.DeepEqual(got.Prefs, tc.want) || (got.Err != nil) != tc.bad {
				t.Errorf("%q = %+v (err %v), want %+v (error %v)", tc.in, got.Prefs, got.Err, tc.want, tc.bad)
			}
			if tc.bad && !errors.Is(got.Err, ErrNotDictionary) {
				t.Errorf("err %v does not wrap ErrNotDictionary", got.Err)
			}
		})
	}
}

func TestNamesAgent(t *testing.T) {
	for _, tc := range []struct {
		ua, token string
		want      bool
	}{
		{"FooBot", "foobot", true},
		{"Mozilla/5.0 (compatible; FooBot/2.1; +https://example.org)", "FooBot", true},
		{"Mozilla/5.0 (compatible; FooBot/2.1)", "FOOBOT", true},
		{"FooBotter/1.0", "FooBot", false}, // whole tokens only
		{"Foo-Bot/1.0", "Foo", false},
		{"BarBot/1.0", "FooBot", false},
		{"FooBot", "", false},
		{"FooBot/1.0", "FooBot/1.0", false}, // not a product token
		{"Foo Bot", "Foo Bot", false},
		{"", "FooBot", false},
	} {
		if got := NamesAgent(tc.ua, tc.token); got != tc.want {
			t.Errorf("NamesAgent(%q, %q) = %v, want %v", tc.ua, tc.token, got, tc.want)
		}
	}
}

func TestParseRobotsTagReadsAStructuredFieldList(t *testing.T) {
	for _, tc := range []struct {
		name  string
		lines []string
		want  []RobotsTagItem // nil with an error
	}{
		{"every agent and one", []string{"*;noai, ExampleBot;noindex;nosnippet"},
			[]RobotsTagItem{{"*", []string{"noai"}}, {"ExampleBot", []string{"noindex", "nosnippet"}}}},
		{"no rules", []string{"ExampleBot"}, []RobotsTagItem{{"ExampleBot", nil}}},
		{"lines are one list", []string{"*;noindex", "FooBot;noml"},
			[]RobotsTagItem{{"*", []string{"noindex"}}, {"FooBot", []string{"noml"}}}},
		{"a quoted product token", []string{`"FooBot";noai`}, []RobotsTagItem{{"FooBot", []string{"noai"}}}},
		{"false names no rule", []string{"*;noai=?0;noindex"}, []RobotsTagItem{{"*", []string{"noindex"}}}},
		{"a rule with a value", []string{"*;max-snippet=20;noai"}, []RobotsTagItem{{"*", []string{"max-snippet", "noai"}}}},
		{"a repeated rule counts once", []string{"*;noai;noai"}, []RobotsTagItem{{"*", []string{"noai"}}}},
		{"empty", []string{""}, []RobotsTagItem{}},

		{"upper-case rule", []string{"*;NoAI"}, nil},
		{"; with no rule after it", []string{"*;noindex, ExampleBot;"}, nil},
		{"X-Robots-Tag syntax", []string{"FooBot: noai"}, nil},
		{"inner list", []string{"(FooBot BarBot);noai"}, nil},
		{"a number", []string{"1;noai"}, nil},
		{"trailing comma", []string{"*;noai,"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseRobotsTag(tc.lines)
			if tc.want == nil {
				if !errors.Is(err, ErrRobotsTag) {
					t.Errorf("ParseRobotsTag(%q) = %+v, %v; want an error wrapping ErrRobotsTag", tc.lines, got, err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Errorf("ParseRobotsTag(%q) = %+v, %v; want %+v", tc.lines, got, err, tc.want)
			}
		})
	}
}

func TestParseRobotsTagBoundsTheValue(t *testing.T) {
	// 8 KiB: the least limit draft-illyes-repext allows a reader.
	if MaxRobotsTagBytes != 8192 {
		t.Errorf("MaxRobotsTagBytes = %d, want 8192", MaxRobotsTagBytes)
	}
	fits := strings.Repeat(" ", 8192-len("*;noai")) + "*;noai" // leading spaces are allowed
	if _, err := ParseRobotsTag([]string{fits}); err != nil {
		t.Errorf("a value of 8192 bytes: %v", err)
	}
	if _, err := ParseRobotsTag([]string{" " + fits}); !errors.Is(err, ErrRobotsTag) {
		t.Errorf("a value of 8193 bytes: %v, want an error", err)
	}
	// Two lines are joined with ", ": 4095 + 2 + 4095 bytes fit.
	half := strings.Repeat(" ", 4095-len("*;noai")) + "*;noai"
	if _, err := ParseRobotsTag([]string{half, half}); err != nil {
		t.Errorf("two lines of 8192 bytes joined: %v", err)
	}
	if _, err := ParseRobotsTag([]string{half + " ", half}); !errors.Is(err, ErrRobotsTag) {
		t.Errorf("two lines of 8193 bytes joined: %v, want an error", err)
	}
}

func TestRobotsTagRulesMergesEveryAgentsAndTheAgents(t *testing.T) {
	items, err := ParseRobotsTag([]string{"*;noindex, FooBot;noai;noindex, BarBot;noml, foobot;nosnippet"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		ua   string
		want []string
	}{
		{"Mozilla/5.0 (compatible; FooBot/2.1)", []string{"noindex", "noai", "nosnippet"}},
		{"BarBot/1.0", []string{"noindex", "noml"}},
		{"FooBotter/1.0", []string{"noindex"}},
		{"", []string{"noindex"}},
	} {
		if got := RobotsTagRules(items, tc.ua); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("RobotsTagRules(%q) = %q, want %q", tc.ua, got, tc.want)
		}
	}
}
