package policy

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/robotsgate/robotsgate/audit"
	"github.com/robotsgate/robotsgate/htmlmeta"
	"github.com/robotsgate/robotsgate/robots/resolver"
)

func header(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return h
}

// judged is what production makes of an origin's response, as the relay,
// /explain and check do: the decision on a request robots.txt allowed
// (judged as agent, for an enforcing client with purposes, usage.scan_html
// on), its ResponseJudge's JudgeResponse on the header fields h and, when
// metas is not nil, an HTML head with those tags, applied to the decision
// (ApplyResponse). The conformance tables run the same path from
// Engine.Decide on, asking for the verdict; the tables here look closer:
// every signal listed, and the words of a refusal.
func judged(t testing.TB, h http.Header, metas []htmlmeta.Meta, agent string, purposes []string) (ResponseJudgement, Decision) {
	t.Helper()
	d := Decision{Verdict: Allow, Robots: &resolver.Result{Status: resolver.OK}, ScanHTML: true,
		Request: Request{UserAgent: agent, Client: Client{Mode: Enforce, Purposes: purposes}}}
	var head func() Head
	if metas != nil {
		head = func() Head { return Head{Head: htmlmeta.Head{Metas: metas, Complete: true}} }
	}
	j, err := d.ResponseJudge().JudgeResponse(context.Background(), h, head)
	if err != nil {
		t.Fatal(err)
	}
	d.ApplyResponse(j, http.StatusOK)
	if refused := d.Verdict == UsageDenied && d.Response != nil; refused != j.Refused || !refused && d.Verdict != Allow {
		t.Fatalf("judgement refused %v, decision %v (%+v)", j.Refused, d.Verdict, d.Response)
	}
	return j, d
}

// refusal is the signal that refused a judged request, and whether one did.
func refusal(d Decision) (ResponseSignal, bool) {
	if d.Response == nil {
		return ResponseSignal{}, false
	}
	return d.Response.Signal, true
}

// refusalText is what the refusal says (Explain), "" when none refused.
func refusalText(d Decision) string {
	s, ok := refusal(d)
	if !ok {
		return ""
	}
	return s.Explain()
}

// meta is an HTML head's meta tags: name, content, ...
func meta(kv ...string) []htmlmeta.Meta {
	out := []htmlmeta.Meta{}
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, htmlmeta.Meta{Name: kv[i], Content: kv[i+1]})
	}
	return out
}

