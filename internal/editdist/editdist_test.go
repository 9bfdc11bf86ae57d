package editdist

import "testing"

func TestDistance(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"abc", "", 3}, {"", "ab", 2}, {"allow", "allow", 0},
		{"alow", "allow", 1}, {"dissalow", "disallow", 2}, {"disalolw", "disallow", 1},
		{"useragnet", "useragent", 1}, {"sitemap", "site-map", 1}, {"kitten", "sitting", 3},
	} {
		if got := Distance(tt.a, tt.b); got != tt.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}
