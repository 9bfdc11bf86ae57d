package policy

import (
	"slices"
	"strings"
	"testing"

	"github.com/robotsgate/robotsgate/audit"
	"github.com/robotsgate/robotsgate/htmlmeta"
	"github.com/robotsgate/robotsgate/robots"
	"github.com/robotsgate/robotsgate/robots/resolver"
)

// everyPurpose is a client with every known purpose and one of its own, so
// that a signal's Refuses shows all it refuses and, by omission, what not.
var everyPurpose = []string{"archive"}

func TestContentSignalAndRobotsTagHeadersRefuseTheirPurposes(t *testing.T) {
	const ua = "Mozilla/5.0 (compatible; FooBot/2.1)"
	const training = "[train-ai train-genai ai-train tdm]"
	tests := []struct {
		name string
		h    []string
		want string // signalsText of the judgement's signals, for everyPurpose
	}{
		{"Content-Signal, Cloudflare's example", []string{"Content-Signal", "search=yes, ai-train=no, ai-input=no"},
			"content-signal-header search=yes, ai-train=no, ai-input=no [train-ai train-genai ai-train ai-input ai-use]"},
		{"Content-Signal search=no", []string{"Content-Signal", "search=no"}, "content-signal-header search=no [search]"},
		{"Content-Signal, every consent", []string{"Content-Signal", "search=yes, ai-train=yes, ai-input=yes"},
			"content-signal-header search=yes, ai-train=yes, ai-input=yes []"},
		{"Content-Signal use=no refuses every purpose", []string{"Content-Signal", "use=no"},
			"content-signal-header use=no [train-ai train-genai ai-train tdm search ai-input ai-use archive]"},
		{"Content-Signal use=yes", []string{"Content-Signal", "use=yes"}, "content-signal-header use=yes []"},
		{"Content-Signal, aipref values are not its values", []string{"Content-Signal", "ai-train=n"}, "content-signal-header ai-train=n []"},
		{"Content-Signal, two lines are one dictionary (RFC 9651 §4.2)", []string{"Content-Signal", "search=no", "Content-Signal", "ai-train=no"},
			"content-signal-header search=no, ai-train=no [search train-ai train-genai ai-train]"},

		{"Robots-Tag for every agent", []string{"Robots-Tag", "*;noai, ExampleBot;noindex"}, "robots-tag *;noai, ExampleBot;noindex " + training},
		{"Robots-Tag noml", []string{"Robots-Tag", "*;noml"}, "robots-tag *;noml " + training},
		{"Robots-Tag for the agent", []string{"Robots-Tag", "FooBot;noai"}, "robots-tag FooBot;noai " + training},
		{"Robots-Tag for the agent, lower case", []string{"Robots-Tag", "foobot;noindex;noml"}, "robots-tag foobot;noindex;noml " + training},
		{"Robots-Tag for another agent", []string{"Robots-Tag", "BarBot;noai, *;noindex"}, "robots-tag BarBot;noai, *;noindex []"},
		{"Robots-Tag, a longer token", []string{"Robots-Tag", "FooBotter;noai"}, "robots-tag FooBotter;noai []"},
		{"Robots-Tag, noai false", []string{"Robots-Tag", "*;noai=?0"}, ""},
		{"Robots-Tag without AI rules", []string{"Robots-Tag", "*;noindex;nosnippet"}, ""},
		{"Robots-Tag, two lines are one list", []string{"Robots-Tag", "*;noindex", "Robots-Tag", "FooBot;noai"},
			"robots-tag *;noindex, FooBot;noai " + training},
		{"Robots-Tag noimageai on a page", []string{"Robots-Tag", "*;noimageai", "Content-Type", "text/html"}, "robots-tag *;noimageai []"},
		{"Robots-Tag noimageai on an image", []string{"Robots-Tag", "*;noimageai", "Content-Type", "image/webp"},
			"robots-tag *;noimageai " + training},

		{"unparsable Robots-Tag naming noai refuses", []string{"Robots-Tag", "*;NoAI"}, "robots-tag *;NoAI " + training},
		{"unparsable Robots-Tag naming noml for another agent refuses", []string{"Robots-Tag", "BarBot: noml"}, "robots-tag BarBot: noml " + training},
		{"unparsable Robots-Tag without noai is listed, refusing nothing", []string{"Robots-Tag", "*;noindex, ExampleBot;"},
			"robots-tag *;noindex, ExampleBot; []"},
		{"unparsable Robots-Tag, noai inside a word", []string{"Robots-Tag", "*;noaiX;"}, "robots-tag *;noaiX; []"},

		{"X-Robots-Tag noml", []string{"X-Robots-Tag", "noml"}, "x-robots-tag noml " + training},
		{"X-Robots-Tag noml for the agent", []string{"X-Robots-Tag", "FooBot: noindex, noml"}, "x-robots-tag FooBot: noindex, noml " + training},
		{"X-Robots-Tag noml for another agent", []string{"X-Robots-Tag", "BarBot: noml"}, "x-robots-tag BarBot: noml []"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := signalsText(listed(t, header(tt.h...), nil, ua, everyPurpose)); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestNewHeaderSignalsNameTheDirectiveThatRefused(t *testing.T) {
	// The kind is also what the metric of usage refusals counts
	// (Decision.RefusedBy).
	const ua = "FooBot/1.0"
	tests := []struct {
		name     string
		h        []string
		purposes []string
		want     string // Explain and Kind
	}{
		{"Content-Signal ai-train=no", []string{"Content-Signal", "search=yes, ai-train=no"}, []string{"search", "train-ai"},
			"Content-Signal: search=yes, ai-train=no (ai-train=no) refuses the purpose train-ai / content-signal-header"},
		{"Content-Signal use=no", []string{"Content-Signal", "use=no"}, []string{"search"},
			"Content-Signal: use=no refuses the purpose search / content-signal-header"},
		{"Robots-Tag noai", []string{"Robots-Tag", "*;noai"}, []string{"train-ai"}, "Robots-Tag: *;noai (noai) refuses the purpose train-ai / robots-tag"},
		{"Robots-Tag noml", []string{"Robots-Tag", "FooBot;noml"}, []string{"tdm"}, "Robots-Tag: FooBot;noml (noml) refuses the purpose tdm / robots-tag"},
		{"unparsable Robots-Tag", []string{"Robots-Tag", "*;NOML"}, []string{"ai-train"}, "Robots-Tag: *;NOML (noml) refuses the purpose ai-train / robots-tag"},
		{"X-Robots-Tag noml", []string{"X-Robots-Tag", "noindex, noml"}, []string{"train-ai"},
			"X-Robots-Tag: noindex, noml (noml) refuses the purpose train-ai / x-robots-tag"},
		{"Robots-Tag noai, search purpose", []string{"Robots-Tag", "*;noai"}, []string{"search", "ai-input"}, ""},
		{"Content-Signal ai-train=no, ai-input purpose", []string{"Content-Signal", "ai-train=no"}, []string{"ai-input"}, ""},
		{"X-Robots-Tag before Robots-Tag", []string{"Robots-Tag", "*;noml", "X-Robots-Tag", "noai"}, []string{"train-ai"},
			"X-Robots-Tag: noai refuses the purpose train-ai / x-robots-tag"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, d := judged(t, header(tt.h...), nil, ua, tt.purposes)
			got := ""
			if s, ok := refusal(d); ok {
				got = s.Explain() + " / " + d.RefusedBy()
			}
			if got != tt.want {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestNomlInMetaTagsRefusesLikeNoai(t *testing.T) {
	metas := []htmlmeta.Meta{{Name: "robots", Content: "noindex, noml"}, {Name: "barbot", Content: "noml"}, {Name: "foobot", Content: "NOML"}}
	want := "meta-robots noindex, noml [train-ai train-genai ai-train tdm]; meta-robots NOML [train-ai train-genai ai-train tdm]"
	if got := signalsText(listed(t, nil, metas, "FooBot", []string{"train-ai"})); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	_, d := judged(t, nil, metas[1:2], "BarBot", []string{"train-ai"})
	if s, ok := refusal(d); !ok || s.Explain() != `<meta name="barbot" content="noml"> refuses the purpose train-ai` || s.Directive != "noml" {
		t.Errorf("refusal %q (directive %q), %v", s.Explain(), s.Directive, ok)
	}
	if _, d := judged(t, nil, metas, "FooBot", []string{"search", "ai-input"}); d.Verdict != Allow {
		t.Errorf("noml refused a purpose other than training: %v", refusalText(d))
	}
}

// TestAIPrefAliases: a Content-Usage label of an earlier aipref draft
// refuses what the current draft's label for the same use refuses, in the
// robots.txt line and the header alike; the labels of the category all
// others belonged to refuse every purpose.
func TestAIPrefAliases(t *testing.T) {
	const (
		train  = "[train-ai train-genai ai-train]"
		use    = "[ai-input ai-use]"
		search = "[search]"
		every  = "[train-ai train-genai ai-train tdm search ai-input ai-use archive]"
	)
	for _, tt := range []struct{ label, want string }{
		{"train-ai", train}, {"search", search}, // vocab-07 (2026-08-19)
		{"ai-use", use},                                         // -02
		{"train-genai", train}, {"genai", train}, {"ai", train}, // earlier names of AI training
		{"inference", use},                              // -01
		{"ai-output", "[search ai-input ai-use]"},       // -04: search was part of it
		{"bots", every}, {"all", every}, {"tdm", every}, // the category every other one belonged to
		{"archive", "[archive]"}, // the client's own purpose, by its name
		{"unknown-label", "[]"},
	} {
		t.Run(tt.label, func(t *testing.T) {
			v := tt.label + "=n"
			if got := signalsText(listed(t, header("Content-Usage", v), nil, "", everyPurpose)); got != "content-usage-header "+v+" "+tt.want {
				t.Errorf("header: %s, want %s", got, tt.want)
			}
			f := robots.Parse([]byte("User-agent: *\nContent-Usage: " + v + "\nAllow: /\n"))
			d := Decision{Request: Request{Target: "/p", Client: Client{Purposes: everyPurpose}}, Rule: f.GroupForUserAgent("bot").Decide("/p")}
			d.Robots = &resolver.Result{File: f, Status: resolver.OK}
			if got := signalsText(d.UsageSignals()); got != "robots-content-usage "+v+" "+tt.want {
				t.Errorf("robots.txt: %s, want %s", got, tt.want)
			}
			for _, p := range KnownPurposes {
				_, _, refused := usageRefusal(f, f.GroupForUserAgent("bot"), "/p", []string{p})
				if refused != slices.Contains(strings.Fields(strings.Trim(tt.want, "[]")), p) {
					t.Errorf("usageRefusal for %s: %v, the signal lists %s", p, refused, tt.want)
				}
			}
			if y := signalsText(listed(t, header("Content-Usage", tt.label+"=y"), nil, "", everyPurpose)); !strings.HasSuffix(y, " []") {
				t.Errorf("%s=y refuses: %s", tt.label, y)
			}
		})
	}
}

// TestContentSignalUseKeyInRobotsTxt: the robots.txt line reads use= as
// the header does.
func TestContentSignalUseKeyInRobotsTxt(t *testing.T) {
	f := robots.Parse([]byte("User-agent: *\nAllow: /\nContent-Signal: use=no\n"))
	for _, p := range []string{"train-ai", "search", "ai-input", "tdm", "archive"} {
		pref, fromSignal, refused := usageRefusal(f, f.GroupForUserAgent("bot"), "/p", []string{p})
		if !refused || !fromSignal || pref.Name != "use" {
			t.Errorf("%s: refused %v by %+v (signal %v), want use=no", p, refused, pref, fromSignal)
		}
	}
}

func TestNewSignalKindsAreMetricLabels(t *testing.T) {
	for _, k := range []string{audit.SignalHeaderContentSignal, audit.SignalRobotsTag} {
		found := false
		for _, l := range audit.SignalKinds {
			found = found || l == k
		}
		if !found {
			t.Errorf("%s is not in audit.SignalKinds", k)
		}
	}
	if audit.SignalHeaderContentSignal != "content-signal-header" || audit.SignalRobotsTag != "robots-tag" {
		t.Errorf("kinds %q %q: the documented label values are content-signal-header and robots-tag",
			audit.SignalHeaderContentSignal, audit.SignalRobotsTag)
	}
}