// The header fields of a response refuse the purposes they concern, the
// first that refuses naming itself (tdm-reservation, then Content-Usage,
// then X-Robots-Tag, each field line in order).
func TestResponseHeaderFieldsRefuse(t *testing.T) {
	const ua = "Mozilla/5.0 (compatible; FooBot/2.1)"
	train := []string{"train-ai"}
	tests := []struct {
		name     string
		h        http.Header
		agent    string
		purposes []string
		want     string // ResponseSignal.Explain(), "" for none
	}{
		{"no purposes, every signal", header("Tdm-Reservation", "1", "Content-Usage", "train-ai=n", "X-Robots-Tag", "noai"), ua, nil, ""},
		{"no signal", header("Content-Type", "text/html"), ua, train, ""},

		{"tdm-reservation", header("tdm-reservation", "1", "tdm-policy", "https://example.org/policy.json"), ua, train,
			"tdm-reservation: 1 refuses the purpose train-ai (tdm-policy https://example.org/policy.json)"},
		{"tdm-reservation 0", header("Tdm-Reservation", "0"), ua, train, ""},
		{"tdm-reservation, tdm purpose", header("Tdm-Reservation", " 1 "), ua, []string{"tdm"}, "tdm-reservation: 1 refuses the purpose tdm"},
		{"tdm-reservation, ai-input purpose", header("Tdm-Reservation", "1"), ua, []string{"ai-input"}, ""},
		{"tdm-reservation, search purpose", header("Tdm-Reservation", "1"), ua, []string{"search"}, ""},
		{"tdm-reservation, second of several purposes", header("Tdm-Reservation", "1"), ua, []string{"search", "train-genai"},
			"tdm-reservation: 1 refuses the purpose train-genai"},

		{"content-usage", header("Content-Usage", "train-ai=n"), ua, train, "Content-Usage: train-ai=n refuses the purpose train-ai"},
		{"content-usage list", header("Content-Usage", "search=y, train-ai=n"), ua, train,
			"Content-Usage: search=y, train-ai=n (train-ai=n) refuses the purpose train-ai"},
		{"content-usage second line: the lines are one dictionary", header("Content-Usage", "search=y", "Content-Usage", "train-ai=n"), ua, train,
			"Content-Usage: search=y, train-ai=n (train-ai=n) refuses the purpose train-ai"},
		{"content-usage y", header("Content-Usage", "train-ai=y"), ua, train, ""},
		{"content-usage other category", header("Content-Usage", "search=n"), ua, train, ""},
		{"content-usage search", header("Content-Usage", "search=n"), ua, []string{"search"}, "Content-Usage: search=n refuses the purpose search"},
		{"content-usage train-ai covers train-genai", header("Content-Usage", "train-ai=n"), ua, []string{"train-genai"},
			"Content-Usage: train-ai=n refuses the purpose train-genai"},
		{"content-usage vocabulary", header("Content-Usage", "ai-use=n"), ua, []string{"ai-input"}, "Content-Usage: ai-use=n refuses the purpose ai-input"},

		{"noai", header("X-Robots-Tag", "noai"), ua, train, "X-Robots-Tag: noai refuses the purpose train-ai"},
		{"NOAI in a list", header("X-Robots-Tag", "noindex, NOAI"), ua, train, "X-Robots-Tag: noindex, NOAI (noai) refuses the purpose train-ai"},
		{"noai on a second line", header("X-Robots-Tag", "noindex", "X-Robots-Tag", "noai"), ua, train, "X-Robots-Tag: noai refuses the purpose train-ai"},
		{"noai, ai-input purpose", header("X-Robots-Tag", "noai"), ua, []string{"ai-input", "search"}, ""},
		{"noai, tdm purpose", header("X-Robots-Tag", "noai"), ua, []string{"tdm"}, "X-Robots-Tag: noai refuses the purpose tdm"},
		{"noimageai on a page", header("X-Robots-Tag", "noimageai", "Content-Type", "text/html"), ua, train, ""},
		{"noimageai on an image", header("X-Robots-Tag", "noimageai", "Content-Type", "Image/PNG"), ua, train,
			"X-Robots-Tag: noimageai refuses the purpose train-ai"},
		{"noai on an image", header("X-Robots-Tag", "noai", "Content-Type", "image/png"), ua, train, "X-Robots-Tag: noai refuses the purpose train-ai"},
		{"scoped to the agent", header("X-Robots-Tag", "FooBot: noai"), ua, train, "X-Robots-Tag: FooBot: noai (noai) refuses the purpose train-ai"},
		{"scoped, lower case", header("X-Robots-Tag", "foobot: noindex, noai"), ua, train,
			"X-Robots-Tag: foobot: noindex, noai (noai) refuses the purpose train-ai"},
		{"scoped to the fixed agent", header("X-Robots-Tag", "ResearchBot: noai"), "ResearchBot", train,
			"X-Robots-Tag: ResearchBot: noai (noai) refuses the purpose train-ai"},
		{"scoped to another agent", header("X-Robots-Tag", "OtherBot: noai"), ua, train, ""},
		{"scoped to a longer token", header("X-Robots-Tag", "FooBotter: noai"), ua, train, ""},
		{"another agent's scope ends at the next", header("X-Robots-Tag", "OtherBot: noai, FooBot: noindex"), ua, train, ""},
		{"the agent's scope after another's", header("X-Robots-Tag", "OtherBot: noindex, FooBot: noai"), ua, train,
			"X-Robots-Tag: OtherBot: noindex, FooBot: noai (noai) refuses the purpose train-ai"},
		{"scope on its own line", header("X-Robots-Tag", "OtherBot: noindex", "X-Robots-Tag", "noai"), ua, train,
			"X-Robots-Tag: noai refuses the purpose train-ai"},
		{"unavailable_after is no scope", header("X-Robots-Tag", "unavailable_after: 25 Jun 2030 15:00:00 PST, noai"), ua, train,
			"X-Robots-Tag: unavailable_after: 25 Jun 2030 15:00:00 PST, noai (noai) refuses the purpose train-ai"},
		{"max-snippet is no scope", header("X-Robots-Tag", "max-snippet: 20, noai"), ua, train,
			"X-Robots-Tag: max-snippet: 20, noai (noai) refuses the purpose train-ai"},
		{"noai as a word of another directive", header("X-Robots-Tag", "noaifoo, no-ai, noindex"), ua, train, ""},
		{"no agent", header("X-Robots-Tag", "FooBot: noai"), "", train, ""},

		{"tdm-reservation first", header("X-Robots-Tag", "noai", "Content-Usage", "train-ai=n", "Tdm-Reservation", "1"), ua, train,
			"tdm-reservation: 1 refuses the purpose train-ai"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, d := judged(t, tt.h, nil, tt.agent, tt.purposes)
			if got := refusalText(d); got != tt.want {
				t.Errorf("%v judged for %q, %q: %q, want %q", tt.h, tt.agent, tt.purposes, got, tt.want)
			}
		})
	}
}

