package robots

import (
	"reflect"
	"testing"
)

func TestParseContentUsage(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []Pref
	}{
		{"train-ai=n", []Pref{{Name: "train-ai", Value: "n"}}},
		{" Train-AI = N , search=y", []Pref{{Name: "train-ai", Value: "n"}, {Name: "search", Value: "y"}}},
		{`train-ai="n";src=x, search=y;a=b`, []Pref{{Name: "train-ai", Value: "n"}, {Name: "search", Value: "y"}}},
		{"train-ai, =n, ,search=", []Pref{{Name: "search", Value: ""}}},
		{"", nil},
	} {
		if got := ParseContentUsage(tc.in); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ParseContentUsage(%q) = %+v, want %+v", tc.in, got, tc.want)
		}
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
