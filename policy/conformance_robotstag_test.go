package policy

import (
	"strings"
	"testing"
)

// TestConformanceRobotsTag: the Robots-Tag and X-Robots-Tag header fields
// and robots meta tags, as draft-illyes-repext-03 (2026-04-18, an
// Internet-Draft: work in progress) says. The draft defines the rules
// noindex and nosnippet only (§3.1.3) and lets implementors support
// others: noai, noml and noimageai, which refuse the training purposes,
// are a convention sites write, not the draft's.
func TestConformanceRobotsTag(t *testing.T) {
	const rt, xrt = "Robots-Tag", "X-Robots-Tag"
	page := func(metas string) string {
		return "<!doctype html><html><head><title>t</title>" + metas + "</head><body>text</body></html>"
	}
	long := "*;noindex, " + strings.Repeat("OtherBot;noindex, ", 8<<10/18) + "*;noai"
	runConformance(t, []confCase{
		{name: "repext-03 §3.1.1 a List member * applies to every agent", header: []string{rt, "*;noai"}, want: UsageDenied, why: "(noai)"},
		{name: "repext-03 §3.1.1 a member naming the agent's product token applies", header: []string{rt, "ExampleBot;noml"}, want: UsageDenied, why: "(noml)"},
		{name: "repext-03 §3.1.1 a member naming another agent does not", header: []string{rt, "OtherBot;noai, *;noindex"}, want: Allow},
		{name: "repext-03 §3.1.1 the union of the rules of * and the agent's token", header: []string{rt, "ExampleBot;noindex, *;noai"}, want: UsageDenied, why: "(noai)"},
		{name: "repext-03 §3.1.1 a field's lines are one List (RFC 9651 §4.2)", header: []string{rt, "*;noindex", rt, "ExampleBot;noai"},
			want: UsageDenied, why: "(noai)"},
		{name: "repext-03 §3.1.1 a rule whose value is false names no rule", header: []string{rt, "*;noai=?0"}, want: Allow},
		{name: "repext-03 §3.1.3 rules ignore case: an upper-case rule, not an RFC 9651 key, still refuses", header: []string{rt, "*;NoAI"},
			want: UsageDenied, why: "NoAI"},
		{name: "robotsgate, more conservative than repext-03 §3.1.1: a field past 8 KiB is read whole for noai", header: []string{rt, long},
			want: UsageDenied, why: "noai"},
		{name: "repext-03 §3.1.1 X-Robots-Tag is read too", header: []string{xrt, "noindex, noai"}, want: UsageDenied, why: "(noai)"},
		{name: "repext-03 §3.1.1 X-Robots-Tag scoped to the agent", header: []string{xrt, "ExampleBot: noai"}, want: UsageDenied, why: "(noai)"},
		{name: "repext-03 §3.1.1 X-Robots-Tag scoped to another agent", header: []string{xrt, "OtherBot: noai"}, want: Allow},
		{name: "convention: noimageai refuses an image only, not a page", header: []string{xrt, "noimageai", "Content-Type", "text/plain"}, want: Allow},
		{name: "convention: noimageai refuses an image", header: []string{xrt, "noimageai", "Content-Type", "image/png"}, want: UsageDenied, why: "noimageai"},
		{name: "convention: noai leaves search alone", header: []string{rt, "*;noai"}, purposes: []string{"search"}, want: Allow},
		{name: "repext-03 §3.1.2 a robots meta tag applies to every agent", html: page(`<meta name="robots" content="noindex, noai">`),
			want: UsageDenied, why: `<meta name="robots"`},
		{name: "repext-03 §3.1.2 a meta tag named for the agent applies", html: page(`<meta name="examplebot" content="noml">`),
			want: UsageDenied, why: `<meta name="examplebot"`},
		{name: "repext-03 §3.1.2 a meta tag named for another agent does not", html: page(`<meta name="otherbot" content="noai">`), want: Allow},
		{name: "repext-03 §3.1.2 the union of every applicable tag", html: page(`<meta name="robots" content="noindex"><meta name="examplebot" content="noai">`),
			want: UsageDenied, why: "noai"},
		{name: "repext-03 §4 only the head's meta tags count", html: "<html><head></head><body><meta name=\"robots\" content=\"noai\"></body></html>", want: Allow},
		{name: "robotsgate: a head that does not end within the limit is unknown (usage.on_unknown: refuse)",
			html: "<html><head><script>" + strings.Repeat(" ", 64<<10) + "</script><meta name=\"robots\" content=\"noai\"></head></html>",
			want: UsageUnknown, why: "HTML head could not be read"},
		{name: "robotsgate: usage.on_unknown: allow lets an unreadable head through", unknownAllow: true,
			html: "<html><head><script>" + strings.Repeat(" ", 64<<10) + "</script></head></html>", want: Allow},
	})
}
