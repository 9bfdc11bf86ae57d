package policy

import (
	"testing"

	"github.com/robotsgate/robotsgate/rsl"
)

// TestRSLUsageTable: each purpose is the RSL usage docs/decisions.md
// says, and a licence's values cover it as the table says.
func TestRSLUsageTable(t *testing.T) {
	tests := []struct {
		purpose, usage string
		coveredBy      []string
		notCoveredBy   []string
	}{
		{"train-ai", "ai-train", []string{"ai-train", "ai-all", "all"}, []string{"search", "ai-input", "ai-index"}},
		{"train-genai", "ai-train", []string{"ai-train", "ai-all", "all"}, []string{"search"}},
		{"ai-train", "ai-train", []string{"ai-train", "ai-all", "all"}, []string{"search"}},
		{"tdm", "ai-train", []string{"ai-train", "ai-all", "all"}, []string{"search"}},
		{"ai-input", "ai-input", []string{"ai-input", "ai-all", "all"}, []string{"ai-train", "search"}},
		{"ai-use", "ai-input", []string{"ai-input", "ai-all", "all"}, []string{"ai-train"}},
		{"search", "search", []string{"search", "all"}, []string{"ai-all", "ai-train", "ai-input", "ai-index"}},
		{"ai-index", "ai-index", []string{"ai-index", "ai-all", "all"}, []string{"search"}},
		{"archive", "archive", []string{"archive", "all"}, []string{"ai-all", "search"}},
	}
	for _, tc := range tests {
		t.Run(tc.purpose, func(t *testing.T) {
			u := rslUsage(tc.purpose)
			if u != tc.usage {
				t.Fatalf("rslUsage(%q) = %q, want %q", tc.purpose, u, tc.usage)
			}
			for _, v := range tc.coveredBy {
				if !rsl.Covers([]string{v}, u) {
					t.Errorf("%q does not cover %s", v, tc.purpose)
				}
			}
			for _, v := range tc.notCoveredBy {
				if rsl.Covers([]string{v}, u) {
					t.Errorf("%q covers %s", v, tc.purpose)
				}
			}
		})
	}
	for _, p := range KnownPurposes {
		if _, ok := rslUsages[p]; !ok {
			t.Errorf("known purpose %s has no RSL usage", p)
		}
	}
}

// TestHasLicenseToken: only the License scheme with a token is a licence
// token.
func TestHasLicenseToken(t *testing.T) {
	tests := []struct {
		values []string
		want   bool
	}{
		{[]string{"License abc"}, true},
		{[]string{"license  abc "}, true},
		{[]string{"Basic dXNlcjpwdw==", "License t"}, true},
		{[]string{"License"}, false},
		{[]string{"License "}, false},
		{[]string{"Bearer abc"}, false},
		{[]string{"Licensed abc"}, false},
		{nil, false},
	}
	for _, tc := range tests {
		if got := HasLicenseToken(tc.values); got != tc.want {
			t.Errorf("HasLicenseToken(%q) = %v, want %v", tc.values, got, tc.want)
		}
	}
}
