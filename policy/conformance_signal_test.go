package policy

import "testing"

// TestConformanceContentSignal: Cloudflare's Content Signals, the
// Content-Signal robots.txt line and header field. The policy text of
// contentsignals.org is known here only through the copy quoted in
// google/robotstxt issue #80 (second-hand): clauses (a) "yes" grants, (b)
// "no" restricts, (c) no signal neither grants nor restricts, and the
// three signals search, ai-input and ai-train. It defines no grammar
// beyond "name=yes|no" lists: reading the value as an RFC 9651 Dictionary
// is robotsgate's, as are the cases marked so.
func TestConformanceContentSignal(t *testing.T) {
	robots := func(lines string) string { return "User-agent: *\nAllow: /\n" + lines }
	const cs = "Content-Signal"
	runConformance(t, []confCase{
		{name: "contentsignals.org (b) ai-train=no in robots.txt refuses ai-train (2nd-hand)", robots: robots("Content-Signal: search=yes, ai-train=no\n"),
			want: UsageDenied, why: "ai-train=no (line 3)"},
		{name: "contentsignals.org (b) ai-train=no in a header refuses ai-train (2nd-hand)", header: []string{cs, "search=yes, ai-train=no"},
			want: UsageDenied, why: "(ai-train=no)"},
		{name: "contentsignals.org (a) ai-train=yes grants (2nd-hand)", robots: robots("Content-Signal: ai-train=yes\n"), want: Allow},
		{name: "contentsignals.org (c) no ai-train signal neither grants nor restricts (2nd-hand)", robots: robots("Content-Signal: search=no\n"), want: Allow},
		{name: "contentsignals.org search=no refuses search (2nd-hand)", robots: robots("Content-Signal: search=no\n"), purposes: []string{"search"},
			want: UsageDenied, why: "search=no"},
		{name: "contentsignals.org ai-input=no refuses ai-input, not ai-train (2nd-hand)", header: []string{cs, "ai-input=no"},
			purposes: []string{"ai-input"}, want: UsageDenied, why: "ai-input=no"},
		{name: "contentsignals.org ai-input=no leaves ai-train alone (2nd-hand)", header: []string{cs, "ai-input=no"}, want: Allow},
		{name: "robotsgate RFC 9651 reading: the last value of a key wins", header: []string{cs, "ai-train=no, ai-train=yes"}, want: Allow},
		{name: "robotsgate RFC 9651 reading: parameters are ignored", header: []string{cs, "ai-train=no;why=x"}, want: UsageDenied, why: "ai-train=no"},
		{name: "robotsgate RFC 9651 reading: a field's lines are one dictionary", header: []string{cs, "ai-train=yes", cs, "ai-train=no"},
			want: UsageDenied, why: "ai-train=no"},
		{name: "robotsgate, conservative: an unparsable statement naming a purpose with no still refuses (robots.txt)", robots: robots("Content-Signal: AI-Train=No\n"),
			want: UsageDenied, why: "ai-train=no"},
		{name: "robotsgate, conservative: an unparsable statement naming a purpose with no still refuses (header)", header: []string{cs, "Search=Yes, AI-Train=No"},
			want: UsageDenied, why: "ai-train=no"},
		{name: "robotsgate: an unparsable statement without no refuses nothing", header: []string{cs, "AI-Train=Yes"}, want: Allow},
		{name: "robotsgate, conservative: yes and no ignore case and may be Strings", header: []string{cs, `ai-train="No"`}, want: UsageDenied, why: "ai-train=no"},
		{name: "robotsgate, conservative: use=no, which no published text defines, refuses every purpose", header: []string{cs, "use=no"},
			purposes: []string{"search"}, want: UsageDenied, why: "use=no"},
		{name: "robotsgate: aipref's n is not Content-Signal's no", header: []string{cs, "ai-train=n"}, want: Allow},
		{name: "robotsgate, conservative: a line in any group applies (the file's lines are read together)",
			robots: "User-agent: OtherBot\nContent-Signal: ai-train=no\n\nUser-agent: *\nAllow: /\n", want: UsageDenied, why: "ai-train=no"},
	})
}