func TestResponseRefusalBoundsTheQuotedValue(t *testing.T) {
	long := strings.Repeat("noindex, ", 1000) + "noai"
	_, d := judged(t, header("X-Robots-Tag", long), nil, "", []string{"train-ai"})
	s, ok := refusal(d)
	// 256 bytes and an ellipsis: the bound docs/decisions.md gives.
	if !ok || len(s.Value) > 256+len("…") || s.Directive != "noai" {
		t.Errorf("refusal %+v, %v; want noai with a value of at most 256 bytes", s, ok)
	}
}

// TestQuotedValuesNeverSplitAUTF8Sequence puts a multi-byte character
// across the 256-byte cut of every field that quotes what an origin wrote,
// at each offset where a byte cut would split it: the field must stay
// valid UTF-8 (it goes into JSON and headers) and be a prefix of the value
// followed by "…".
func TestQuotedValuesNeverSplitAUTF8Sequence(t *testing.T) {
	train := []string{"train-ai"}
	refused := func(h http.Header, metas []htmlmeta.Meta) ResponseSignal {
		_, d := judged(t, h, metas, "", train)
		s, _ := refusal(d)
		return s
	}
	signals := func(h http.Header, metas []htmlmeta.Meta) []audit.UsageSignal {
		j, _ := judged(t, h, metas, "", train)
		return j.Signals
	}
	signalField := func(signals []audit.UsageSignal, kind string, policy bool) string {
		for _, s := range signals {
			if s.Signal == kind {
				if policy {
					return s.Policy
				}
				return s.Value
			}
		}
		return "(no " + kind + " signal)"
	}
	tests := []struct {
		name   string
		prefix string                   // the value's start; padded to the cut
		field  func(long string) string // the quoted field for the value long
	}{
		{"X-Robots-Tag refusal value", "noai, ", func(v string) string {
			return refused(header("X-Robots-Tag", v), nil).Value
		}},
		{"tdm-reservation refusal policy", "https://example.org/", func(v string) string {
			return refused(header("Tdm-Reservation", "1", "Tdm-Policy", v), nil).Policy
		}},
		{"meta robots refusal value", "noai ", func(v string) string {
			return refused(nil, meta("robots", v)).Value
		}},
		{"meta tdm-reservation refusal policy", "https://example.org/", func(v string) string {
			return refused(nil, meta("tdm-policy", v, "tdm-reservation", "1")).Policy
		}},
		{"header tdm-reservation signal value", "0 ", func(v string) string {
			return signalField(signals(header("Tdm-Reservation", v), nil), audit.SignalHeaderTDMReservation, false)
		}},
		{"header tdm-policy signal policy", "https://example.org/", func(v string) string {
			return signalField(signals(header("Tdm-Reservation", "1", "Tdm-Policy", v), nil), audit.SignalHeaderTDMReservation, true)
		}},
		{"header Content-Usage signal value", "train-ai=n, x", func(v string) string {
			return signalField(signals(header("Content-Usage", v), nil), audit.SignalHeaderContentUsage, false)
		}},
		{"header X-Robots-Tag signal value", "noai, ", func(v string) string {
			return signalField(signals(header("X-Robots-Tag", v), nil), audit.SignalXRobotsTag, false)
		}},
		{"meta tdm-reservation signal value", "", func(v string) string {
			return signalField(signals(nil, meta("tdm-reservation", v)), audit.SignalMetaTDMReservation, false)
		}},
		{"meta tdm-policy signal policy", "https://example.org/", func(v string) string {
			return signalField(signals(nil, meta("tdm-policy", v, "tdm-reservation", "1")), audit.SignalMetaTDMReservation, true)
		}},
		{"meta robots signal value", "noai ", func(v string) string {
			return signalField(signals(nil, meta("robots", v)), audit.SignalMetaRobots, false)
		}},
	}
	for _, tt := range tests {
		for _, char := range []string{"é", "€", "𝄞"} {
			// Every start of char that puts byte 256 inside it.
			for start := 256 - len(char) + 1; start < 256; start++ {
				long := tt.prefix + strings.Repeat("a", start-len(tt.prefix)) + strings.Repeat(char, 10)
				t.Run(fmt.Sprintf("%s/%q at byte %d", tt.name, char, start), func(t *testing.T) {
					got := tt.field(long)
					if !utf8.ValidString(got) {
						t.Fatalf("not valid UTF-8: %q", got)
					}
					kept, cut := strings.CutSuffix(got, "…")
					if !cut || !strings.HasPrefix(long, kept) || len(kept) > 256 || len(kept) < 256-len(char) {
						t.Fatalf("got %q (%d bytes), want the first 256 bytes of the value or less, up to a whole character, and \"…\"", got, len(got))
					}
				})
			}
		}
	}
}

