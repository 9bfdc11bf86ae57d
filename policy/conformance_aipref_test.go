package policy

import "testing"

// TestConformanceAIPref: IETF aipref, the Content-Usage robots.txt rule and
// header field, as draft-ietf-aipref-attach-05 ("attach-05") and
// draft-ietf-aipref-vocab-07 ("vocab-07"), the editor's copies of
// 2026-08-19, say. Both are Internet-Drafts: work in progress.
func TestConformanceAIPref(t *testing.T) {
	robots := func(lines string) string { return "User-agent: *\nAllow: /\n" + lines }
	const cu = "Content-Usage"
	runConformance(t, []confCase{
		// The statement (vocab-07 §6, §6.5).
		{name: "vocab-07 §6.5 train-ai=n in robots.txt refuses train-ai", robots: robots("Content-Usage: train-ai=n\n"),
			want: UsageDenied, why: "train-ai=n (line 3)"},
		{name: "vocab-07 §6.5 train-ai=y allows", robots: robots("Content-Usage: train-ai=y\n"), want: Allow},
		{name: "vocab-07 §6.5 train-ai=n in a header refuses train-ai", header: []string{cu, "train-ai=n"},
			want: UsageDenied, why: "Content-Usage: train-ai=n refuses the purpose train-ai"},
		{name: "vocab-07 §6.5.2 parameters are ignored (robots.txt)", robots: robots(`Content-Usage: /page train-ai=n;note="why"` + "\n"),
			want: UsageDenied, why: "train-ai=n (line 3)"},
		{name: "vocab-07 §6.5.2 parameters are ignored (header)", header: []string{cu, `train-ai=n;note="why"`},
			want: UsageDenied, why: "(train-ai=n)"},
		{name: "vocab-07 §6.5.2 the parameters of an earlier value do not apply", header: []string{cu, "train-ai;allow=n, train-ai=y"}, want: Allow},
		{name: "vocab-07 §6.5.1 the last value of a key applies (y last)", robots: robots("Content-Usage: train-ai=n, train-ai=y\n"), want: Allow},
		{name: "vocab-07 §6.5.1 the last value of a key applies (n last)", robots: robots("Content-Usage: train-ai=y, train-ai=n\n"),
			want: UsageDenied, why: "train-ai=n"},
		{name: "vocab-07 §6.5.1 an upper-case key fails the parse: no preference", robots: robots("Content-Usage: Train-AI=n\n"), want: Allow},
		{name: "vocab-07 §6.5 a String is not the Token n: unknown", robots: robots(`Content-Usage: train-ai="n"` + "\n"), want: Allow},
		{name: "vocab-07 §6.2 tokens are case-sensitive: N is unknown", header: []string{cu, "train-ai=N"}, want: Allow},
		{name: "vocab-07 §6.5.1 a Boolean is unknown", header: []string{cu, "train-ai, search=n"}, want: Allow},
		{name: "vocab-07 §6.5.1 a statement that does not parse states nothing, even its n", header: []string{cu, "train-ai=n, Search=n"}, want: Allow},
		{name: "vocab-07 §6.4 unknown labels are ignored", header: []string{cu, "foo=n, train-ai=y"}, want: Allow},
		{name: "vocab-07 §6.1 search=n refuses search", header: []string{cu, "search=n"}, purposes: []string{"search"},
			want: UsageDenied, why: "search=n"},
		{name: "vocab-07 §6.1 search=n leaves train-ai alone", header: []string{cu, "search=n"}, want: Allow},
		{name: "vocab-07 §4.2 train-ai=n leaves search alone", header: []string{cu, "train-ai=n"}, purposes: []string{"search"}, want: Allow},
		{name: "robotsgate: a purpose of the client's own is refused by its label", header: []string{cu, "archive=n"}, purposes: []string{"archive"},
			want: UsageDenied, why: "archive=n"},
		{name: "vocab-02 train-genai=n, an earlier draft's label, is read as an alias of train-ai", header: []string{cu, "train-genai=n"},
			want: UsageDenied, why: "train-genai=n"},
		{name: "vocab-03 bots=n, an earlier draft's root category, refuses every purpose", header: []string{cu, "bots=n, search=y"},
			purposes: []string{"search"}, want: UsageDenied, why: "bots=n"},

		// Several statements (vocab-07 §5.1).
		{name: "vocab-07 §5.1 a header n wins over a robots.txt y", robots: robots("Content-Usage: train-ai=y\n"), header: []string{cu, "train-ai=n"},
			want: UsageDenied, why: "train-ai=n"},
		{name: "vocab-07 §5.1 a header y does not lift a robots.txt n", robots: robots("Content-Usage: train-ai=n\n"), header: []string{cu, "train-ai=y"},
			want: UsageDenied, why: "train-ai=n (line 3)"},
		{name: "attach-05 §2 + RFC 9651 §4.2 a field's lines are one dictionary: the last value wins", header: []string{cu, "train-ai=n", cu, "train-ai=y"}, want: Allow},

		// The robots.txt rule (attach-05 §3).
		{name: "attach-05 §3.1 the longest matching path applies", robots: robots("Content-Usage: train-ai=n\nContent-Usage: /ai-ok/ train-ai=y\n"),
			target: "/ai-ok/test", want: Allow},
		{name: "attach-05 §3.1 a shorter path applies elsewhere", robots: robots("Content-Usage: train-ai=n\nContent-Usage: /ai-ok/ train-ai=y\n"),
			target: "/test", want: UsageDenied, why: "train-ai=n (line 3)"},
		{name: "attach-05 §3.1 rules with identical paths apply separately: any n wins", robots: robots("Content-Usage: /x/ train-ai=y\nContent-Usage: /x/ train-ai=n\n"),
			target: "/x/1", want: UsageDenied, why: "train-ai=n (line 4)"},
		{name: "attach-05 §3.1 only the group of the agent applies", robots: "User-agent: ExampleBot\nAllow: /\nContent-Usage: train-ai=y\n\nUser-agent: *\nContent-Usage: train-ai=n\n",
			want: Allow},
		{name: "attach-05 §3.1 a disallowed path has no preferences: robots.txt refuses first", robots: "User-agent: *\nDisallow: /never/\nContent-Usage: train-ai=y\n",
			target: "/never/test", want: Disallow},
		{name: "attach-05 §3.2 the value ends at #", robots: robots("Content-Usage: train-ai=n # no training\n"), want: UsageDenied, why: "train-ai=n (line 3)"},
		{name: "attach-05 §3.2 a value not starting with / has no path", robots: robots("Content-Usage: train-ai=n\n"), target: "/deep/er/page",
			want: UsageDenied, why: "train-ai=n"},
		{name: "robotsgate, more conservative than attach-05 §3.2: a value starting with * is a path pattern", robots: robots("Content-Usage: *.pdf train-ai=n\n"),
			target: "/a.pdf", want: UsageDenied, why: "train-ai=n"},
	})
}
