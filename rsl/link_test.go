package rsl

import (
	"slices"
	"strings"
	"testing"
)

// TestLinkLicenses: only links with rel license and the RSL media type
// are licences; quoting, several values per field and several fields are
// read as RFC 8288 says, and at most MaxLicenses are returned.
func TestLinkLicenses(t *testing.T) {
	tests := []struct {
		name   string
		values []string
		want   []string
	}{
		{"one", []string{`<https://example.com/license.xml>; rel="license"; type="application/rsl+xml"`}, []string{"https://example.com/license.xml"}},
		{"relative, unquoted, case", []string{`</l.xml>;REL=License;Type=Application/RSL+XML`}, []string{"/l.xml"}},
		{"rel among others", []string{`</l.xml>; rel="alternate license"; type="application/rsl+xml"`}, []string{"/l.xml"}},
		{"another type", []string{`</cc.html>; rel="license"; type="text/html"`}, nil},
		{"no type", []string{`</cc.html>; rel="license"`}, nil},
		{"another rel", []string{`</l.xml>; rel="licensed"; type="application/rsl+xml"`}, nil},
		{"several in one value", []string{`</a.css>; rel=stylesheet, </l.xml>; rel="license"; type="application/rsl+xml", </b>; rel=next`}, []string{"/l.xml"}},
		{"comma and semicolon in a quoted string", []string{`</a>; title="x, y; rel=license; type=application/rsl+xml", </l.xml>; rel=license; type="application/rsl+xml"`}, []string{"/l.xml"}},
		{"several fields", []string{`</a.xml>; rel=license; type=application/rsl+xml`, `</b.xml>; rel=license; type=application/rsl+xml`}, []string{"/a.xml", "/b.xml"}},
		{"malformed skipped", []string{`junk; rel=license, <unclosed; rel=license`, `</l.xml>; rel=license; type=application/rsl+xml`}, []string{"/l.xml"}},
		{"empty reference", []string{`<>; rel=license; type=application/rsl+xml`}, nil},
		{"bounded", []string{strings.Repeat(`</l.xml>; rel=license; type=application/rsl+xml, `, MaxLicenses+4)}, slices.Repeat([]string{"/l.xml"}, MaxLicenses)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := LinkLicenses(tc.values); !slices.Equal(got, tc.want) {
				t.Fatalf("LinkLicenses = %q, want %q", got, tc.want)
			}
		})
	}
}

// FuzzLinkLicenses: LinkLicenses never panics, returns at most
// MaxLicenses references, none empty, and a licence link placed first is
// always found first, whatever follows it.
func FuzzLinkLicenses(f *testing.F) {
	f.Add(`</l.xml>; rel="license"; type="application/rsl+xml", </a>; rel=next`)
	f.Add(`<a>; title="\"x, y"; rel=license`)
	f.Add(`<`)
	f.Fuzz(func(t *testing.T, v string) {
		got := LinkLicenses([]string{v})
		if len(got) > MaxLicenses {
			t.Fatalf("%d licences", len(got))
		}
		for _, r := range got {
			if r == "" {
				t.Fatal("an empty reference")
			}
		}
		first := LinkLicenses([]string{`</first.xml>; rel=license; type="application/rsl+xml", ` + v})
		if len(first) == 0 || first[0] != "/first.xml" {
			t.Fatalf("the first licence is not found first: %q", first)
		}
	})
}