// The meta tags of an HTML head refuse the training purposes (usage.scan_html).
func TestResponseMetaTagsRefuse(t *testing.T) {
	const ua = "Mozilla/5.0 (compatible; FooBot/2.1)"
	train := []string{"train-ai"}
	m := meta
	tests := []struct {
		name     string
		metas    []htmlmeta.Meta
		purposes []string
		want     string
	}{
		{"none", m("description", "noai", "viewport", "width=device-width"), train, ""},
		{"robots noai", m("robots", "noai"), train, `<meta name="robots" content="noai"> refuses the purpose train-ai`},
		{"robots list", m("robots", "noindex,NoAI"), train, `<meta name="robots" content="noindex,NoAI"> (noai) refuses the purpose train-ai`},
		{"robots noimageai", m("robots", "noimageai"), train, ""},
		{"tdm-reservation", m("tdm-policy", "https://example.org/p", "tdm-reservation", "1"), train,
			`<meta name="tdm-reservation" content="1"> refuses the purpose train-ai (tdm-policy https://example.org/p)`},
		{"tdm-reservation 0", m("tdm-reservation", "0"), train, ""},
		{"the agent's tag", m("foobot", "noai"), train, `<meta name="foobot" content="noai"> refuses the purpose train-ai`},
		{"another agent's tag", m("otherbot", "noai"), train, ""},
		{"search purpose", m("robots", "noai", "tdm-reservation", "1"), []string{"search"}, ""},
		{"no purposes", m("robots", "noai"), nil, ""},
		{"tdm purpose", m("robots", "noai"), []string{"search", "tdm"}, `<meta name="robots" content="noai"> refuses the purpose tdm`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, d := judged(t, header("Content-Type", "text/html"), tt.metas, ua, tt.purposes)
			if got := refusalText(d); got != tt.want {
				t.Errorf("%+v judged for %q: %q, want %q", tt.metas, tt.purposes, got, tt.want)
			}
		})
	}
	for _, p := range []string{"train-ai", "train-genai", "ai-train", "tdm"} {
		if !MetaConcerns([]string{"search", p}) {
			t.Errorf("MetaConcerns([search %s]) = false", p)
		}
	}
	if MetaConcerns([]string{"search", "ai-input", "ai-use"}) || MetaConcerns(nil) {
		t.Error("MetaConcerns is true for purposes no meta tag concerns")
	}
}

func TestResponsePurposes(t *testing.T) {
	purposes := []string{"train-ai"}
	robotsRes := &resolver.Result{}
	for _, tc := range []struct {
		name string
		d    Decision
		want bool
	}{
		{"allowed after robots.txt", Decision{Robots: robotsRes, Request: Request{Client: Client{Purposes: purposes}}}, true},
		{"robots.txt not consulted (bypass, ignored site, robots.txt itself)", Decision{Request: Request{Client: Client{Purposes: purposes}}}, false},
		{"refused", Decision{Verdict: Disallow, Robots: robotsRes, Request: Request{Client: Client{Purposes: purposes}}}, false},
		{"no purposes", Decision{Robots: robotsRes}, false},
	} {
		if got := tc.d.ResponsePurposes(); (len(got) > 0) != tc.want {
			t.Errorf("%s: ResponsePurposes() = %q", tc.name, got)
		}
	}
}
